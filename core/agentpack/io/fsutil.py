"""Atomic writes and a cross-process lock: an interrupted write leaves the last good state."""

from __future__ import annotations

import errno
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from agentpack.io.errors import AgentpackError


def fsync_dir(directory: Path) -> None:
    """fsync a folder so a rename in it survives a power cut (best effort: some filesystems refuse)."""
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


_TEMPORARY = re.compile(r"^\..+\.(\d+)\.\d+\.tmp$")


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files ``atomic_write_*`` left under ``folder`` by processes that are gone.

    A process killed in the middle of an atomic write leaves its ``.NAME.PID.NS.tmp`` beside the target
    (the target itself is intact). Files of live processes are kept: they may still be writing.
    Returns what was removed.
    """
    removed = []
    for directory, _, files in os.walk(folder):
        for name in files:
            match = _TEMPORARY.match(name)
            if match is None or _alive(int(match.group(1))):
                continue
            path = Path(directory, name)
            try:
                path.unlink()
            except OSError:
                continue
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but belongs to someone else
        return True
    return True


def _temporary(path: Path) -> tuple[int, str]:
    """A new, exclusive temporary file beside ``path``, mode 0600 like ``mkstemp`` (without importing it)."""
    while True:
        tmp = str(path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            continue


@contextmanager
def atomic_file(path: str | Path, *, mode: int | None = None, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file whose content replaces ``path`` when the block ends without an error, through a
    temporary file in the same folder and ``os.replace`` (a large output is written as it is made); on an
    error the temporary file is removed and ``path`` is untouched.

    Readers see the old file or the new one, never a part. ``durable`` also fsyncs the file and
    its folder so the new content survives a power cut; derived reports may skip that.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            if durable:
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
    if durable:
        fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (see ``atomic_file``)."""
    with atomic_file(path, mode=mode, durable=durable) as handle:
        handle.write(data)


SHARED = 0o644
"""The mode of a file a user edits or shares (a scaffold's files): the temporary file's own is 0600."""


def atomic_write_text(path: str | Path, text: str, *, durable: bool = True, mode: int | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, durable=durable)


def atomic_write_json(
    path: str | Path, value: Any, *, indent: int | None = 2, durable: bool = True, mode: int | None = None
) -> None:
    text = json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False)
    atomic_write_text(path, text + "\n", durable=durable, mode=mode)


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
        fsync_dir(parent)
        return
    old = backup or parent / f".{target.name}.old-{os.getpid()}-{time.monotonic_ns()}"
    os.replace(target, old)
    try:
        os.replace(staged, target)
    except BaseException:
        os.replace(old, target)
        raise
    fsync_dir(parent)
    if backup is None:
        import shutil  # only a directory swap needs it; readers of this module do not

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
                        f"{what} is locked by another process",
                        file=str(path),
                        hint="wait for the other run to finish",
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)
