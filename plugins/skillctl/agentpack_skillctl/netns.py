"""A fresh network namespace for one child process, without exec'ing ``unshare(1)``.

Namespaces belong to threads: ``unshare(CLONE_NEWNET)`` moves only the calling
thread into a new, empty network namespace. The child is started from there
(``subprocess`` keeps its fast vfork path, unlike with ``preexec_fn``) and the
thread then returns to the namespace it came from with ``setns``. Other threads
never leave their namespace. Needs CAP_SYS_ADMIN (root); otherwise
``NamespaceError`` and the caller falls back to ``unshare(1)`` with a user
namespace. Python 3.11 has no ``os.unshare``, hence ``ctypes`` (imported on first use).

Making a network namespace costs the kernel most of a millisecond, so a process
that runs skills repeatedly makes the next one ahead of time, while the current
child runs (``make_spare``): a namespace nothing has used yet, held as a file
descriptor, which the next spawn enters with ``setns`` instead of ``unshare``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

CLONE_NEWNET = 0x40000000
OWN_NAMESPACE = "/proc/thread-self/ns/net"
T = TypeVar("T")
_SPARE: list[int] = []
"""Descriptors of fresh network namespaces made ahead of time; each is entered by one spawn, then closed."""


class NamespaceError(OSError):
    """The calling thread could not enter a new network namespace (nothing was changed)."""


@lru_cache(maxsize=1)
def _libc() -> tuple[Callable[[int], int], Callable[[int, int], int], Callable[[], int]]:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare, libc.setns, ctypes.get_errno


def in_fresh_namespace(start: Callable[[], T]) -> T:
    """``start()`` called with this thread in a new network namespace; the thread's own one is restored after.

    ``NamespaceError`` when the namespace cannot be made (``start`` is not called).
    A failure to return (never seen: the thread re-enters the namespace it held) is a RuntimeError.
    """
    try:
        unshare, setns, errno = _libc()
        own = os.open(OWN_NAMESPACE, os.O_RDONLY | os.O_CLOEXEC)
    except (OSError, AttributeError, ImportError) as exc:
        raise NamespaceError(getattr(exc, "errno", None) or 0, f"no unshare(2) here: {exc}") from None
    try:
        if not _enter_spare(setns) and unshare(CLONE_NEWNET) != 0:
            code = errno()
            raise NamespaceError(code, f"unshare(CLONE_NEWNET): {os.strerror(code)}")
        try:
            return start()
        finally:
            _return(setns, own, errno)
    finally:
        os.close(own)


def make_spare() -> None:
    """Make one fresh network namespace for the next spawn (nothing enters it until then); quiet on failure."""
    if _SPARE:
        return
    try:
        unshare, setns, errno = _libc()
        own = os.open(OWN_NAMESPACE, os.O_RDONLY | os.O_CLOEXEC)
    except (OSError, AttributeError, ImportError):
        return
    try:
        if unshare(CLONE_NEWNET) == 0:
            try:
                _SPARE.append(os.open(OWN_NAMESPACE, os.O_RDONLY | os.O_CLOEXEC))
            finally:
                _return(setns, own, errno)
    finally:
        os.close(own)


def _enter_spare(setns: Callable[[int, int], int]) -> bool:
    try:
        spare = _SPARE.pop()  # atomic: two threads never take the same one
    except IndexError:
        return False
    try:
        return setns(spare, CLONE_NEWNET) == 0
    finally:
        os.close(spare)


def _return(setns: Callable[[int, int], int], own: int, errno: Callable[[], int]) -> None:
    if setns(own, CLONE_NEWNET) != 0:
        code = errno()
        raise RuntimeError(f"cannot return to the thread's own network namespace: {os.strerror(code)}")


__all__ = ["NamespaceError", "in_fresh_namespace", "make_spare"]
