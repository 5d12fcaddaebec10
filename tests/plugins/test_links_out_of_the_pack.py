"""Symbolic links that leave a pack (issue 24), in every format: validate reports each as a located error,
and nothing reads what it points to (build indexes none of it)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agentpack.testing import run_cli

REPO = Path(__file__).resolve().parents[2]
ECP = REPO / "examples" / "ecp" / "conformance-pack"
OEX = REPO / "examples" / "openexperts" / "acme-support"
SKILL = REPO / "examples" / "skills" / "fs-hash-tree"
SECRET = "HOSTSECRET-4f1c"


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.md").write_text(f"# Host file\n\n{SECRET} prediction cache invalidated\n")
    (out / "folder").mkdir()
    (out / "folder" / "inner.md").write_text(f"{SECRET} in a folder\n")
    return out


def _replace_with_link(path: Path, target: Path) -> None:
    """``path`` becomes a link to a copy of itself outside the pack (what it says stays valid)."""
    shutil.copy(path, target)
    path.unlink()
    path.symlink_to(target)


def _copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "packs" / src.name
    shutil.copytree(src, dest, symlinks=True)
    return dest


Attack = Callable[[Path, Path], str]
"""(pack, outside) -> the code validate must report."""

ATTACKS: dict[str, tuple[Path, Attack]] = {
    "ecp EXPERT.yaml": (
        ECP,
        lambda p, o: (_replace_with_link(p / "expert" / "EXPERT.yaml", o / "EXPERT.yaml"), "expert/EXPERT.yaml")[1],
    ),
    "ecp SKILL.md": (ECP, lambda p, o: (_replace_with_link(p / "SKILL.md", o / "SKILL.md"), "SKL001")[1]),
    "ecp source file": (
        ECP,
        lambda p, o: ((p / "expert/sources/corpus/docs/secret.md").symlink_to(o / "secret.md"), "ECP114")[1],
    ),
    "ecp source folder": (
        ECP,
        lambda p, o: ((p / "expert/sources/corpus/docs/linked").symlink_to(o / "folder"), "ECP114")[1],
    ),
    "openexperts expert.yaml": (
        OEX,
        lambda p, o: (_replace_with_link(p / "expert.yaml", o / "expert.yaml"), "OEX002")[1],
    ),
    "openexperts knowledge file": (
        OEX,
        lambda p, o: ((p / "knowledge" / "secret.md").symlink_to(o / "secret.md"), "OEX004")[1],
    ),
    "skillctl skill.yaml": (
        SKILL,
        lambda p, o: (_replace_with_link(p / "skill.yaml", o / "skill.yaml"), "skill.yaml: error")[1],
    ),
    "skillctl impl folder": (SKILL, lambda p, o: ((p / "impl" / "linked").symlink_to(o / "folder"), "SKC101")[1]),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_link_out_of_the_pack_is_a_located_error(tmp_path: Path, name: str) -> None:
    src, attack = ATTACKS[name]
    pack = _copy(src, tmp_path)
    expected = attack(pack, _outside(tmp_path))
    result = run_cli(["validate", pack])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert expected in result.stdout, result.stdout
    assert "outside" in result.stdout and "symbolic link" in result.stdout, result.stdout


def test_a_linked_ecp_source_folder_is_never_indexed(tmp_path: Path) -> None:
    """The source folder itself links out of the pack: build refuses it, and no index holds the host file."""
    pack = _copy(ECP, tmp_path)
    outside = _outside(tmp_path)
    corpus = pack / "expert" / "sources" / "corpus"
    shutil.copytree(corpus, outside / "corpus")
    (outside / "corpus" / "docs" / "host.md").write_text(f"{SECRET}\n")
    shutil.rmtree(corpus)
    corpus.symlink_to(outside / "corpus")
    built = run_cli(["ecp", "build", pack])
    assert built.exit_code == 2, built.stdout + built.stderr
    assert "expected a source inside the pack" in built.stderr
    assert not any(SECRET in f.read_text(errors="replace") for f in (pack / "expert" / "context").rglob("*.jsonl"))


def test_a_folder_where_skill_yaml_should_be_is_the_skills_error(tmp_path: Path) -> None:
    skill = _copy(SKILL, tmp_path)
    (skill / "skill.yaml").unlink()
    (skill / "skill.yaml").mkdir()
    result = run_cli(["validate", skill])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "skill.yaml: error" in result.stdout and "found a folder" in result.stdout, result.stdout


def test_ecp_build_never_indexes_a_file_or_folder_linked_out_of_the_pack(tmp_path: Path) -> None:
    """Links inside a source that leave the pack are skipped by build (validate reports them, ECP114)."""
    pack = _copy(ECP, tmp_path)
    outside = _outside(tmp_path)
    docs = pack / "expert" / "sources" / "corpus" / "docs"
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "linked").symlink_to(outside / "folder")
    built = run_cli(["ecp", "build", pack])
    assert built.exit_code == 0, built.stdout + built.stderr
    assert not any(SECRET in f.read_text(errors="replace") for f in (pack / "expert" / "context").rglob("*.jsonl"))
