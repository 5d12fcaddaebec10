"""Seccomp programs that deny a skill what its declaration does not grant, built with libseccomp.

Rules (names are the report's):

- ``no-processes``: ``fork``, ``vfork`` and ``clone`` without ``CLONE_THREAD`` fail
  with EPERM, so threads still work; ``clone3`` fails with ENOSYS (its flags are
  behind a pointer no filter can read) and the C library falls back to ``clone``.
- ``no-exec``: ``execve`` and ``execveat`` fail with EPERM.
- ``exec-fd-only``: as ``no-exec``, except ``execveat(EXEC_FD, "", ..., AT_EMPTY_PATH)``
  (how ``boot`` starts a program that is not Python).
- ``no-unix-sockets``: ``socket(AF_UNIX, ...)`` fails with EPERM (``socketpair`` stays).
- ``no-io-uring``: ``io_uring_setup``, ``io_uring_enter`` and ``io_uring_register`` fail with
  EPERM: io_uring's own operations (``IORING_OP_SOCKET``, ``IORING_OP_CONNECT``, file opens)
  are not system calls, so no other rule would see them. Every run gets it.

libseccomp (through ``pyseccomp``, a ctypes binding, or the official ``seccomp``
module) writes the BPF program, checks the architecture and rejects the x32 and
32-bit system call tables. A built program is kept in the disk cache, so a run
normally imports neither the binding nor ctypes.
"""

from __future__ import annotations

import errno
import os
import platform
import sys
from functools import lru_cache
from typing import Any

from . import diskcache
from .boot import EXEC_FD

RULES = ("no-processes", "no-exec", "exec-fd-only", "no-unix-sockets", "no-io-uring")
KIND = "seccomp"
CLONE_THREAD = 0x00010000
AT_EMPTY_PATH = 0x1000
AF_UNIX = 1
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
INT_MASK = 0xFFFFFFFF  # the kernel reads these arguments as int: compare the low 32 bits only


class SeccompUnavailable(Exception):
    """No seccomp program can be built here (the message says why)."""


def _binding() -> Any:
    if not sys.platform.startswith("linux"):
        raise SeccompUnavailable("seccomp is Linux only")
    try:
        import pyseccomp as binding
    except ImportError:
        try:
            import seccomp as binding  # type: ignore[import-not-found]  # libseccomp's own, where visible
        except ImportError:
            raise SeccompUnavailable("no libseccomp binding (pip install pyseccomp)") from None
    except (OSError, RuntimeError) as exc:  # pyseccomp raises when libseccomp2 itself is missing
        raise SeccompUnavailable(f"libseccomp is not usable: {exc}") from None
    return binding


def _compile(rules: tuple[str, ...]) -> bytes:
    import tempfile

    s = _binding()
    deny = s.ERRNO(errno.EPERM)
    program = s.SyscallFilter(s.ALLOW)
    for rule in rules:
        if rule == "no-processes":
            program.add_rule(deny, "fork")
            program.add_rule(deny, "vfork")
            program.add_rule(deny, "clone", s.Arg(0, s.MASKED_EQ, CLONE_THREAD, 0))
            program.add_rule(s.ERRNO(errno.ENOSYS), "clone3")
        elif rule == "no-exec":
            program.add_rule(deny, "execve")
            program.add_rule(deny, "execveat")
        elif rule == "exec-fd-only":
            program.add_rule(deny, "execve")
            program.add_rule(deny, "execveat", s.Arg(0, s.NE, EXEC_FD))
            program.add_rule(deny, "execveat", s.Arg(4, s.MASKED_EQ, AT_EMPTY_PATH, 0))
        elif rule == "no-io-uring":
            for name in IO_URING:
                program.add_rule(deny, name)
        elif rule == "no-unix-sockets":
            program.add_rule(deny, "socket", s.Arg(0, s.MASKED_EQ, INT_MASK, AF_UNIX))
        else:
            raise ValueError(f"unknown seccomp rule {rule!r}")
    with tempfile.TemporaryFile() as handle:
        program.export_bpf(handle)
        handle.seek(0)
        return handle.read()


@lru_cache(maxsize=16)
def program(rules: tuple[str, ...]) -> bytes:
    """The BPF program (raw ``sock_filter`` array) for ``rules``; SeccompUnavailable when it cannot be built."""
    ident = f"{platform.machine()}:{EXEC_FD}:{','.join(rules)}"
    entry = diskcache.read(KIND, ident)
    if isinstance(entry, str):
        return bytes.fromhex(entry)
    try:
        code = _compile(rules)
    except SeccompUnavailable:
        raise
    except (OSError, RuntimeError, ValueError) as exc:
        raise SeccompUnavailable(f"libseccomp refused the program: {exc}") from None
    binding = sys.modules.get("pyseccomp") or sys.modules.get("seccomp")
    files = [os.path.abspath(__file__), getattr(binding, "__file__", None) or ""]
    diskcache.write(KIND, ident, [diskcache.stamp(f) for f in files], code.hex())
    return code


__all__ = ["RULES", "SeccompUnavailable", "program"]
