"""A parsed document with the line of every field, for findings that point at ``file:line``.

Kept apart from ``yamlio`` (which imports PyYAML) so that code restoring a
document from a cache can build one without importing the YAML machinery.
"""

from __future__ import annotations

from typing import Any


def escape_pointer(token: Any) -> str:
    """One JSON-pointer reference token (RFC 6901): ``~`` and ``/`` escaped."""
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(pointer: str, token: Any) -> str:
    return f"{pointer}/{escape_pointer(token)}"


class YamlDocument:
    """``data`` plus the line (and column) of every JSON pointer in it."""

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value: unhashable, as a dict is
    __slots__ = ("data", "file", "lines", "columns", "merged")

    def __init__(
        self,
        data: Any,
        file: str | None = None,
        lines: dict[str, int] | None = None,
        columns: dict[str, int] | None = None,
        merged: set[str] | None = None,
    ) -> None:
        self.data = data
        self.file = file
        self.lines = {} if lines is None else lines
        self.columns = {} if columns is None else columns
        self.merged = set() if merged is None else merged
        """Pointers of keys that exist only through a ``<<`` merge key (not written in their mapping)."""

    def __repr__(self) -> str:
        return f"YamlDocument(file={self.file!r}, data={self.data!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, YamlDocument):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def line_of(self, pointer: str = "") -> int | None:
        """Line (1-based) of the field at ``pointer``, or of its nearest parent that has one."""
        while True:
            if pointer in self.lines:
                return self.lines[pointer]
            if not pointer:
                return None
            pointer = pointer.rsplit("/", 1)[0]

    def where(self, pointer: str = "") -> dict[str, Any]:
        """``file``, ``line`` and ``pointer`` keyword arguments for a ``Finding``."""
        return {"file": self.file, "line": self.line_of(pointer), "pointer": pointer or None}
