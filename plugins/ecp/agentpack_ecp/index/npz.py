"""The arrays of an uncompressed ``.npz`` (what ``numpy.savez`` writes), read without numpy.

A query answers from the cache sidecars without importing numpy (0.1 s of a cold query): each
array is a ``memoryview`` over a memory map of the file, cast to its item type and shape, so
nothing is copied and only the pages a query touches are read. ``numpy.asarray`` turns one into
an array when numpy is there anyway (builds). Only what numpy writes for our caches is read:
stored (not deflated) members holding C-order arrays of bytes, booleans, little-endian integers
or floats; anything else gives ``None`` and the caller treats the cache as absent. Before a cast, each
array's header is checked: a shape of non-negative sizes whose product fits the bytes stored, and, for the
arrays a caller names in its ``layout``, the item types and the number of dimensions it reads (a damaged
header never reaches ``memoryview.cast`` or an index that cannot take it).
"""

from __future__ import annotations

import mmap
import re
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..pack.files import open_regular

_ITEM = {"|u1": "B", "|i1": "b", "|b1": "?", "<i4": "i", "<u4": "I", "<i8": "q", "<u8": "Q", "<f4": "f", "<f8": "d"}
_HEADER = re.compile(r"'descr':\s*'([^']+)',\s*'fortran_order':\s*(True|False),\s*'shape':\s*\(([^)]*)\)")
INTEGERS = frozenset({"<i4", "<u4", "<i8", "<u8"})
BYTES = frozenset({"|u1"})
FLOATS = frozenset({"<f4", "<f8"})
Layout = Mapping[str, tuple[frozenset[str], int]]
"""Array name -> (the ``descr`` values accepted, the number of dimensions)."""
_EOCD = b"PK\x05\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"


def read_npz(path: Path, layout: Layout | None = None) -> dict[str, memoryview] | None:
    """The arrays of the ``.npz`` at ``path`` by name; ``None`` when it is not one this module reads or an array
    named in ``layout`` has another item type or number of dimensions."""
    if sys.byteorder != "little":
        return None
    with open_regular(path) as handle:  # a FIFO in its place is refused, never waited on
        try:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return None
    view = memoryview(data)
    try:
        return _arrays(data, view, layout or {})
    except (struct.error, ValueError, IndexError):
        return None


def _arrays(data: mmap.mmap, view: memoryview, layout: Layout) -> dict[str, memoryview] | None:
    end = data.rfind(_EOCD, max(0, len(data) - 65558))
    if end < 0:
        return None
    count, _, central = struct.unpack_from("<HII", data, end + 10)
    arrays: dict[str, memoryview] = {}
    pos = central
    for _ in range(count):
        if data[pos : pos + 4] != _CENTRAL:
            return None
        (method,) = struct.unpack_from("<H", data, pos + 10)
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        (offset,) = struct.unpack_from("<I", data, pos + 42)
        name = bytes(data[pos + 46 : pos + 46 + name_len]).decode("utf-8")
        pos += 46 + name_len + extra_len + comment_len
        if method != 0 or offset == 0xFFFFFFFF or not name.endswith(".npy") or data[offset : offset + 4] != _LOCAL:
            return None
        local_name, local_extra = struct.unpack_from("<HH", data, offset + 26)
        array = _npy(view, offset + 30 + local_name + local_extra, layout.get(name[:-4]))
        if array is None:
            return None
        arrays[name[:-4]] = array
    return arrays


def _npy(view: memoryview, start: int, expected: tuple[frozenset[str], int] | None) -> memoryview | None:
    """The array of the ``.npy`` member starting at ``start`` (``None`` unless it is what ``expected`` says)."""
    if bytes(view[start : start + 6]) != b"\x93NUMPY":
        return None
    major = view[start + 6]
    if major == 1:
        (size,) = struct.unpack_from("<H", view, start + 8)
        body = start + 10 + size
    else:
        (size,) = struct.unpack_from("<I", view, start + 8)
        body = start + 12 + size
    match = _HEADER.search(bytes(view[body - size : body]).decode("latin-1"))
    if match is None or match.group(2) == "True" or match.group(1) not in _ITEM:
        return None
    shape = [int(n) for n in match.group(3).replace(",", " ").split()]
    if expected is not None and (match.group(1) not in expected[0] or len(shape) != expected[1]):
        return None
    if not 1 <= len(shape) <= 64 or min(shape) < 0:  # what memoryview.cast takes
        return None
    item: Any = _ITEM[match.group(1)]  # a struct format memoryview.cast takes (its stub lists literals)
    count = 1
    for n in shape:
        count *= n
    raw = view[body : body + count * struct.calcsize(item)]
    if len(raw) != count * struct.calcsize(item):  # a truncated member
        return None
    if len(shape) == 1:
        return raw.cast(item)
    return raw.cast(item, shape) if count else raw.cast(item)
