"""Retrieval quality: code-aware fields of a chunk, field-aware keyword ranking, weighted fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentpack import hookimpl
from agentpack.io.errors import AgentpackError
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.index.fields import chunk_fields, field_bonuses
from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.query.fuse import fuse
from agentpack_ecp.query.rerank import Reranker
from agentpack_ecp.query.response import query_pack
from agentpack_ecp.query.retrieve import Hit

PYTHON = '''"""Rotating log files."""

class RotatingFileHandler(BaseHandler):
    """Roll the file over at a size."""

    async def do_rollover(self):
        pass
'''


def test_fields_of_code_and_prose() -> None:
    fields = chunk_fields("logging/handlers.py", PYTHON)
    assert fields["path"] == {"logging", "handlers", "py"}
    assert {"rotatingfilehandler", "rotating", "file", "handler", "do_rollover", "rollover"} <= fields["names"]
    assert "basehandler" not in fields["names"]  # a base class is a use, not a definition
    assert {"rotating", "log", "files", "roll", "size"} <= fields["docstrings"]
    markdown = "# Caching\n\ntext\n\n## HTTP cache\n"
    assert fields_of(markdown)["headings"] == {"caching", "http", "cache"}
    rst = "Finding files\n=============\n\nbody\n"
    assert fields_of(rst)["headings"] == {"finding", "files"}
    roff = ".TH HOSTS 5\n.SH NAME\nhosts \\- static table lookup for hostnames\n.SH DESCRIPTION\nbody\n"
    assert {"hosts", "static", "table", "lookup", "hostnames", "description"} <= fields_of(roff)["headings"]


def fields_of(text: str) -> dict[str, set[str]]:
    return chunk_fields("doc.txt", text)


def field_bonus(terms: list[str], path: str, text: str) -> float:
    return sum(field_bonuses(terms, path, text).values())


def test_field_bonus_is_the_weighted_share_of_the_query_terms() -> None:
    assert field_bonus([], "a.py", "x") == 0.0
    assert field_bonus(["zebra"], "a.py", "zebra") == 0.0  # the body alone gives no bonus
    assert field_bonus(["handlers", "zebra"], "logging/handlers.py", "") > 0.0
    whole = field_bonus(["handlers"], "logging/handlers.py", "")
    assert whole > field_bonus(["handlers", "zebra"], "x/handlers.py", "")


def test_keyword_ranking_prefers_the_file_whose_fields_match(tmp_path: Path) -> None:
    """Two files with the same body words: the one whose path and definitions name the query ranks first."""
    from agentpack_ecp.pack.scaffold import scaffold

    root = tmp_path / "pack"
    scaffold(root)
    docs = root / "expert" / "sources" / "docs"
    for path in list(docs.iterdir()):
        path.unlink()
    body = "the scheduler runs queued events at their times and keeps the events in order\n" * 3
    (docs / "alpha.md").write_text(body)
    (docs / "sched.md").write_text("# Event scheduler\n\n" + body)
    build_pack(root)
    response = query_pack(load_pack(root), {"question": "event scheduler", "mode": "keyword", "top_k": 2})
    assert [c["artifact_path"] for c in response["citations"]] == ["sched.md", "alpha.md"]


def _hit(key: str, score: float) -> Hit:
    return Hit(key, score, "ix", {"chunk_id": key}, "", {})


def test_weighted_fusion() -> None:
    keyword = [_hit("a", 3.0), _hit("b", 2.0)]
    vector = [_hit("b", 0.9), _hit("a", 0.8)]
    assert [h.key for h in fuse([keyword, vector], 2)] == ["a", "b"]  # a tie broken by key
    assert [h.key for h in fuse([keyword, vector], 2, [1.0, 0.5])] == ["a", "b"]
    assert [h.key for h in fuse([keyword, vector], 2, [0.5, 1.0])] == ["b", "a"]
    assert fuse([keyword, []], 1, [0.5, 1.0]) == keyword[:1]  # one ranking passes through


class ShortestFirst:
    """A plugin registering a reranker that prefers the shortest text."""

    @staticmethod
    @hookimpl
    def agentpack_ecp_register_rerankers(register) -> None:
        register(Reranker("shortest", lambda question, texts: [-len(t) for t in texts]))


def test_a_registered_reranker_reorders_the_hits(tmp_path: Path) -> None:
    from agentpack.kernel.host import Host
    from agentpack.kernel.packtypes import QueryRequest
    from agentpack.kernel.plugins import create_plugin_manager
    from agentpack_ecp.pack.scaffold import scaffold

    root = tmp_path / "pack"
    scaffold(root)
    docs = root / "expert" / "sources" / "docs"
    (docs / "long.md").write_text("# Widgets\n\nwidgets " + "and more widgets " * 40 + "\n")
    (docs / "short.md").write_text("widgets\n")
    build_pack(root)
    host = Host(create_plugin_manager(plugins=(ShortestFirst,)))
    pack = host.load(root)

    def paths(**options: str) -> list[str]:
        response = host.query(pack, QueryRequest(question="widgets", top_k=2, options=options))
        return [c.path for c in response.citations]

    assert paths() == ["long.md", "short.md"]
    assert paths(rerank="shortest") == ["short.md", "long.md"]
    with pytest.raises(AgentpackError, match="unknown reranker 'nope' \\(shortest\\)"):
        paths(rerank="nope")
