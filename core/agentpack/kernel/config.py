"""Project settings: ``[tool.agentpack]`` in ``pyproject.toml`` or an ``agentpack.toml``, under the
environment, under command-line flags (flag > env > file > default, key by key)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from agentpack.io.errors import AgentpackError

FILES = ("agentpack.toml", "pyproject.toml")
"""Looked for in this order in each folder from the working directory up to the project root."""

LIST_KEYS = ("skill-roots", "exclude")
FLAGS = {"skill-roots": "--skill-root", "exclude": "--exclude", "output": "--output", "store": "--store"}
ENV = {
    "skill-roots": "AGENTPACK_SKILL_ROOTS",
    "exclude": "AGENTPACK_EXCLUDE",
    "output": "AGENTPACK_OUTPUT",
    "store": "AGENTPACK_RUNS",
}
"""The environment variable of each key; a list is comma-separated."""

TABLES = {"judge": ("model", "base-url", "temperature")}
"""Keys that are tables of strings: ``[tool.agentpack.judge]`` holds the LLM judge's defaults (under the
graders' own settings and environment variables, which the plugin that grades reads first). Its API key
is never a setting: secrets stay in the environment."""


_MENTIONS_TABLE = re.compile(r"tool\.agentpack|^\s*\[\s*tool\s*\]\s*$", re.M)
"""A cheap test that a ``pyproject.toml`` may hold ``[tool.agentpack]`` (or a ``[tool]`` table that could)."""


class ConfigError(AgentpackError):
    """A project configuration file, variable or flag that cannot be used."""


class Settings(NamedTuple):
    """The resolved settings and, per key set, where its value came from (``file:line``, ``$VAR`` or the flag).
    A NamedTuple, not a dataclass: every command reads these on start-up."""

    skill_roots: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    output: str | None = None
    store: Path | None = None
    judge: Mapping[str, str] = {}
    origin: Mapping[str, str] = {}

    def with_flags(self, **flags: Any) -> Settings:
        """These settings under the flags given (a ``None`` or empty flag leaves the value as it is)."""
        given = {name: value for name, value in flags.items() if value not in (None, ())}
        for name, value in given.items():
            key = name.replace("_", "-")
            if key in LIST_KEYS:
                given[name] = tuple(_checked_list(key, list(value), FLAGS[key], None))
        origin = {**self.origin, **{name.replace("_", "-"): FLAGS[name.replace("_", "-")] for name in given}}
        return self._replace(**given, origin=origin)


def load(start: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of the project around ``start`` (the working directory): its file, then the environment."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    found = find_file(start)
    if found is not None:
        path, table, text = found
        for key, value in table.items():
            line = _key_line(text, key)
            where = f"{_shown(path)}:{line}" if line else _shown(path)
            values[key] = _checked(key, value, where, path.parent, file=_shown(path), line=line)
            origin[key] = where
    for key, variable in ENV.items():
        raw = environ.get(variable)
        if raw:
            if key in LIST_KEYS:
                items = [part.strip() for part in raw.split(",") if part.strip()]
                values[key] = _checked(key, items, f"${variable}", Path.cwd())
            else:
                values[key] = _checked(key, raw, f"${variable}", Path.cwd())
            origin[key] = f"${variable}"
    return Settings(
        skill_roots=tuple(values.get("skill-roots", ())),
        exclude=tuple(values.get("exclude", ())),
        output=values.get("output"),
        store=values.get("store"),
        judge=values.get("judge", {}),
        origin=origin,
    )


def find_file(start: Path | None = None) -> tuple[Path, dict[str, Any], str] | None:
    """``(file, table, text)`` of the nearest configuration from ``start`` up to the project root (the first
    folder holding ``.git``): an ``agentpack.toml``, or a ``pyproject.toml`` with a ``[tool.agentpack]`` table."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in FILES:
            path = folder / name
            if not path.is_file():
                continue
            text = _text(path)
            if name == "pyproject.toml" and not _MENTIONS_TABLE.search(text):
                continue  # no [tool.agentpack]: not parsed (tomllib is not even imported for it)
            data = _parse(path, text)
            if name == "agentpack.toml":
                return path, data, text
            tool = data.get("tool")
            table = tool.get("agentpack") if isinstance(tool, dict) else None
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(
                        "[tool.agentpack] must be a table", file=_shown(path), line=_key_line(text, "agentpack")
                    )
                return path, table, text
        if (folder / ".git").exists():
            break
    return None


def _shown(path: Path) -> str:
    """``path`` as messages show it: relative to the working directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _text(path: Path) -> str:
    from agentpack.io.errors import reading

    with reading(_shown(path), ConfigError):
        return path.read_text(encoding="utf-8")


def _parse(path: Path, text: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise ConfigError(
            f"not valid TOML: {message}",
            file=_shown(path),
            line=int(where.group(1)) if where else max(1, len(text.splitlines())),
            column=int(where.group(2)) if where else None,
        ) from None


def _key_line(text: str, key: str) -> int | None:
    """The line on which ``key`` is assigned or opened (close enough to point a reader at it)."""
    pattern = re.compile(
        rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*="
        rf"|^\s*\[\s*(?:tool\.agentpack\.)?{re.escape(key)}\s*\]"
    )
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _checked(key: str, value: Any, where: str, base: Path, *, file: str | None = None, line: int | None = None) -> Any:
    """``value`` of ``key`` checked and normalised (a store path made absolute against ``base``)."""
    if key in TABLES:
        return _checked_table(key, value, where, file=file, line=line)
    if key not in ENV:
        import difflib

        near = difflib.get_close_matches(key, [*ENV, *TABLES], n=1)
        raise ConfigError(
            f"unknown setting '{key}'",
            file=file or where,
            line=line,
            hint=f"did you mean '{near[0]}'?" if near else f"the settings are: {', '.join([*ENV, *TABLES])}",
        )
    if key in LIST_KEYS:
        if not isinstance(value, list):
            raise ConfigError(f"'{key}' must be a list of strings, not {_kind(value)}", file=file or where, line=line)
        return _checked_list(key, value, where, line, file=file)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"'{key}' must be a non-empty string, not {_kind(value)}", file=file or where, line=line)
    if key == "store":
        return (base / Path(value).expanduser()).resolve()
    return value


def _checked_table(key: str, value: Any, where: str, *, file: str | None, line: int | None) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"'{key}' must be a table ([tool.agentpack.{key}]), not {_kind(value)}", file=file or where, line=line
        )
    checked: dict[str, str] = {}
    for name, item in value.items():
        if name not in TABLES[key]:
            import difflib

            near = difflib.get_close_matches(name, TABLES[key], n=1)
            secret = "key" in name.lower() or "token" in name.lower() or "secret" in name.lower()
            hint = (
                "set it in the environment (AGENTPACK_AGENT_RPC_JUDGE_API_KEY): a project file is shared"
                if secret
                else f"did you mean '{near[0]}'?"
                if near
                else f"'{key}' takes: {', '.join(TABLES[key])}"
            )
            raise ConfigError(f"unknown setting '{key}.{name}'", file=file or where, line=line, hint=hint)
        if isinstance(item, bool) or not isinstance(item, str | int | float) or not str(item).strip():
            raise ConfigError(
                f"'{key}.{name}' must be a non-empty string or number, not {_kind(item)}", file=file or where, line=line
            )
        checked[name] = str(item)
    return checked


def _checked_list(key: str, value: list[Any], where: str, line: int | None, *, file: str | None = None) -> list[str]:
    items: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(
                f"'{key}' must list non-empty strings; found {_kind(item)}", file=file or where, line=line
            )
        if key == "skill-roots":
            posix = PurePosixPath(item.replace("\\", "/"))
            if posix.is_absolute() or ".." in posix.parts or re.match(r"^[A-Za-z]:", item):
                raise ConfigError(
                    f"skill root '{item}' must be a folder path relative to the folders searched, without '..'",
                    file=file or where,
                    line=line,
                    hint="for example '.windsurf/skills'; to validate a folder elsewhere, name it as a PATH",
                )
            item = posix.as_posix()
        items.append(item)
    return items


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if not isinstance(value, dict | list) else type(value).__name__
