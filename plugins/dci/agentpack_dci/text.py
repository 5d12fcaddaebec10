"""The one tokenizer behind ``S_desc``, ``S_namepath`` and provisional capabilities.

lowercase -> split on every non-alphanumeric character (so hyphen, underscore
and slash are boundaries) -> drop our fixed English stopword list -> stem with
the original Porter algorithm (``snowballstemmer``'s ``"porter"``, not NLTK's
default "NLTK extensions" mode and not Snowball English, which differ on words
such as *dying*, *lying*, *skies* and *news*).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from functools import lru_cache
from pathlib import Path

STOPWORDS_FILE = "english-stopwords.v1.txt"
_SPLIT = re.compile(r"[\W_]+")
_SNOWBALL = "_agentpack_dci_snowballstemmer"
"""The private name under which snowballstemmer's directory is imported (see ``_porter_class``)."""


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    # beside the module, not through importlib.resources (~4 ms to import and set up per cold process)
    text = (Path(__file__).parent / "data" / STOPWORDS_FILE).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _porter_class() -> type:
    """snowballstemmer's ``PorterStemmer`` without running the package's ``__init__``.

    That ``__init__`` imports the stemmers of every language (~7 ms, a twentieth of a cold ``dci
    resolve``), even for ``import snowballstemmer.porter_stemmer``. Found but not run, the package's
    directory is mounted as a private package of its own, so only ``porter_stemmer`` and the two
    modules it imports relatively (``basestemmer``, ``among``) load: the same code, so the same stems.
    When snowballstemmer is already loaded, or is not a directory on disk, the plain import does.
    """
    if "snowballstemmer" not in sys.modules:
        spec = importlib.util.find_spec("snowballstemmer")  # locates the package without importing it
        if spec is not None and spec.submodule_search_locations:
            if _SNOWBALL not in sys.modules:
                package = types.ModuleType(_SNOWBALL)
                package.__path__ = list(spec.submodule_search_locations)
                sys.modules[_SNOWBALL] = package
            return importlib.import_module(f"{_SNOWBALL}.porter_stemmer").PorterStemmer
    from snowballstemmer.porter_stemmer import PorterStemmer  # type: ignore[import-untyped]  # ships no types

    return PorterStemmer


@lru_cache(maxsize=1)
def _stemmer():
    return _porter_class()()


class _Stems(dict):
    """Porter stems by lowercase word, filled on first use (vocabularies are small; bounded anyway)."""

    def __missing__(self, word: str) -> str:
        # Porter rewrites letter suffixes only: a number is its own stem (tested), no need to run it
        found = word if word.isdigit() and word.isascii() else _stemmer().stemWord(word)
        if len(self) < 200_000:
            self[word] = found
        return found


_STEMS = _Stems()


def forget_stems() -> None:
    """Empty the stem memo (a cold start, for benchmarks)."""
    _STEMS.clear()


def stem(word: str) -> str:
    """Porter stem of one lowercase word."""
    return _STEMS[word]


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` in order (duplicates kept, for term frequencies)."""
    stop = stopwords()
    stems = _STEMS
    return [stems[w] for w in _SPLIT.split(text.lower()) if w and w not in stop]


def joined_stem(capability: str) -> str:
    """A capability id in provisional form: its tokens stemmed and re-joined with '-'."""
    return "-".join(tokenize(capability))
