"""``PackCache`` (``expert.query`` over MCP): the loaded pack again while its files are unchanged, a fresh one after."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentpack_ecp.pack import cache as cache_module
from agentpack_ecp.pack.cache import RACY_SECONDS, PackCache


def _age(path: Path, seconds: float = 60) -> None:
    """Set ``path``'s times into the past, as for a file not touched lately."""
    past = time.time() - seconds
    os.utime(path, (past, past))


@pytest.fixture
def loads(monkeypatch) -> list[Path]:
    seen: list[Path] = []
    real = cache_module.load_pack

    def counting(root):
        seen.append(Path(root))
        return real(root)

    monkeypatch.setattr(cache_module, "load_pack", counting)
    return seen


def _files(pack) -> list[Path]:
    return [pack.root / rel for rel in ("expert/EXPERT.yaml", pack.policy_path, *(s.path for s in pack.suites)) if rel]


def test_an_unchanged_pack_is_read_once(example_pack, loads):
    cache = PackCache()
    first = cache.load(example_pack)
    for path in _files(first):
        _age(path)
    first = cache.load(example_pack)  # aged files: now kept
    assert cache.load(example_pack) is first and cache.load(example_pack) is first
    assert len(loads) == 2


@pytest.mark.parametrize("which", ["manifest", "policy", "suite"])
def test_a_changed_file_is_read_again(example_pack, loads, which):
    cache = PackCache()
    pack = cache.load(example_pack)
    files = _files(pack)
    for path in files:
        _age(path)
    pack = cache.load(example_pack)
    target = {"manifest": files[0], "policy": files[1], "suite": files[2]}[which]
    target.write_text(target.read_text() + "\n")  # same content, new size and times
    _age(target, 30)
    again = cache.load(example_pack)
    assert again is not pack and len(loads) == 3
    assert cache.load(example_pack) is again  # and kept while unchanged


def test_a_manifest_edit_shows_in_the_next_answer(example_pack):
    cache = PackCache()
    manifest = example_pack / "expert" / "EXPERT.yaml"
    before = cache.load(example_pack)
    manifest.write_text(
        manifest.read_text().replace(f"display_name: {before.manifest['display_name']}", "display_name: Renamed")
    )
    assert cache.load(example_pack).manifest["display_name"] == "Renamed"


def test_a_recently_modified_pack_is_not_kept(example_pack, loads):
    cache = PackCache()
    for path in _files(cache.load(example_pack)):
        os.utime(path)  # now: within RACY_SECONDS, a later write could keep the same times
    cache.load(example_pack)
    assert len(loads) == 2 and RACY_SECONDS > 0


def test_a_removed_suite_file_is_noticed(example_pack, loads):
    cache = PackCache()
    pack = cache.load(example_pack)
    for path in _files(pack):
        _age(path)
    cache.load(example_pack)
    _files(pack)[2].unlink()
    assert cache.load(example_pack).suites[0].doc is None and len(loads) == 3
