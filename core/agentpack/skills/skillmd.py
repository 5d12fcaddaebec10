"""Agent Skills ``SKILL.md``: parsing and validation with the verdicts of ``skills-ref`` 0.1.1.

Frontmatter scalars are read as strings (``version: 1.0`` stays ``"1.0"``),
and flow style, anchors, aliases, tags and duplicate keys are rejected, as the
reference validator does. Each rule has a stable code (``SKL...``).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import PackError
from agentpack.io.paths import check_inside

if TYPE_CHECKING:
    from agentpack.io.frontmatter import MarkdownDocument
    from agentpack.kernel.models import Finding
from agentpack.io.yamldoc import escape_pointer

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
ALLOWED_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
SKILL_FILENAMES = ("SKILL.md", "skill.md")


def find_skill_md(directory: str | Path) -> Path | None:
    """``SKILL.md`` in ``directory`` (``skill.md`` accepted, as the reference does).

    Whatever is at that name counts (a folder, a dangling link): reading it then says what it is,
    instead of the skill looking as if it had no SKILL.md.
    """
    for name in SKILL_FILENAMES:
        candidate = Path(directory, name)
        if os.path.lexists(candidate):
            return candidate
    return None


def folder_name(directory: Path) -> str:
    """The real name of ``directory``, also when it is given as ``.`` or ends in ``..``."""
    return directory.name if directory.name not in ("", "..") else os.path.basename(os.path.abspath(directory))


@dataclass
class Skill:
    """A parsed SKILL.md."""

    directory: Path
    document: MarkdownDocument
    ignored: tuple[str, ...] = ()
    """Top-level keys that came only through a ``<<`` merge; dropped, as the reference parser drops them."""

    @property
    def meta(self) -> dict[str, Any]:
        return self.document.meta

    @property
    def name(self) -> str | None:
        value = self.meta.get("name")
        return value.strip() if isinstance(value, str) else None

    @property
    def description(self) -> str | None:
        value = self.meta.get("description")
        return value.strip() if isinstance(value, str) else None

    @property
    def metadata(self) -> dict[str, Any]:
        value = self.meta.get("metadata")
        return value if isinstance(value, dict) else {}

    @property
    def compatibility(self) -> str | None:
        value = self.meta.get("compatibility")
        return value if isinstance(value, str) else None

    @property
    def body(self) -> str:
        return self.document.body

    def where(self, pointer: str = "") -> dict[str, Any]:
        return self.document.frontmatter.where(pointer)


def read_skill(directory: str | Path, *, display: str | None = None, text: str | None = None) -> Skill:
    """Parse ``directory``'s SKILL.md. Raises ``PackError`` (file:line) when it cannot be parsed.

    ``text`` is the content of ``directory/SKILL.md`` when the caller has already read it
    (see ``read_markdown``); the directory is then not searched and the file not opened.
    """
    directory = directory if isinstance(directory, Path) else Path(directory)
    if text is not None:
        return _parse_skill(directory, directory / SKILL_FILENAMES[0], display, text)
    path = find_skill_md(directory)
    if path is None:
        raise PackError("missing required file SKILL.md", file=display or str(directory))
    check_inside(directory, path, display=display or str(path), what="the skill folder", error=PackError)
    try:
        st = path.stat()
    except OSError:
        return _parse_skill(directory, path, display, None)  # read_markdown reports why
    from agentpack.kernel.plugins import command_cache

    parsed = command_cache(__name__)  # the plugins and the core that check one pack in one command parse it once
    if parsed is None:
        return _parse_skill(directory, path, display, None)
    key = (str(directory), display or str(path), st.st_ino, st.st_mtime_ns, st.st_size)  # a changed file: parsed anew
    hit = parsed.get(key)
    if hit is None:
        try:
            hit = _parse_skill(directory, path, display, None)
        except PackError as exc:
            hit = exc
        if len(parsed) >= _PARSED_SIZE:
            parsed.pop(next(iter(parsed)))
        parsed[key] = hit
    if isinstance(hit, PackError):
        raise hit
    return hit


_PARSED_SIZE = 256
"""At most this many parsed SKILL.md files are kept in a command's cache (a long-lived server keeps its host)."""


def _parse_skill(directory: Path, path: Path, display: str | None, text: str | None) -> Skill:
    from agentpack.io.frontmatter import read_markdown

    shown = display or str(path)
    document = read_markdown(path, display=shown, strings_only=True, text=text)
    data = document.frontmatter.data
    if not isinstance(data, dict):
        raise PackError("SKILL.md frontmatter must be a YAML mapping", file=shown, line=1)
    merged = document.frontmatter.merged
    ignored = tuple(key for key in data if f"/{escape_pointer(key)}" in merged) if merged else ()
    for key in ignored:
        del data[key]
    return Skill(directory=directory, document=document, ignored=ignored)


def validate_skill_dir(
    directory: str | Path, *, display: str | None = None, text: str | None = None
) -> tuple[Skill | None, list[Finding]]:
    """Validate a skill directory; returns the parsed skill (or None) and findings.

    ``text``: the content of ``directory/SKILL.md`` when the caller has already read it
    (a discovery walk that found the file); the directory is then not checked again.
    ``Finding`` (pydantic) is imported only when there is one: a scan of valid skills needs none.
    """
    directory = directory if isinstance(directory, Path) else Path(directory)
    if text is None and not directory.is_dir():
        from agentpack.kernel.models import Finding

        return None, [Finding.error("SKL001", "not a directory", file=display or str(directory))]
    try:
        skill = read_skill(directory, display=display, text=text)
    except PackError as exc:
        from agentpack.kernel.models import Finding

        code = "SKL001" if "missing required file" in exc.message or exc.message.startswith("expected") else "SKL002"
        return None, [Finding.error(code, exc.message, file=exc.file, line=exc.line, column=exc.column, hint=exc.hint)]
    if not skill.ignored:
        return skill, validate_frontmatter(skill.meta, skill.directory, where=skill.where)
    from agentpack.kernel.models import Finding

    merges = [
        Finding.warning(
            "SKL003",
            f"field '{key}' comes from a '<<' merge key and is ignored at the top "
            "level, as the reference validator ignores it",
            hint="write the field out",
            **skill.where(""),
        )
        for key in skill.ignored
    ]
    return skill, merges + validate_frontmatter(skill.meta, skill.directory, where=skill.where)


def validate_frontmatter(
    meta: dict[str, Any], directory: Path | None, *, where: Callable[[str], dict[str, Any]] = lambda p: {}
) -> list[Finding]:
    """Validate parsed frontmatter (the reference's ``validate_metadata``)."""
    findings: list[Finding] = []

    def error(code: str, pointer: str, message: str, hint: str | None = None) -> None:
        from agentpack.kernel.models import Finding  # only for a finding: valid frontmatter needs no pydantic

        findings.append(Finding.error(code, message, hint=hint, **where(pointer)))

    extra = sorted(set(meta) - ALLOWED_FIELDS)
    for key in extra:
        error(
            "SKL010",
            f"/{key}",
            f"unexpected frontmatter field '{key}'",
            hint=f"allowed fields: {', '.join(sorted(ALLOWED_FIELDS))}; put anything else under 'metadata'",
        )

    if "name" not in meta:
        error("SKL011", "", "missing required field 'name'")
    else:
        _name_findings(meta["name"], directory, error)

    if "description" not in meta:
        error("SKL020", "", "missing required field 'description'")
    else:
        description = meta["description"]
        if not isinstance(description, str) or not description.strip():
            error("SKL021", "/description", "field 'description' must be a non-empty string")
        elif len(description) > MAX_DESCRIPTION_LENGTH:
            error(
                "SKL022",
                "/description",
                f"description is {len(description)} characters, more than the limit of {MAX_DESCRIPTION_LENGTH}",
            )

    if "compatibility" in meta:
        compatibility = meta["compatibility"]
        if not isinstance(compatibility, str):
            error("SKL030", "/compatibility", "field 'compatibility' must be a string")
        elif len(compatibility) > MAX_COMPATIBILITY_LENGTH:
            error(
                "SKL031",
                "/compatibility",
                f"compatibility is {len(compatibility)} characters, more than the limit of {MAX_COMPATIBILITY_LENGTH}",
            )
    return findings


def _name_findings(raw: Any, directory: Path | None, error: Callable[..., None]) -> None:
    if not isinstance(raw, str) or not raw.strip():
        error("SKL012", "/name", "field 'name' must be a non-empty string")
        return
    name = unicodedata.normalize("NFKC", raw.strip())
    if len(name) > MAX_NAME_LENGTH:
        error("SKL013", "/name", f"name '{name}' is {len(name)} characters, more than the limit of {MAX_NAME_LENGTH}")
    if name != name.lower():
        error("SKL014", "/name", f"name '{name}' must be lowercase")
    if name.startswith("-") or name.endswith("-"):
        error("SKL015", "/name", f"name '{name}' must not start or end with a hyphen")
    if "--" in name:
        error("SKL016", "/name", f"name '{name}' must not contain consecutive hyphens")
    letters = name.replace("-", "")  # every character a letter, a digit or '-' (str.isalnum: per character)
    if letters and not letters.isalnum():
        error("SKL017", "/name", f"name '{name}' may contain only letters, digits and hyphens")
    if directory is not None:
        folder = folder_name(directory)
        if unicodedata.normalize("NFKC", folder) != name:
            error(
                "SKL018",
                "/name",
                f"directory name '{folder}' must match the skill name '{name}'",
                hint=f"rename the directory to '{name}' or change 'name'",
            )
