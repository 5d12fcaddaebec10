"""``audit-commits``: one skill per commit. A skill package is a folder that holds a skill.yaml."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from agentpack.io.errors import AgentpackError

SEP = "\x1e"


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentpackError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        raise AgentpackError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()}", file=str(repo))
    return done.stdout


def _package_dirs(repo: Path, rev_range: str, log_paths: list[str]) -> set[str]:
    """Every folder that holds (or held, in the range) a skill.yaml."""
    packages = {str(PurePosixPath(p).parent) for p in log_paths if PurePosixPath(p).name == "skill.yaml"}
    tip = rev_range.split("..")[-1] or "HEAD"
    try:
        tree = _git(repo, "ls-tree", "-r", "--name-only", tip)
    except AgentpackError:
        tree = ""
    packages |= {str(PurePosixPath(p).parent) for p in tree.splitlines() if PurePosixPath(p).name == "skill.yaml"}
    # a skill.yaml inside a package (for example a validator's fixture) belongs to that package
    return {p for p in packages if not any(str(parent) in packages for parent in PurePosixPath(p).parents)}


def _package_of(path: str, packages: set[str]) -> str | None:
    for parent in PurePosixPath(path).parents:
        if str(parent) in packages:
            return str(parent)
    return None


def audit(repo: Path, rev_range: str = "HEAD") -> dict[str, Any]:
    out = _git(repo, "log", "--no-renames", "--name-only", f"--format={SEP}%H%x00%s", rev_range, "--")
    commits = []
    for block in out.split(SEP)[1:]:
        head, _, body = block.partition("\n")
        sha, _, subject = head.partition("\x00")
        commits.append((sha, subject, [line for line in body.splitlines() if line.strip()]))
    packages = _package_dirs(repo, rev_range, [p for _, _, paths in commits for p in paths])
    violations = []
    for sha, subject, paths in commits:
        touched = sorted({pkg for p in paths if (pkg := _package_of(p, packages))})
        if len(touched) > 1:
            violations.append({"commit": sha, "subject": subject, "skills": touched})
    return {"range": rev_range, "commits": len(commits), "packages": sorted(packages), "violations": violations}
