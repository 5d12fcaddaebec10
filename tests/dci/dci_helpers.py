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
