"""Errors that reach the user as a clear message and an exit code, never a traceback."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


class AgentpackError(Exception):
    """A user, configuration or I/O problem: exit status 2, shown as ``file:line: message``."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.hint = hint

    def location(self) -> str:
        parts = [str(p) for p in (self.file, self.line, self.column) if p is not None]
        return ":".join(parts)

    def __str__(self) -> str:
        where = self.location()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class PackError(AgentpackError):
    """A pack that cannot be read or recognised at all."""


class YamlError(PackError):
    """A YAML document that cannot be parsed, or breaks a safety limit."""


class PathEscapeError(AgentpackError):
    """A pack-relative path that is absolute or leaves its root."""


class PluginError(AgentpackError):
    """A plugin that cannot be loaded, or two plugins that claim the same name."""


class MissingDependencyError(AgentpackError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, module: str, *, distribution: str, extra: str | None = None, feature: str = "") -> None:
        from agentpack.io.installhint import command

        what = f" for {feature}" if feature else ""
        super().__init__(
            f"the optional dependency '{module}' is needed{what} but is not installed",
            hint=command(distribution, extra),
        )
        self.module = module
        self.distribution = distribution
        self.extra = extra


@contextmanager
def reading(file: str, error: type[AgentpackError] = PackError) -> Iterator[None]:
    """Reading a file in the block: an undecodable or unreadable file becomes ``error`` naming ``file``."""
    try:
        yield
    except (UnicodeDecodeError, OSError) as exc:
        raise unreadable(exc, file, error) from None


def unreadable(exc: UnicodeDecodeError | OSError, file: str, error: type[AgentpackError] = PackError) -> AgentpackError:
    """``error`` naming ``file`` for a read that failed: a ``UnicodeDecodeError`` gives the line of the bad
    byte and a hint; an ``OSError`` gives the system's reason."""
    if isinstance(exc, UnicodeDecodeError):
        line = exc.object[: exc.start].count(b"\n") + 1 if isinstance(exc.object, bytes) else None
        return error(
            f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=file, line=line, hint="save the file as UTF-8"
        )
    return error(f"cannot read: {exc.strerror or exc}", file=file)


def require(module: str, *, distribution: str, extra: str | None = None, feature: str = "") -> ModuleType:
    """Import ``module`` or raise ``MissingDependencyError`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module, distribution=distribution, extra=extra, feature=feature) from exc
