"""workflow.create_revision_snapshot: ai_workflow_revisions/rev_<n>_current, deterministic and gitignored."""

import fnmatch
import hashlib
import json
import os
import re
import shutil
import sys

SNAPSHOTS = "ai_workflow_revisions"
REV_RE = re.compile(r"^rev_([0-9]+)(_current)?$")
GITIGNORE = "# written by workflow.create_revision_snapshot: snapshots stay out of git\n*\n"


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


def listing(root, exclude, skip):
    """Sorted ``(relative path, absolute path)`` of files and symlinks under ``root``."""
    found = []
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if rel_folder == "." else rel_folder + "/"
        keep = []
        for d in dirs:
            full = os.path.join(folder, d)
            if d == ".git" or os.path.realpath(full) in skip or _excluded(prefix + d, exclude):
                continue
            (files if os.path.islink(full) else keep).append(d)
        dirs[:] = keep
        for name in files:
            if not _excluded(prefix + name, exclude):
                found.append((prefix + name, os.path.join(folder, name)))
    return sorted(found, key=lambda item: item[0].encode("utf-8", "surrogateescape"))


def _excluded(rel, patterns):
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def digest(entries):
    tree, total = hashlib.sha256(), 0
    for rel, full in entries:
        if os.path.islink(full):
            kind, data = "symlink", os.readlink(full).encode("utf-8", "surrogateescape")
        else:
            kind = "file"
            with open(full, "rb") as handle:
                data = handle.read()
            total += len(data)
        tree.update(f"{kind} {hashlib.sha256(data).hexdigest()} {rel}\n".encode("utf-8", "surrogateescape"))
    return tree.hexdigest(), total


def copy(entries, dest, epoch):
    for rel, full in entries:
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(full):
            os.symlink(os.readlink(full), target)
            continue
        shutil.copyfile(full, target)
        os.chmod(target, 0o755 if os.access(full, os.X_OK) else 0o644)
        os.utime(target, (epoch, epoch))
    for folder, dirs, _ in os.walk(dest, topdown=False):
        for d in dirs:
            path = os.path.join(folder, d)
            if not os.path.islink(path):
                os.utime(path, (epoch, epoch))


def main():
    request = json.load(sys.stdin)
    workspace = os.path.realpath(os.environ.get("SKILL_WORKSPACE", "."))
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    source = inside(workspace, request.get("source", "."))
    if not os.path.isdir(source):
        fail(f"'{request.get('source', '.')}' is not a folder in the workspace")
    snapshots = os.path.join(workspace, SNAPSHOTS)
    os.makedirs(snapshots, exist_ok=True)
    gitignored = request.get("gitignore", True)
    ignore_file = os.path.join(snapshots, ".gitignore")
    if gitignored and not os.path.exists(ignore_file):
        with open(ignore_file, "w", encoding="utf-8") as handle:
            handle.write(GITIGNORE)
    gitignored = os.path.exists(ignore_file)
    revisions = {}
    for name in os.listdir(snapshots):
        match = REV_RE.match(name)
        if match and os.path.isdir(os.path.join(snapshots, name)):
            revisions[name] = (int(match.group(1)), bool(match.group(2)))
    entries = listing(source, request.get("exclude", []), {os.path.realpath(snapshots)})
    tree, total = digest(entries)
    current = sorted((n, name) for name, (n, is_current) in revisions.items() if is_current)
    if current and request.get("skipIfUnchanged", True):
        number, name = current[-1]
        existing = listing(os.path.join(snapshots, name), [], set())
        if digest(existing)[0] == tree:
            log("info", "unchanged", revision=number)
            json.dump(
                {
                    "created": False,
                    "revision": number,
                    "path": f"{SNAPSHOTS}/{name}",
                    "previous": None,
                    "fileCount": len(entries),
                    "totalBytes": total,
                    "treeSha256": tree,
                    "gitignored": gitignored,
                },
                sys.stdout,
                sort_keys=True,
            )
            return
    number = max((n for n, _ in revisions.values()), default=0) + 1
    staging = os.path.join(snapshots, f".rev_{number}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    copy(entries, staging, epoch)
    previous = None
    for n, name in current:
        os.replace(os.path.join(snapshots, name), os.path.join(snapshots, f"rev_{n}"))
        previous = f"{SNAPSHOTS}/rev_{n}"
    final = f"rev_{number}_current"
    os.replace(staging, os.path.join(snapshots, final))
    log("info", "snapshot_created", revision=number, files=len(entries))
    json.dump(
        {
            "created": True,
            "revision": number,
            "path": f"{SNAPSHOTS}/{final}",
            "previous": previous,
            "fileCount": len(entries),
            "totalBytes": total,
            "treeSha256": tree,
            "gitignored": gitignored,
        },
        sys.stdout,
        sort_keys=True,
    )


if __name__ == "__main__":
    main()
