"""The term-by-chunk matrix of a batch of chunks, computed once and shared by every index format.

``TermMatrix`` holds COO postings sorted by (term, chunk) with true term
frequencies, built from the chunk texts of one batch of a streaming build (``from_texts``;
``stream.py``) or of the chunks an incremental build adds, plus each chunk's length in terms.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .tokenize import WORD_CHARS, raw_variants, tokenize

_SPACES = bytes(c if chr(c) in WORD_CHARS else 32 for c in range(256))
"""A byte table keeping the bytes of ``TOKEN_RE``'s class and making every other byte a space."""


@dataclass
class TermMatrix:
    terms: list[str]
    indptr: Any
    doc: Any
    tf: Any
    doc_len: Any

    @classmethod
    def from_texts(cls, docs: Iterable[tuple[str, str]]) -> tuple[list[int], TermMatrix]:
        """The matrix of ``(text, path)`` docs: each text's term counts plus its path's terms once, as
        ``term_counts`` and ``tokenize`` give them; a doc whose text has no term is left out (the
        indexes of the docs kept are returned with the matrix).

        Per doc, Python only splits and counts the raw tokens and looks up their ids (C calls: the
        text's bytes with every byte outside ``[A-Za-z0-9_]`` made a space, split, ``Counter``: the
        tokens of ``TOKEN_RE``, faster); which terms each raw token stands for, the sums and the sorting
        are done once for all the docs, with numpy.
        """
        import numpy as np

        raw_ids: dict[bytes, int] = {}
        raw_terms: list[tuple[str, ...]] = []
        path_ids: dict[str, int] = {}
        path_terms: list[tuple[str, ...]] = []
        ids, counts, doc_path, sizes = array("i"), array("i"), array("i"), array("i")
        for text, path in docs:
            raw = Counter(text.encode("utf-8", "surrogatepass").translate(_SPACES).split())
            for token in [t for t in raw if t not in raw_ids]:
                raw_ids[token] = len(raw_terms)
                raw_terms.append(raw_variants(token.decode("ascii")))
            ids.fromlist(list(map(raw_ids.__getitem__, raw)))  # faster than extend() from an iterator
            counts.fromlist(list(raw.values()))
            sizes.append(len(raw))
            pid = path_ids.get(path)
            if pid is None:
                pid = path_ids[path] = len(path_terms)
                path_terms.append(tuple(tokenize(path, remember=False)))
            doc_path.append(pid)
        del raw_ids
        term_ids: dict[str, int] = {}
        raw_flat, raw_ptr = _flatten(raw_terms, term_ids)
        path_flat, path_ptr = _flatten(path_terms, term_ids)
        del raw_terms, path_terms
        unsorted = list(term_ids)
        order = sorted(range(len(unsorted)), key=unsorted.__getitem__)
        rank = np.empty(len(unsorted), dtype=np.int64)
        rank[order] = np.arange(len(unsorted), dtype=np.int64)
        raw_of = np.frombuffer(ids, dtype=np.int32)
        per_doc = np.frombuffer(sizes, dtype=np.int32)
        doc_of = np.repeat(np.arange(len(per_doc), dtype=np.int32), per_doc)
        has_terms = np.zeros(len(per_doc), dtype=bool)
        has_terms[doc_of[(np.diff(raw_ptr) > 0)[raw_of]]] = True
        kept = np.flatnonzero(has_terms)
        new_doc = (np.cumsum(has_terms) - 1).astype(np.int64)
        ndocs = max(len(kept), 1)
        # every (raw token of a doc) entry becomes one entry per term it stands for: key = term rank, doc
        term, entry = _expand(raw_flat, raw_ptr, raw_of)
        key = rank[term] * ndocs + new_doc[doc_of[entry]]
        tfs = np.frombuffer(counts, dtype=np.int32)[entry]
        del term, entry, doc_of
        term, entry = _expand(path_flat, path_ptr, np.frombuffer(doc_path, dtype=np.int32)[kept])
        key = np.concatenate([key, rank[term] * ndocs + entry])
        tfs = np.concatenate([tfs, np.ones(len(entry), dtype=np.int32)])
        del term, entry
        perm = np.argsort(key, kind="stable")
        key, tfs = key[perm], tfs[perm]
        del perm
        first = np.flatnonzero(np.diff(key, prepend=-1)) if len(key) else np.zeros(0, dtype=np.int64)
        tf = np.add.reduceat(tfs, first).astype(np.int32) if len(first) else np.zeros(0, dtype=np.int32)
        term_of = key[first]
        del key, tfs, first
        doc = (term_of % ndocs).astype(np.int32)
        term_of //= ndocs
        # a term only in the path of a chunk left out (no term in its text) has no posting: not in the vocabulary
        per_term = np.bincount(term_of, minlength=len(unsorted))
        present = np.flatnonzero(per_term).tolist()
        indptr = np.zeros(len(present) + 1, dtype=np.int64)
        np.cumsum(per_term[present], out=indptr[1:])
        doc_len = np.bincount(doc, weights=tf, minlength=len(kept)).astype(np.int64)
        matrix = cls([unsorted[order[r]] for r in present], indptr, doc, tf, doc_len)
        return kept.tolist(), matrix

    def by_doc(self):
        """(indptr, term ids, tfs) grouped by chunk, terms ascending within a chunk."""
        import numpy as np

        term_of = np.repeat(np.arange(len(self.terms), dtype=np.int32), np.diff(self.indptr))
        perm = np.argsort(self.doc, kind="stable")
        indptr = np.zeros(len(self.doc_len) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.doc, minlength=len(self.doc_len)), out=indptr[1:])
        return indptr, term_of[perm], self.tf[perm]


def _flatten(groups: list[tuple[str, ...]], term_ids: dict[str, int]):
    """``groups`` of terms as (term ids, start of each group), giving each new term the next id."""
    import numpy as np

    flat = [term_ids.setdefault(t, len(term_ids)) for group in groups for t in group]
    starts = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(group) for group in groups], out=starts[1:])
    return np.array(flat, dtype=np.int32), starts


def _expand(flat, starts, group_of):
    """For entries naming a group each (``group_of``): the term ids of every entry's group, and for each
    of them the entry it came from (int32 where it fits: this runs over every token entry of a corpus)."""
    import numpy as np

    width = np.diff(starts)[group_of]
    entry = np.repeat(np.arange(len(group_of), dtype=np.int32), width)
    at = np.repeat(starts[group_of] - (np.cumsum(width) - width), width)
    at += np.arange(len(entry), dtype=np.int64)
    return flat[at], entry
