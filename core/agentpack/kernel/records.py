"""``Record``: small mutable data classes for start-up paths, without the ``dataclasses`` module.

A ``@dataclass`` generates and compiles its methods when the class is created
(0.4 ms each, 0.9 ms frozen), a measurable share of a command that must start
fast. A record's fields are its ``__slots__``, in order; ``DEFAULTS`` maps a
field to a factory for its default value. Immutable values are ``NamedTuple``s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar


class Record:
    __slots__: tuple[str, ...] = ()
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = self.__slots__
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments, {len(args)} given")
        for name, value in zip(names, args, strict=False):  # fewer args than fields: the rest below
            setattr(self, name, value)
        for name in names[len(args) :]:
            if name in kwargs:
                setattr(self, name, kwargs.pop(name))
            elif name in self.DEFAULTS:
                setattr(self, name, self.DEFAULTS[name]())
            else:
                raise TypeError(f"{type(self).__name__}() is missing the argument '{name}'")
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(kwargs)}")

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if not name.startswith("_"))
        return f"{type(self).__name__}({fields})"


def constant(value: Any) -> Callable[[], Any]:
    """A ``DEFAULTS`` factory for an immutable value."""
    return lambda: value


__all__ = ["Record", "constant"]
