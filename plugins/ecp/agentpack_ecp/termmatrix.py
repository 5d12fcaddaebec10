"""The term-by-chunk matrix of a build, computed once and shared by every index format.

``TermMatrix`` holds COO postings sorted by (term, chunk) with true term
frequencies, built from per-chunk ``Counter``s with C-level loops (no Python
loop per posting), plus each chunk's length in terms.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain


@dataclass
class TermMatrix:
    terms: list[str]
    indptr: object
    doc: object
    tf: object
    doc_len: object

    @classmethod
    def from_counts(cls, counts: list[Counter]) -> TermMatrix:
        import numpy as np

        ids: dict[str, int] = {}
        id_lists = [[ids.setdefault(k, len(ids)) for k in c] for c in counts]
        lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
        total = int(lengths.sum())
        term_ids = np.fromiter(chain.from_iterable(id_lists), dtype=np.int32, count=total)
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counts), dtype=np.int32, count=total)
        docs = np.repeat(np.arange(len(counts), dtype=np.int32), lengths)
        unsorted = list(ids)
        order = sorted(range(len(unsorted)), key=unsorted.__getitem__)
        rank = np.empty(len(unsorted), dtype=np.int32)
        rank[order] = np.arange(len(unsorted), dtype=np.int32)
        term_ids = rank[term_ids] if total else term_ids
        perm = np.lexsort((docs, term_ids))
        indptr = np.zeros(len(unsorted) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_ids, minlength=len(unsorted)), out=indptr[1:])
        doc_len = np.bincount(docs, weights=tfs, minlength=len(counts)).astype(np.int64)
        return cls([unsorted[i] for i in order], indptr, docs[perm], tfs[perm], doc_len)

    def by_doc(self):
        """(indptr, term ids, tfs) grouped by chunk, terms ascending within a chunk."""
        import numpy as np

        term_of = np.repeat(np.arange(len(self.terms), dtype=np.int32), np.diff(self.indptr))
        perm = np.argsort(self.doc, kind="stable")
        indptr = np.zeros(len(self.doc_len) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.doc, minlength=len(self.doc_len)), out=indptr[1:])
        return indptr, term_of[perm], self.tf[perm]
