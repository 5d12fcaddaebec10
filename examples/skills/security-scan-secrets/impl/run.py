"""security.scan_secrets: offline secret scanning with a fixed rule set and a deterministic report."""

import fnmatch
import hashlib
import json
import os
import re
import sys

RULES_VERSION = "1"
ALLOW_MARK = "skillctl:allow-secret"
PLACEHOLDER = re.compile(
    r"^(?:x+|\*+|changeme|change_me|password|secret|example|dummy|redacted|todo|<.*>|\$\{.*\}"
    r"|\{\{.*\}\}|%\(.*\)s)$",
    re.IGNORECASE,
)
# (id, severity, pattern, group holding the secret)
RULES = [
    ("aws.access_key_id", "high", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
    ("aws.secret_access_key", "high", r"(?i)aws_?secret_?access_?key\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})\b", 1),
    ("github.token", "high", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", 0),
    ("github.fine_grained_pat", "high", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", 0),
    ("slack.token", "high", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b", 0),
    ("stripe.live_key", "high", r"\b[sr]k_live_[A-Za-z0-9]{16,}\b", 0),
    ("google.api_key", "high", r"\bAIza[0-9A-Za-z_-]{35}\b", 0),
    ("private_key.pem", "high", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", 0),
    ("jwt", "medium", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
    (
        "generic.assignment",
        "medium",
        r"(?i)(?:password|passwd|pwd|secret|api_?key|access_?token|auth_?token)\b[\"']?\s*[:=]\s*[\"']([^\"'\s]{8,})[\"']",
        1,
    ),
]


def log(level, event, **fields):
    sys.stderr.write(json.dumps({"level": level, "event": event, **fields}, sort_keys=True) + "\n")


def fail(message):
    log("error", "invalid_request", message=message)
    sys.exit(2)


def inside(workspace, relative):
    target = os.path.realpath(os.path.join(workspace, relative))
    if target != workspace and not target.startswith(workspace + os.sep):
        fail(f"path '{relative}' leaves the workspace")
    return target


def excluded(rel, patterns):
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def files(workspace, paths, patterns):
    seen = set()
    for relative in paths:
        root = inside(workspace, relative)
        if os.path.isfile(root):
            candidates = [root]
        elif os.path.isdir(root):
            candidates = []
            for folder, dirs, names in os.walk(root):
                dirs[:] = [d for d in dirs if d != ".git" and not os.path.islink(os.path.join(folder, d))]
                candidates += [os.path.join(folder, n) for n in names]
        else:
            fail(f"'{relative}' does not exist in the workspace")
        for path in candidates:
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, workspace).replace(os.sep, "/")
            if rel not in seen and not excluded(rel, patterns):
                seen.add(rel)
                yield rel, path


def redact(secret):
    return secret[:4] + "*" * min(8, max(4, len(secret) - 4))


def scan(text, rel, rules):
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if ALLOW_MARK in line:
            continue
        for rule_id, severity, pattern, group in rules:
            for match in pattern.finditer(line):
                secret = match.group(group)
                if group and PLACEHOLDER.match(secret):
                    continue
                fingerprint = hashlib.sha256(f"{rule_id}\0{rel}\0{secret}".encode()).hexdigest()[:16]
                found.append(
                    {
                        "rule": rule_id,
                        "severity": severity,
                        "path": rel,
                        "line": number,
                        "column": match.start(group) + 1,
                        "redacted": redact(secret),
                        "fingerprint": fingerprint,
                    }
                )
    return found


def main():
    request = json.load(sys.stdin)
    workspace = os.path.realpath(os.environ.get("SKILL_WORKSPACE", "."))
    wanted = request.get("rules")
    unknown = sorted(set(wanted or []) - {r[0] for r in RULES})
    if unknown:
        fail(f"unknown rules: {', '.join(unknown)}")
    rules = [(i, s, re.compile(p), g) for i, s, p, g in RULES if wanted is None or i in wanted]
    limit = request.get("maxFileBytes", 1 << 20)
    scanned = skipped = 0
    findings = []
    for rel, path in sorted(files(workspace, request.get("paths", ["."]), request.get("exclude", []))):
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit or b"\0" in data[:8192]:
            skipped += 1
            continue
        scanned += 1
        findings += scan(data.decode("utf-8", "replace"), rel, rules)
    findings.sort(key=lambda f: (f["path"], f["line"], f["column"], f["rule"]))
    counts = {}
    for f in findings:
        counts[f["rule"]] = counts.get(f["rule"], 0) + 1
    log("info", "scanned", files=scanned, skipped=skipped, findings=len(findings))
    json.dump(
        {
            "rulesVersion": RULES_VERSION,
            "clean": not findings,
            "filesScanned": scanned,
            "filesSkipped": skipped,
            "findings": findings,
            "counts": counts,
        },
        sys.stdout,
        sort_keys=True,
    )


if __name__ == "__main__":
    main()
