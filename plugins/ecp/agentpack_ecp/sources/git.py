"""Git sources: files at a concrete commit, read with the git CLI (never the work tree)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .recipes import SourceError, decode_text

GIT_TIMEOUT = 120


def run_git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], input=input, capture_output=True, env=env, timeout=GIT_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise SourceError("the git executable is not installed", hint="install git") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {' '.join(args)} timed out after {GIT_TIMEOUT} s") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"git {' '.join(args[:3])} failed in {repo}: {message[-1] if message else proc.returncode}")
    return proc.stdout


def resolve_commit(repo: Path, ref: str) -> str:
    return run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()


def git_blobs(repo: Path, commit: str) -> list[tuple[str, str, int]]:
    """``(path, blob id, size)`` of every regular file at ``commit`` (symlinks and submodules left out)."""
    out = run_git(repo, "ls-tree", "-r", "-z", "-l", "--full-tree", commit)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, blob, size = meta.split()
        if kind != b"blob" or mode in (b"120000", b"160000"):
            continue
        entries.append((path.decode("utf-8", "surrogateescape"), blob.decode(), int(size)))
    return entries


def read_blobs(repo: Path, blobs: list[str]) -> dict[str, bytes]:
    """Contents of ``blobs`` in one ``git cat-file --batch`` process."""
    if not blobs:
        return {}
    out = run_git(repo, "cat-file", "--batch", input=("\n".join(blobs) + "\n").encode())
    contents: dict[str, bytes] = {}
    pos = 0
    for blob in blobs:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        if len(header) < 3 or header[1] == b"missing":
            raise SourceError(f"git object {blob} is missing from {repo}")
        size = int(header[2])
        contents[blob] = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return contents


def git_show_text(repo: Path, commit: str, path: str) -> str | None:
    """The text of ``path`` at ``commit`` (``None`` when it does not exist there)."""
    try:
        return decode_text(run_git(repo, "show", f"{commit}:{path}"))
    except SourceError:
        return None
