"""The cache sidecars read without numpy (``index/npz.py``), and the keyword runtime over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentpack_ecp.index.build import build_pack
from agentpack_ecp.index.chunkstore import CACHE_NAME
from agentpack_ecp.index.npz import read_npz
from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.query.response import query_pack
from agentpack_ecp.query.retrieve import IndexCache

ARRAYS = {
    "ints": np.arange(7, dtype=np.int64),
    "small": np.array([3, -1], dtype=np.int32),
    "floats": np.arange(6, dtype=np.float32).reshape(2, 3),
    "doubles": np.array([0.5], dtype=np.float64),
    "flags": np.array([True, False]),
    "text": np.frombuffer("héllo".encode(), dtype=np.uint8),
    "empty": np.zeros(0, dtype=np.int64),
}


def test_reads_what_numpy_savez_writes(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **ARRAYS)
    arrays = read_npz(path)
    assert arrays is not None and set(arrays) == set(ARRAYS)
    for name, expected in ARRAYS.items():
        got = np.asarray(arrays[name])
        assert got.dtype == expected.dtype and got.shape == expected.shape and (got == expected).all(), name
    assert arrays["text"].tobytes().decode() == "héllo"


@pytest.mark.parametrize(
    "content", [b"", b"not a zip at all", b"PK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00" + b"\x00" * 10]
)
def test_anything_else_reads_as_absent(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "a.npz"
    path.write_bytes(content)
    assert read_npz(path) is None


def test_compressed_or_big_endian_members_read_as_absent(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez_compressed(path, ints=ARRAYS["ints"])
    assert read_npz(path) is None
    np.savez(path, ints=ARRAYS["ints"].astype(">i8"))
    assert read_npz(path) is None


def test_a_cache_without_doc_lengths_ranks_alike(example_pack: Path) -> None:
    """A cache written before doc lengths were kept: the lengths are summed from the postings."""
    build_pack(example_pack, index_ids=["corpus-keyword"], rebuild=True)
    request = {"question": "prediction cache fingerprint", "mode": "keyword", "top_k": 8}
    expected = query_pack(load_pack(example_pack), request, cache=IndexCache())["citations"]
    path = example_pack / "expert" / "context" / "indexes" / "corpus-keyword" / CACHE_NAME
    with np.load(path) as data:
        assert "doc_len" in data.files
        arrays = {name: data[name] for name in data.files if name != "doc_len"}
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)
    assert query_pack(load_pack(example_pack), request, cache=IndexCache())["citations"] == expected
