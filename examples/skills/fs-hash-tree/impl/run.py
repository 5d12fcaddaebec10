"""fs.hash_tree: deterministic SHA-256 of a folder. JSON on stdin, JSON on stdout, JSONL logs on stderr."""

import fnmatch
import hashlib
import json
import os
import sys


def log(level, event, **fields):
    sys.stderr.write(json.dumps({"level": level, "event": event, **fields}, sort_keys=True) + "\n")


def fail(message):
    log("error", "invalid_request", message=message)
    sys.exit(2)


def inside(workspace, relative):
    if os.path.isabs(relative) or ".." in relative.split("/"):
        fail(f"path '{relative}' must be relative to the workspace, without '..'")
    target = os.path.realpath(os.path.join(workspace, relative))
    if target != workspace and not target.startswith(workspace + os.sep):
        fail(f"path '{relative}' leaves the workspace")
    return target


def excluded(rel, patterns):
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def entries(root, patterns):
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if rel_folder == "." else rel_folder + "/"
        keep = []
        for d in dirs:
            full = os.path.join(folder, d)
            if excluded(prefix + d, patterns):
                continue
            if os.path.islink(full):
                files.append(d)
            else:
                keep.append(d)
        dirs[:] = keep
        for name in files:
            rel = prefix + name
            if not excluded(rel, patterns):
                yield rel, os.path.join(folder, name)


def main():
    request = json.load(sys.stdin)
    workspace = os.path.realpath(os.environ.get("SKILL_WORKSPACE", "."))
    root = inside(workspace, request["path"])
    if not os.path.isdir(root):
        fail(f"'{request['path']}' is not a folder in the workspace")
    records = []
    for rel, full in entries(root, request.get("exclude", [])):
        if os.path.islink(full):
            target = os.readlink(full).encode("utf-8", "surrogateescape")
            records.append({"path": rel, "type": "symlink", "sha256": hashlib.sha256(target).hexdigest()})
        elif os.path.isfile(full):
            records.append({"path": rel, "type": "file", "size": os.path.getsize(full), "sha256": file_sha256(full)})
    records.sort(key=lambda r: r["path"].encode("utf-8", "surrogateescape"))
    tree = hashlib.sha256()
    for r in records:
        tree.update(f"{r['type']} {r['sha256']} {r['path']}\n".encode("utf-8", "surrogateescape"))
    result = {
        "algorithm": "sha256",
        "path": request["path"],
        "treeSha256": tree.hexdigest(),
        "fileCount": len(records),
        "totalBytes": sum(r.get("size", 0) for r in records),
    }
    if request.get("includeFiles", True):
        result["files"] = records
    log("info", "hashed", files=len(records))
    json.dump(result, sys.stdout, sort_keys=True, separators=(",", ":"))


if __name__ == "__main__":
    main()
