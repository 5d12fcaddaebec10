"""A report ``dci resolve`` only prints is streamed (each candidate's entry made as it is written, never all held),
and its text is byte for byte the text of the report built whole, as the command printed it before; so is the
text output, which reads only the first entries."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from dci_helpers import REFERENCE, write_skill

from agentpack.io.clock import FixedClock
from agentpack.io.envelope import Streamed, envelope
from agentpack_dci.report import Listing, build_report, render_text, split_report
from agentpack_dci.resolve import Resolver, ResolveRequest

AT = "2026-01-01T00:00:00Z"
WORDS = [
    "search",
    "web",
    "summarize",
    "document",
    "review",
    "code",
    "translate",
    "text",
    "extract",
    "table",
    "plan",
    "data",
    "report",
    "email",
]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dci" / "workspace"


def _generated(root: Path, count: int = 300) -> Path:
    """``count`` skills with contracts (some strict, some broken), compatibility lists and nested folders."""
    rng = random.Random(28)
    for i in range(count):
        words = rng.sample(WORDS, 2)
        contract = None
        if rng.random() < 0.7:
            caps = sorted({f"{rng.choice(WORDS)}-{rng.choice(WORDS)}" for _ in range(rng.randint(1, 4))})
            contract = f"DCI/1{'^strict' if rng.random() < 0.3 else ''} P({','.join(caps)})"
            if rng.random() < 0.05:
                contract = contract.replace("P(", "P(Bad Token,")
        write_skill(
            root,
            f"skills/g{i % 7}/{words[0]}-{words[1]}-{i}",
            description=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))).capitalize() + ".",
            contract=contract,
            compatibility=", ".join(rng.sample(["cli", "copilot", "codex"], 2)) if rng.random() < 0.3 else None,
        )
    return root


def _workspaces(tmp_path: Path) -> list[tuple[Path, list[str]]]:
    found = [(EXAMPLE, []), (_generated(tmp_path / "generated"), [])]
    if (REFERENCE / "pax-skills").is_dir():
        found.append((tmp_path / "empty", ["--skills-root", str(REFERENCE / "pax-skills")]))
        (tmp_path / "empty").mkdir()
    return found


def _whole(workspace: Path, roots: list[str], request: ResolveRequest) -> tuple[bool, dict]:
    """The report built whole, as the command built it before it streamed."""
    from agentpack.cli import clikit

    resolver = Resolver(
        workspace,
        host=clikit.host(),
        skills_roots=tuple(roots[1::2]),
        clock=FixedClock(AT),
        run_ids=lambda: "run-28",
        ephemeral_history=True,
    )
    resolution = resolver.resolve(request)
    return resolution.ok, build_report(resolution)


@pytest.mark.parametrize("listing", ["relevant", "all"])
def test_the_printed_report_is_the_text_of_the_whole_report(agentpack_cli, tmp_path, listing):
    request = ResolveRequest(
        required=["search-web", "summarize-document"],
        optional=["review-code"],
        query="search the web and summarize documents",
        decision="continue-with-partial",
        listing=listing,
    )
    for workspace, roots in _workspaces(tmp_path):
        args = ["dci", "resolve", "-w", str(workspace), *roots, "-r", "search-web,summarize-document"]
        args += ["--optional", "review-code", "--query", request.query, "--decision", "continue-with-partial"]
        args += ["--no-history", "--run-id", "run-28", "--at", AT, *(["--all-candidates"] if listing == "all" else [])]
        ok, whole = _whole(workspace, roots, request)
        assert len(whole["candidates"]) > (10 if workspace != EXAMPLE else 3), workspace  # several pieces
        report, extensions = split_report(whole)
        expected = json.dumps(
            envelope("dci resolve", ok, report=report, extensions=extensions), indent=2, ensure_ascii=False
        )
        streamed = agentpack_cli(*args, "--no-record", "-o", "json")
        assert streamed.stdout == expected + "\n", workspace
        # recorded, the report is built whole for the run store: the same text
        recorded = agentpack_cli(*args, "--store", str(tmp_path / "runs.sqlite"), "-o", "json")
        assert recorded.stdout == streamed.stdout and recorded.exit_code == streamed.exit_code
        text = agentpack_cli(*args, "--no-record")
        assert text.stdout == render_text(whole), workspace
        # a .json --report is streamed too: the text atomic_write_json gives the whole report (or its origin half)
        for extra, value in ((["--report-extensions"], whole), ([], report)):
            out = tmp_path / "report.json"
            written = agentpack_cli(*args, "--no-record", "--report", str(out), *extra)
            assert written.exit_code == text.exit_code and written.stdout == text.stdout
            assert out.read_text() == json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_a_streamed_report_makes_its_entries_when_they_are_read(tmp_path):
    workspace = _generated(tmp_path, 60)
    resolution = Resolver(workspace, clock=FixedClock(AT), ephemeral_history=True).resolve(
        ResolveRequest(required=["search-web"], listing="all")
    )
    streamed = build_report(resolution, stream=True)
    listing = streamed["candidates"]
    assert isinstance(listing, Listing) and len(listing) == 60
    whole = build_report(resolution)
    assert list(listing) == whole["candidates"] == list(listing)  # made anew each time it is read
    assert listing[:3] == whole["candidates"][:3]
    report, extensions = split_report(streamed)
    assert isinstance(report["candidates"], Streamed) and isinstance(extensions["candidates"], Streamed)
    expected = split_report(whole)
    assert list(report["candidates"].items) == expected[0]["candidates"]
    assert list(extensions["candidates"].items) == expected[1]["candidates"]
    assert {k: v for k, v in report.items() if k != "candidates"} == {
        k: v for k, v in expected[0].items() if k != "candidates"
    }
