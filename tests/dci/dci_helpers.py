"""Helpers shared by the dci tests (importable: conftest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "dci"


def write_skill(
    root: Path,
    rel: str,
    *,
    name: str | None = None,
    description: str = "A skill.",
    contract: str | None = None,
    compatibility: str | None = None,
    extra: str = "",
) -> Path:
    """Write ``root/rel/SKILL.md`` and return the skill directory."""
    directory = root / rel
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["---", f"name: {name or directory.name}", f"description: {description}"]
    if compatibility is not None:
        lines.append(f"compatibility: {compatibility}")
    if contract is not None:
        escaped = contract.replace("\\", "\\\\").replace('"', '\\"')
        lines += ["metadata:", f'  contract: "{escaped}"']
    lines += [extra, "---", "Body.", ""] if extra else ["---", "Body.", ""]
    (directory / "SKILL.md").write_text("\n".join(lines), encoding="utf-8")
    return directory


class FileReads:
    """Opens (``os.open``, ``open``) and frontmatter parses of files named ``SKILL.md``, by real path."""

    def __init__(self, monkeypatch) -> None:
        import builtins
        import io
        import os
        from collections import Counter

        import agentpack.frontmatter

        self.opened: Counter[str] = Counter()
        self.parsed: Counter[str] = Counter()
        real_os_open, real_open = os.open, io.open
        real_parse = agentpack.frontmatter.read_markdown

        def note(counter: Counter[str], path) -> None:
            if isinstance(path, (str, os.PathLike)) and os.fspath(path).endswith("SKILL.md"):
                counter[os.path.realpath(path)] += 1

        inside_open = [0]  # open() with an opener calls os.open: one open, counted once

        def os_open(path, *args, **kwargs):
            if not inside_open[0]:
                note(self.opened, path)
            return real_os_open(path, *args, **kwargs)

        def open_(file, *args, **kwargs):
            note(self.opened, file)
            inside_open[0] += 1
            try:
                return real_open(file, *args, **kwargs)
            finally:
                inside_open[0] -= 1

        def read_markdown(path, *args, **kwargs):
            note(self.parsed, path)
            return real_parse(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(io, "open", open_)
        monkeypatch.setattr(builtins, "open", open_)
        monkeypatch.setattr(agentpack.frontmatter, "read_markdown", read_markdown)

    def each_once(self, files) -> bool:
        """Every one of ``files`` was opened once and parsed once, and no other SKILL.md was touched."""
        import os

        wanted = {os.path.realpath(f): 1 for f in files}
        return dict(self.opened) == wanted and dict(self.parsed) == wanted
