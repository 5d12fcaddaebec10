"""agentpack.io.hashing: canonical JSON and SHA-256 golden values, newline normalisation."""

from __future__ import annotations

import hashlib
import math

import pytest

from agentpack.io.hashing import (
    canonical_json,
    canonical_json_bytes,
    normalize_newlines,
    sha256_bytes,
    sha256_file,
    sha256_json,
    sha256_text,
    sha256_text_file,
)

VALUE = {"b": 1, "a": [1.0, "é", None, True, {"z": "\u2028", "y": -0.5}], "": "e"}


def test_canonical_json_golden():
    assert canonical_json(VALUE) == '{"":"e","a":[1.0,"é",null,true,{"y":-0.5,"z":"\u2028"}],"b":1}'
    assert canonical_json_bytes({"é": 1}) == b'{"\xc3\xa9":1}'
    assert canonical_json({"b": {"d": 1, "c": 2}, "a": []}) == '{"a":[],"b":{"c":2,"d":1}}'


def test_sha256_golden_values():
    assert sha256_bytes(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_json({}) == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"  # sha256("{}")
    assert sha256_json(VALUE) == "7510a7c35176de6be3ac9fa5b70416a8e9c713449763ec63c36235603290fdc2"
    assert sha256_text("line1\nline2\n") == "2751a3a2f303ad21752038085e2b8c5f98ecff61a2e4ebbd43506a941725be80"
    assert sha256_json(VALUE) == hashlib.sha256(canonical_json(VALUE).encode()).hexdigest()


def test_key_order_does_not_change_the_hash():
    assert sha256_json({"a": 1, "b": [1, 2]}) == sha256_json({"b": [1, 2], "a": 1})
    assert sha256_json([1, 2]) != sha256_json([2, 1])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(bad):
    with pytest.raises(ValueError):
        canonical_json({"x": bad})


def test_normalize_newlines():
    assert normalize_newlines("a\r\nb\rc\nd\r\n\r\n") == "a\nb\nc\nd\n\n"
    assert normalize_newlines("no newline") == "no newline"


def test_text_file_hash_normalises_crlf(tmp_path):
    lf, crlf, cr = tmp_path / "lf.txt", tmp_path / "crlf.txt", tmp_path / "cr.txt"
    lf.write_bytes("é\nline2\n".encode())
    crlf.write_bytes("é\r\nline2\r\n".encode())
    cr.write_bytes("é\rline2\r".encode())
    expected = sha256_text("é\nline2\n")
    assert sha256_text_file(lf) == sha256_text_file(crlf) == sha256_text_file(cr) == expected
    assert sha256_file(crlf) != sha256_file(lf)  # the byte hash does not normalise
    assert sha256_file(lf) == sha256_bytes(lf.read_bytes())


def test_file_hash_streams_large_files(tmp_path):
    big = tmp_path / "big.bin"
    data = bytes(range(256)) * 9000  # > 2 MiB chunks of 1 MiB
    big.write_bytes(data)
    assert sha256_file(big) == hashlib.sha256(data).hexdigest()


def test_sha256_small_equals_sha256_bytes_and_leaves_openssl_unloaded():
    import subprocess
    import sys

    from agentpack.io.hashing import sha256_bytes, sha256_small

    for data in (b"", b"manifest", bytes(range(256)) * 300):  # the last is over the 64 KiB limit
        assert sha256_small(data) == sha256_bytes(data)
    code = (
        "import sys; from agentpack.io.hashing import sha256_small; d = sha256_small(b'x' * 1000); "
        "print(d, 'hashlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [sha256_bytes(b"x" * 1000), "False"]
