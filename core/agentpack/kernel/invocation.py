"""What ``agentpack_invoke`` passes: run one pack with one input, get a typed result.

One format reaches a pack of another format through ``Host.invoke`` with these records, never
by importing the other plugin or spawning the ``agentpack`` command line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from agentpack.kernel.records import Record, constant


class InvokeRequest(Record):
    """One run of a pack: its JSON ``input``, the ``workspace`` folder it works in, the format's ``options``.

    ``workspace`` ``None``: the owner gives the run a fresh empty folder of its own. ``options`` are the
    owning format's (documented on its page), like ``agentpack eval --option KEY=VALUE``.
    """

    __slots__ = ("input", "workspace", "options")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"workspace": constant(None), "options": dict}
    input: Any
    workspace: Path | None
    options: dict[str, Any]


class InvokeError(Record):
    """Why a run failed, located: in the pack (``file``, ``line``) or in the input or output (``pointer``).

    ``pointer`` is a JSON Pointer into the value ``side`` names (``input``, ``output``); ``side`` is
    ``None`` for a problem of the pack or the run itself.
    """

    __slots__ = ("code", "message", "file", "line", "side", "pointer")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {name: constant(None) for name in __slots__[2:]}
    code: str
    message: str
    file: str | None
    line: int | None
    side: str | None
    pointer: str | None

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line) if p is not None)
        at = " ".join(p for p in (self.side, self.pointer) if p)  # pointer "": the whole value
        return f"{where + ': ' if where else ''}{self.code}{' at ' + at if at else ''}: {self.message}"


class InvokeResult(Record):
    """How a run ended: ``status`` (``ok`` or the format's failure status), ``output``, ``errors``, ``report``.

    ``output`` is the run's JSON output (``None`` unless ``ok``); ``report`` the format's own record
    of the run (for skillctl, its run report).
    """

    __slots__ = ("status", "output", "errors", "report")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "output": constant(None),
        "errors": list,
        "report": dict,
    }
    status: str
    output: Any
    errors: list[InvokeError]
    report: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def summary(self) -> str:
        """``status`` and the first error, one line: what a caller reports about a failed run."""
        first = f": {self.errors[0]}" if self.errors else ""
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return f"{self.status}{first}{more}"


__all__ = ["InvokeError", "InvokeRequest", "InvokeResult"]
