"""The term-by-chunk matrix of a build, computed once and shared by every index format.

``TermMatrix`` holds COO postings sorted by (term, chunk) with true term
frequencies, built from per-chunk ``Counter``s (consumed one at a time, so they
are never all in memory), plus each chunk's length in terms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class TermMatrix:
    terms: list[str]
    indptr: object
    doc: object
    tf: object
    doc_len: object

    @classmethod
    def from_counts(cls, counts: Iterable[Counter]) -> TermMatrix:
        """Consume ``counts`` (one Counter per chunk, possibly a generator) into arrays as it goes."""
        import numpy as np

        ids: dict[str, int] = {}
        id_parts, tf_parts, lengths_list = [], [], []
        for c in counts:
            id_parts.append(np.fromiter([ids.setdefault(k, len(ids)) for k in c], dtype=np.int32, count=len(c)))
            tf_parts.append(np.fromiter(c.values(), dtype=np.int32, count=len(c)))
            lengths_list.append(len(c))
        ndocs = len(lengths_list)
        lengths = np.array(lengths_list, dtype=np.int64)
        total = int(lengths.sum())
        term_ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int32)
        tfs = np.concatenate(tf_parts) if tf_parts else np.zeros(0, dtype=np.int32)
        del id_parts, tf_parts
        docs = np.repeat(np.arange(ndocs, dtype=np.int32), lengths)
        unsorted = list(ids)
        order = sorted(range(len(unsorted)), key=unsorted.__getitem__)
        rank = np.empty(len(unsorted), dtype=np.int32)
        rank[order] = np.arange(len(unsorted), dtype=np.int32)
        term_ids = rank[term_ids] if total else term_ids
        perm = np.lexsort((docs, term_ids))
        indptr = np.zeros(len(unsorted) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_ids, minlength=len(unsorted)), out=indptr[1:])
        doc_len = np.bincount(docs, weights=tfs, minlength=ndocs).astype(np.int64)
        return cls([unsorted[i] for i in order], indptr, docs[perm], tfs[perm], doc_len)

    def by_doc(self):
        """(indptr, term ids, tfs) grouped by chunk, terms ascending within a chunk."""
        import numpy as np

        term_of = np.repeat(np.arange(len(self.terms), dtype=np.int32), np.diff(self.indptr))
        perm = np.argsort(self.doc, kind="stable")
        indptr = np.zeros(len(self.doc_len) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.doc, minlength=len(self.doc_len)), out=indptr[1:])
        return indptr, term_of[perm], self.tf[perm]
