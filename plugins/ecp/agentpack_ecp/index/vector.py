"""``vector-index-v1`` (spec 6.1.3): vectors as JSONL (dense or sparse), ``.npy`` or raw ``.bin``.

Vectors are L2-normalised at build time for ``metric: cosine``; query vectors are
normalised too. Binary payloads are row-major with rows in ``chunk_id_lex``
order (our chunk order) unless ``chunk_id_order: chunks_jsonl`` says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.io.paths import resolve_under

from ..pack.files import load_json_payload, open_regular
from ..pack.spec import MAX_DIMENSIONS
from .chunkstore import CHUNKS_NAME, DocTable, load_cache, read_jsonl, read_texts

FORMAT = "vector-index-v1"
FORMATS = {".jsonl": ("sparse-jsonl-v1", "dense-jsonl-v1"), ".npy": ("dense-npy-v1",), ".bin": ("dense-bin-v1",)}


def vector_config(entry: dict[str, Any]) -> dict[str, Any]:
    """The ``config.vector`` of an index from its manifest entry (defaults: cosine, float32 ``vectors.npy``)."""
    cfg = dict(entry)
    path = str(cfg.get("vectors_path") or "vectors.npy")
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise AgentpackError(f"vector.vectors_path '{path}' must end in .jsonl, .npy or .bin")
    fmt = str(cfg.get("vector_format") or FORMATS[suffix][0])
    if fmt not in FORMATS[suffix]:
        raise AgentpackError(
            f"vector.vector_format '{fmt}' does not fit '{path}' (expected {' or '.join(FORMATS[suffix])})"
        )
    metric = str(cfg.get("metric") or "cosine")
    if metric not in ("cosine", "dot"):
        raise AgentpackError(f"vector.metric must be cosine or dot (got '{metric}')")
    out = {"metric": metric, "vectors_path": path, "vector_format": fmt}
    if fmt.startswith("dense-") and not fmt.endswith("jsonl-v1"):
        out.update(
            dtype=str(cfg.get("dtype") or "float32"),
            endianness=str(cfg.get("endianness") or "little"),
            encoding="row-major",
            chunk_id_order=str(cfg.get("chunk_id_order") or "chunk_id_lex"),
        )
        if out["dtype"] not in ("float32", "float64") or out["endianness"] not in ("little", "big"):
            raise AgentpackError("vector.dtype must be float32/float64 and vector.endianness little/big")
        if out["chunk_id_order"] not in ("chunk_id_lex", "chunks_jsonl"):
            raise AgentpackError("vector.chunk_id_order must be chunk_id_lex or chunks_jsonl")
    return out


def _dtype(cfg: dict[str, Any]):
    import numpy as np

    return np.dtype(
        ("<" if cfg.get("endianness", "little") == "little" else ">")
        + ("f4" if cfg.get("dtype", "float32") == "float32" else "f8")
    )


class PayloadWriter:
    """The payload written row block by row block (``.npy``: its header rewritten with the final shape at the
    end; numpy pads it so the length does not change), bytes equal to writing the whole matrix at once."""

    def __init__(self, out: Path, cfg: dict[str, Any], dims: int) -> None:
        self.target = out / cfg["vectors_path"]
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.fmt, self.dtype, self.dims, self.rows = cfg["vector_format"], _dtype(cfg), dims, 0
        self.handle = open(self.target, "wb")  # noqa: SIM115 (closed by close())
        if self.fmt == "dense-npy-v1":
            self._header()

    def _header(self) -> int:
        import numpy as np

        fmt = np.lib.format
        header = {"descr": fmt.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (self.rows, self.dims)}
        fmt.write_array_header_1_0(self.handle, header)
        return self.handle.tell()

    def add(self, chunk_ids: list[str], matrix) -> None:
        """Rows for ``chunk_ids`` (lexicographic order, after the rows added before)."""
        import numpy as np

        self.rows += len(matrix)
        if self.fmt in ("dense-npy-v1", "dense-bin-v1"):
            self.handle.write(np.ascontiguousarray(matrix, dtype=self.dtype).tobytes())
            return
        lines = []
        for cid, row in zip(chunk_ids, matrix, strict=False):
            vector: list[Any]
            if self.fmt == "sparse-jsonl-v1":
                nz = np.flatnonzero(row)
                vector = [[int(i), round(float(row[i]), 7)] for i in nz]
            else:
                vector = [round(float(v), 7) for v in row]
            lines.append(json.dumps({"chunk_id": cid, "vector": vector}, separators=(",", ":")) + "\n")
        self.handle.write("".join(lines).encode("utf-8"))

    def close(self) -> None:
        if self.fmt == "dense-npy-v1":
            end = self.handle.tell()
            self.handle.seek(0)
            self._header()
            self.handle.seek(end)
        self.handle.close()


def write(out: Path, cfg: dict[str, Any], chunk_ids: list[str], matrix) -> None:
    """Write the payload; ``chunk_ids`` are in lexicographic order, rows of ``matrix`` match them."""
    writer = PayloadWriter(out, cfg, matrix.shape[1])
    writer.add(chunk_ids, matrix)
    writer.close()


def check_dimensions(dims: Any, where: str = "embedding.dimensions") -> int:
    """``dims`` as an int in 1..``MAX_DIMENSIONS``; ``AgentpackError`` otherwise (before anything is allocated)."""
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= MAX_DIMENSIONS:
        raise AgentpackError(f"{where} must be an integer from 1 to {MAX_DIMENSIONS} (got {dims!r})")
    return dims


def check_binary(path: Path, cfg: dict[str, Any], rows: int, dims: int) -> str | None:
    """Why the ``.npy``/``.bin`` payload at ``path`` does not hold a ``rows`` x ``dims`` matrix of the
    configured dtype (``None`` when it does). Reads the ``.npy`` header only."""
    import numpy as np

    want = _dtype(cfg)
    try:
        size = path.stat().st_size
        if path.suffix.lower() == ".bin":
            if size != rows * dims * want.itemsize:
                return (
                    f"holds {size} bytes, expected {rows} x {dims} {want.name} values "
                    f"({rows * dims * want.itemsize} bytes)"
                )
            return None
        with open_regular(path) as handle:
            fmt = np.lib.format
            version = fmt.read_magic(handle)
            read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read_header(handle)
            offset = handle.tell()
    except (OSError, ValueError, EOFError) as exc:
        return f"is not a valid .npy file ({exc})"
    if fortran:
        return "is in Fortran order; vector-index-v1 payloads are row-major"
    if tuple(shape) != (rows, dims):
        return f"has shape {tuple(shape)}, expected ({rows}, {dims})"
    if dtype.kind != "f" or dtype.itemsize != want.itemsize or (dtype.byteorder not in ("=", "|") and dtype != want):
        return f"holds {dtype.str} values, the index declares {want.str}"
    if size < offset + rows * dims * dtype.itemsize:
        return f"is truncated ({size} bytes, {offset + rows * dims * dtype.itemsize} expected)"
    return None


def read_payload(index_dir: Path, cfg: dict[str, Any], dims: int, row_ids: list[str]):
    """The matrix, rows aligned with ``row_ids``; ``AgentpackError`` for a payload that does not fit."""
    import numpy as np

    rel = str(cfg.get("vectors_path") or "vectors.jsonl")
    path = resolve_under(index_dir, rel)
    if not path.is_file():
        raise AgentpackError(f"vector payload {rel} not found")
    check_dimensions(dims, "config.embedding.dimensions")
    fmt = str(cfg.get("vector_format") or "")
    if path.suffix in (".npy", ".bin"):
        problem = check_binary(path, cfg, len(row_ids), dims)
        if problem:
            raise AgentpackError(f"{rel} {problem}", hint="run agentpack ecp build")
        if path.suffix == ".npy":
            return np.load(path, mmap_mode="r", allow_pickle=False)
        return np.fromfile(path, dtype=_dtype(cfg)).reshape(len(row_ids), dims)
    position: dict[Any, int] = {cid: i for i, cid in enumerate(row_ids)}
    matrix = np.zeros((len(row_ids), dims), dtype=np.float32)
    with open_regular(path) as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = jsonio.loads(line, file=rel)
                row = position.get(record.get("chunk_id")) if isinstance(record, dict) else None
                if row is not None:
                    _fill(matrix, row, record.get("vector"), dims, fmt)
            except (AgentpackError, ValueError, TypeError) as exc:
                message = exc.message if isinstance(exc, AgentpackError) else str(exc)
                raise AgentpackError(f"{rel}:{n}: {message}") from None
    return matrix


def _fill(matrix, row: int, vec: Any, dims: int, fmt: str) -> None:
    """One JSONL vector (dense numbers or sparse ``[index, value]`` pairs) into ``matrix[row]``."""
    if not isinstance(vec, list):
        raise ValueError("vector must be a list")
    if (vec and isinstance(vec[0], list)) or fmt == "sparse-jsonl-v1":
        for pair in vec:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)):
                raise ValueError("a sparse vector entry must be [index, value]")
            if not 0 <= pair[0] < dims:
                raise ValueError(f"sparse index {pair[0]} outside 0..{dims - 1}")
            matrix[row, pair[0]] = float(pair[1])
    else:
        if len(vec) != dims:
            raise ValueError(f"vector has {len(vec)} values, expected {dims}")
        matrix[row] = vec


def coerce_query_vector(value: Any, dims: int):
    """A dense, L2-normalised query vector from a dense list or sparse ``[index, value]`` pairs."""
    import numpy as np

    if not isinstance(value, list) or not value:
        raise AgentpackError("query_vector must be a non-empty list (dense numbers or [index, value] pairs)")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        if len(value) != dims:
            raise AgentpackError(f"query_vector has {len(value)} dimensions, the index has {dims}")
        vec = np.asarray(value, dtype=np.float32)
    else:
        vec = np.zeros(dims, dtype=np.float32)
        seen = set()
        for pair in value:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)):
                raise AgentpackError("a sparse query_vector entry must be [index, value]")
            if not 0 <= pair[0] < dims or pair[0] in seen:
                raise AgentpackError(f"sparse query_vector index {pair[0]} is out of range or repeated")
            seen.add(pair[0])
            vec[pair[0]] = float(pair[1])
    if not np.isfinite(vec).all():
        raise AgentpackError("query_vector holds a NaN or infinite value")
    norm = float(np.linalg.norm(vec))
    if norm == 0:
        raise AgentpackError("query_vector is all zeros")
    return vec / norm


class VectorIndex:
    kind = "vector"

    def __init__(self, index_dir: Path, head: dict[str, Any], matrix, docs: DocTable) -> None:
        self.index_dir = index_dir
        self.head = head
        self.matrix = matrix
        self.docs = docs
        config = head.get("config") or {}
        self.embedding = config.get("embedding") or {}
        self.dimensions = int(self.embedding.get("dimensions") or 0)

    @classmethod
    def load(cls, index_dir: Path, data_path: Path) -> VectorIndex:
        import numpy as np

        cache = load_cache(index_dir)
        if cache is not None and "chunk_ids" in cache:
            head = json.loads(cache["head"].tobytes())
            docs = DocTable.from_cache(index_dir, cache)
            doc_ids = cache["chunk_ids"].tobytes().decode("utf-8").split("\n") if len(cache["chunk_ids"]) else []
        else:
            head = load_json_payload(data_path, data_path.name)
            if not isinstance(head, dict):
                raise AgentpackError(f"{data_path.name}: not a vector-index-v1 object")
            documents = head.pop("documents", None) or {}
            chunks_path = index_dir / CHUNKS_NAME
            records = read_jsonl(chunks_path) if chunks_path.is_file() else []
            known = {r.get("chunk_id") for r in records}
            for cid, meta in documents.items():
                if cid not in known:
                    records.append(
                        {
                            "chunk_id": cid,
                            "source_id": meta.get("source_id"),
                            "artifact_path": meta.get("path"),
                            "uri": "",
                            "revision": {},
                            "loc": {"start_line": meta.get("start_line", 1), "end_line": meta.get("end_line", 1)},
                            "chunk_hash": meta.get("chunk_sha256") or "",
                        }
                    )
            docs = DocTable.from_records(index_dir, records, read_texts(index_dir))
            doc_ids = [r["chunk_id"] for r in records]
        if not doc_ids:
            raise AgentpackError(
                "not built yet: the index lists no chunk (a placeholder)", hint="run agentpack ecp build"
            )
        config = head.get("config") or {}
        vcfg = config.get("vector") or {}
        dims = check_dimensions((config.get("embedding") or {}).get("dimensions"), "config.embedding.dimensions")
        binary = Path(str(vcfg.get("vectors_path") or "")).suffix.lower() in (".npy", ".bin")
        lex = binary and vcfg.get("chunk_id_order", "chunk_id_lex") == "chunk_id_lex"
        row_ids = sorted(doc_ids) if lex else doc_ids
        matrix: Any = np.asarray(read_payload(index_dir, vcfg, dims, row_ids), dtype=np.float32)
        if not np.isfinite(matrix).all():
            raise AgentpackError(
                f"{vcfg.get('vectors_path')} holds a NaN or infinite value", hint="run agentpack ecp build"
            )
        if row_ids != doc_ids:
            order = {cid: i for i, cid in enumerate(row_ids)}
            matrix = matrix[np.array([order[cid] for cid in doc_ids], dtype=np.int64)]
        if vcfg.get("metric", "cosine") == "cosine" and len(matrix):
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = matrix / np.where(norms > 0, norms, 1.0)
        return cls(index_dir, head, matrix, docs)

    def search(self, query, k: int, mask) -> list[tuple[int, float]]:
        import numpy as np

        if not len(self.matrix):
            return []
        # einsum's own loop, not BLAS: a threaded BLAS matrix-vector product wakes its threads for every
        # query, which costs more than the product itself (5 ms instead of 1 ms on a busy machine)
        scores = np.einsum("ij,j->i", self.matrix, query)
        if mask is not None:
            scores[~np.asarray(mask, dtype=bool)] = 0.0
        return top_k(scores, k)


def top_k(scores, k: int) -> list[tuple[int, float]]:
    """The ``k`` best positive scores, best first, ties broken by doc order (chunk id order)."""
    import numpy as np

    positive = np.flatnonzero(scores > 0)
    if not len(positive):
        return []
    if len(positive) > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        positive = positive[part]
    ranked = sorted(positive.tolist(), key=lambda d: (-float(scores[d]), d))
    return [(d, float(scores[d])) for d in ranked[:k]]
