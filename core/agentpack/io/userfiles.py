"""Files a user hands us, where a regular file is expected: anything else is an error that says what it is.

A folder, a dangling or looping symbolic link, a FIFO or a device where a file
should be is never skipped as if it were absent (a silent fallback) and never
read (a FIFO would block the reader forever): it is an ``AgentpackError`` of the
caller's class, ``file: expected a YAML file, found a folder``.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO, Any

from agentpack.io.errors import AgentpackError, PackError, unreadable

StrPath = str | os.PathLike[str]


def what_is(path: StrPath) -> str:
    """What is at ``path``, in words for an error: "a file", "a folder", "nothing (no such file)"..."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if os.path.islink(path) and exc.errno in (errno.ENOENT, errno.ELOOP):
            return "a dangling or looping symbolic link"
        if exc.errno == errno.ENOENT:
            return "nothing (no such file)"
        return f"something that cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a special file (a FIFO, socket or device)"


def optional_file(
    path: StrPath, *, display: str | None = None, error: type[AgentpackError] = PackError, expected: str = "a file"
) -> bool:
    """True when a regular file is at ``path``, False when nothing is (not even a link); ``error`` otherwise."""
    found = what_is(path)
    if found == "a file":
        return True
    if found.startswith("nothing"):
        return False
    raise error(f"expected {expected}, found {found}", file=display or os.fspath(path))


def check_file(
    path: StrPath, *, display: str | None = None, error: type[AgentpackError] = PackError, expected: str = "a file"
) -> None:
    """``error`` unless a regular file is at ``path`` (the message says what is there instead)."""
    if not optional_file(path, display=display, error=error, expected=expected):
        raise error(f"expected {expected}, found {what_is(path)}", file=display or os.fspath(path))


def read_bytes(
    path: StrPath,
    *,
    display: str | None = None,
    error: type[AgentpackError] = PackError,
    expected: str = "a file",
    max_bytes: int | None = None,
) -> bytes:
    """The bytes of the regular file at ``path``; ``error`` for anything else, an I/O error or a file too large.

    Opened without blocking and checked on the open descriptor, so a FIFO swapped in between a
    check and the read cannot hang the reader. Plain descriptor calls: a scan reads thousands of files.
    """
    name = display or os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.EISDIR):
            raise unreadable(exc, name, error) from None  # permissions and the like
        found = what_is(path)
        if found.startswith("nothing"):
            raise error("cannot read: no such file", file=name) from None
        raise error(f"expected {expected}, found {found}", file=name) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"expected {expected}, found {what_is(path)}", file=name)
        if max_bytes is not None and info.st_size > max_bytes:
            raise error(f"the file is {info.st_size} bytes, more than the limit of {max_bytes}", file=name)
        parts = [os.read(fd, info.st_size + 1)]
        while parts[-1]:  # to the end, also when the file grew since fstat
            parts.append(os.read(fd, 1 << 16))
        return b"".join(parts)
    except OSError as exc:
        raise unreadable(exc, name, error) from None
    finally:
        os.close(fd)


class NotAFileError(OSError):
    """Something other than a regular file where one is expected (readers report it as any ``OSError``)."""


def open_regular(path: StrPath, mode: str = "rb", *, encoding: str | None = None) -> IO[Any]:
    """``open(path, mode)`` for reading, refusing (``NotAFileError``) whatever is not a regular file: opened
    without blocking and checked on the open descriptor, so a FIFO never hangs the reader (for readers that keep
    the file open; ``read_bytes``/``read_text`` read it whole)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode_bits = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode_bits):
            found = "a folder" if stat.S_ISDIR(mode_bits) else "a special file (a FIFO, socket or device)"
            raise NotAFileError(errno.EINVAL, f"expected a file, found {found}", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def read_text(
    path: StrPath,
    *,
    display: str | None = None,
    error: type[AgentpackError] = PackError,
    expected: str = "a file",
    max_bytes: int | None = None,
    encoding: str = "utf-8",
) -> str:
    """``read_bytes`` decoded with universal newlines, as ``Path.read_text`` reads (CRLF and CR become LF).

    Bytes that do not decode are ``error`` with the line of the first of them.
    """
    name = display or os.fspath(path)
    data = read_bytes(path, display=name, error=error, expected=expected, max_bytes=max_bytes)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise unreadable(exc, name, error) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


__all__ = ["NotAFileError", "check_file", "open_regular", "optional_file", "read_bytes", "read_text", "what_is"]
