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
    """Opens for reading (``os.open``, ``open``) and frontmatter parses of files named ``SKILL.md``, by real path."""

    def __init__(self, monkeypatch) -> None:
        import os
        from collections import Counter

        import agentpack.io.frontmatter
        from agentpack.testing import count_reads

        self.reads = count_reads(monkeypatch)
        self.parsed: Counter[str] = Counter()
        real_parse = agentpack.io.frontmatter.read_markdown

        def read_markdown(path, *args, **kwargs):
            if os.fspath(path).endswith("SKILL.md"):
                self.parsed[os.path.realpath(path)] += 1
            return real_parse(path, *args, **kwargs)

        monkeypatch.setattr(agentpack.io.frontmatter, "read_markdown", read_markdown)

    @property
    def opened(self) -> dict[str, int]:
        return {path: n for path, n in self.reads.items() if path.endswith("SKILL.md")}

    def each_once(self, files) -> bool:
        """Every one of ``files`` was opened once and parsed once, and no other SKILL.md was touched."""
        import os

        wanted = {os.path.realpath(f): 1 for f in files}
        return self.opened == wanted and dict(self.parsed) == wanted
