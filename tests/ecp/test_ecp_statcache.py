"""The stat cache of file hashes (refresh reads only changed files) and the texts.jsonl lookup by chunk id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack_ecp.index.chunkstore import Chunk, TextsFile, text_line
from agentpack_ecp.sources import statcache
from agentpack_ecp.sources.scope import Scope
from agentpack_ecp.sources.snapshot import scan_directory
from agentpack_ecp.sources.statcache import ChangedWhileReading, LazyTexts, StatCache


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record files written just now (the tests cannot age a file's ctime)."""
    monkeypatch.setattr(statcache, "RACY_NS", -(10**12))


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    for name, text in {"a.md": "alpha\n", "b.md": "beta\n", "c.bin": "x\0y"}.items():
        (root / name).write_text(text)
    return root


def _scan(root: Path, cache: StatCache):
    return scan_directory(root, Scope(None, None), 10_000, stat_cache=cache)


def test_unchanged_files_are_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_racy_window) -> None:
    root = _corpus(tmp_path)
    cache = StatCache(tmp_path / "hashes.json")
    first, texts = _scan(root, cache)
    cache.save()
    assert texts["a.md"] == "alpha\n" and "c.bin" not in texts
    cache = StatCache(tmp_path / "hashes.json")
    opened: list[str] = []
    real_open = open

    def spy(path, *args, **kwargs):
        opened.append(os.path.basename(str(path)))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    second, texts = _scan(root, cache)
    assert second == first and opened == []
    assert isinstance(texts, LazyTexts) and sorted(texts) == ["a.md", "b.md"]
    assert texts["b.md"] == "beta\n" and opened == ["b.md"]  # read on first use only


def test_a_change_that_keeps_size_and_mtime_is_still_seen(tmp_path: Path, no_racy_window) -> None:
    root = _corpus(tmp_path)
    cache = StatCache(tmp_path / "hashes.json")
    _scan(root, cache)
    cache.save()
    before = (root / "a.md").stat()
    (root / "a.md").write_text("ALPHA\n")  # same size; mtime put back, ctime moves on
    os.utime(root / "a.md", ns=(before.st_atime_ns, before.st_mtime_ns))
    manifest, texts = _scan(root, StatCache(tmp_path / "hashes.json"))
    assert texts["a.md"] == "ALPHA\n"
    assert (
        manifest["a.md"]["sha256"]
        != json.loads((tmp_path / "hashes.json").read_text())["roots"][os.path.realpath(root)]["a.md"][4]
    )


def test_recently_written_files_are_not_recorded(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    cache = StatCache(tmp_path / "hashes.json")
    _scan(root, cache)
    cache.save()
    assert not (tmp_path / "hashes.json").exists()  # every file was written just now: racy, none recorded


def test_a_lazy_text_that_changed_since_the_scan_is_an_error(tmp_path: Path, no_racy_window) -> None:
    root = _corpus(tmp_path)
    cache = StatCache(tmp_path / "hashes.json")
    _scan(root, cache)
    cache.save()
    _, texts = _scan(root, StatCache(tmp_path / "hashes.json"))
    (root / "a.md").write_text("other\n")
    with pytest.raises(ChangedWhileReading, match="changed while"):
        texts["a.md"]


def test_a_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (tmp_path / "hashes.json").write_text("{not json")
    manifest, texts = _scan(root, StatCache(tmp_path / "hashes.json"))
    assert texts["a.md"] == "alpha\n" and manifest["c.bin"]["skipped"] == "binary_or_non_utf8"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12), unique=True, max_size=30
    ),
    st.text(max_size=12),
)
def test_texts_file_finds_every_chunk_by_id(tmp_path_factory, ids: list[str], missing: str) -> None:
    folder = tmp_path_factory.mktemp("texts")
    ids = sorted(ids)
    lines = [text_line(Chunk(i, "s", "p", 1, 1, f"text of {i}\n", "0", "0")) for i in ids]  # as a build writes them
    (folder / "texts.jsonl").write_bytes(b"".join(lines))
    texts = TextsFile.open(folder)
    if not ids:
        assert texts is None
        return
    try:
        for i in ids:
            assert texts.find(i) == f"text of {i}\n"
        if missing not in ids:
            assert texts.find(missing) is None
    finally:
        texts.close()
