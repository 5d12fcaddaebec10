"""Atomic writes and a cross-process lock: an interrupted write leaves the last good state."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .errors import AgentpackError


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, value: Any, *, indent: int | None = 2) -> None:
    text = json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False)
    atomic_write_text(path, text + "\n")


def replace_directory(staged: Path, target: Path, *, backup: Path | None = None) -> None:
    """Swap the fully written directory ``staged`` into place at ``target``.

    The old ``target`` is renamed to ``backup`` (or deleted) only after the new
    one is in place; at every moment one complete directory sits at ``target``
    or at ``backup``, never a half-written one.
    """
    target = Path(target)
    staged = Path(staged)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        os.replace(staged, target)
        _fsync_dir(parent)
        return
    old = backup or parent / f".{target.name}.old-{os.getpid()}-{time.monotonic_ns()}"
    os.replace(target, old)
    try:
        os.replace(staged, target)
    except BaseException:
        os.replace(old, target)
        raise
    _fsync_dir(parent)
    if backup is None:
        shutil.rmtree(old, ignore_errors=True)


class LockedError(AgentpackError):
    """Another process holds the lock."""


@contextmanager
def file_lock(path: str | Path, *, timeout: float = 0.0, what: str = "this resource") -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (``fcntl.flock``), released on exit or process death.

    ``timeout`` 0 fails at once with ``LockedError`` when another process holds it.
    """
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise LockedError(
                        f"{what} is locked by another process", file=str(path),
                        hint="wait for the other run to finish",
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)
