import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SAMPLE_SRC = Path(__file__).parents[1] / "plugins" / "agentpack_sample"
MCP_SKILLS_SERVER = Path(__file__).parent / "mcpskills" / "server.py"


@pytest.fixture(scope="session")
def skills_server():
    """``tests/core/mcpskills/server.py`` as a module: ``build(root, breaks, page_size)`` gives an SDK server of
    the skills under ``root``, breaking the SEP-2640 rules named in ``breaks``."""
    pytest.importorskip("mcp")
    spec = importlib.util.spec_from_file_location("mcpskills_server", MCP_SKILLS_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def sample_plugin():
    """The sample third-party plugin module, imported from its source folder (not installed)."""
    sys.path.insert(0, str(SAMPLE_SRC))
    try:
        import agentpack_sample.plugin as module

        yield module
    finally:
        sys.path.remove(str(SAMPLE_SRC))


@pytest.fixture
def todo_pack(tmp_path):
    def make(text: str, name: str = "todos") -> Path:
        root = tmp_path / name
        root.mkdir()
        (root / "todo.txt").write_text(text)
        return root

    return make


def _report(name: str, fmt: str, cases: dict, *, aborted: str | None = None, usage: dict | None = None) -> dict:
    """A core ``Report`` envelope (as JSON) with one evaluation; ``cases`` maps ``suite/id`` to a status
    or to ``(status, duration_s, details)``."""
    suites: dict = {}
    for key, value in cases.items():
        suite, case_id = key.split("/")
        status, duration, details = value if isinstance(value, tuple) else (value, 0.01, {})
        suites.setdefault(suite, []).append(
            {
                "id": case_id,
                "name": f"case {case_id}",
                "status": status,
                "duration_s": duration,
                "message": "" if status == "passed" else f"{case_id} went wrong",
                "assertions": [
                    {"name": "answer", "passed": status == "passed", "expected": "yes", "actual": "no", "message": ""}
                ],
                "details": details,
            }
        )
    return {
        "schema_version": 1,
        "command": "eval",
        "generated_at": "2026-03-01T10:00:00Z",
        "evaluations": [
            {
                "name": name,
                "format": fmt,
                "duration_s": 0.5,
                "suites": [{"id": s, "cases": c} for s, c in suites.items()],
                "metadata": {"usage": usage} if usage else {},
                "aborted": aborted,
            }
        ],
    }


@pytest.fixture
def synthetic_report():
    return _report


STEP_DETAILS = {
    "runs": [
        {
            "status": "failed",
            "exit_reason": "checks_failed",
            "stderr": "",
            "steps": [
                {
                    "index": 0,
                    "input": "Where is my order 42?",
                    "public_output": "It shipped yesterday.",
                    "evaluation_context": {"order": 42},
                    "tool_calls": [{"name": "lookup_order", "arguments": {"id": 42}}],
                    "stderr": "warning: slow lookup",
                    "duration_ms": 12.5,
                }
            ],
        }
    ]
}


def seed(folder: Path) -> Path:
    """Record six runs in ``folder/.agentpack/runs.sqlite`` (inputs relative to ``folder``): three of
    ``packs/alpha`` (the last has a regression, a new and a removed case), two of an rpc manifest (the
    second could not reach its agent), one skill test; runs 2 and 6 are tagged ``nightly``."""
    from agentpack.results.runs import record_run

    (folder / ".agentpack").mkdir(exist_ok=True)
    store = folder / ".agentpack" / "runs.sqlite"
    previous = os.getcwd()
    os.chdir(folder)
    try:
        alpha = {"smoke/a": "passed", "smoke/b": "passed", "deep/c": "passed"}
        record_run(
            _report("alpha", "ecp", alpha, usage={"input_tokens": 100, "output_tokens": 20}),
            command="eval",
            input="packs/alpha",
            store=store,
            started_at="2026-03-01T10:00:00Z",
        )
        record_run(
            _report("alpha", "ecp", alpha, usage={"input_tokens": 110, "output_tokens": 25}),
            command="eval",
            input="packs/alpha",
            store=store,
            started_at="2026-03-02T10:00:00Z",
            tags=["nightly"],
        )
        changed = {
            "smoke/a": ("passed", 0.2, {"question": "What is alpha?"}),
            "smoke/b": ("failed", 0.05, STEP_DETAILS),
            "smoke/d": "passed",
        }
        record_run(
            _report("alpha", "ecp", changed, usage={"input_tokens": 150, "output_tokens": 30}),
            command="eval",
            input="packs/alpha",
            store=store,
            started_at="2026-03-03T10:00:00Z",
        )
        rpc = {"support/refund": ("passed", 0.02, STEP_DETAILS), "support/greeting": "passed"}
        record_run(
            _report("support", "agent-rpc", rpc),
            command="rpc run",
            input="manifests/support.yaml",
            store=store,
            started_at="2026-03-04T10:00:00Z",
            agent={"name": "SupportAgent", "capabilities": ["tool_calls"]},
        )
        down = {
            "support/refund": (
                "error",
                0.0,
                {"runs": [{"status": "error", "steps": [], "stderr": "Traceback: ImportError: no module x"}]},
            )
        }
        record_run(
            _report("support", "agent-rpc", down, aborted="agent unreachable in scenario 'refund'"),
            command="rpc run",
            input="manifests/support.yaml",
            store=store,
            started_at="2026-03-05T10:00:00Z",
        )
        record_run(
            _report("beta", "skill", {"t/one": "passed"}),
            command="skill test",
            input="skills/beta",
            store=store,
            started_at="2026-03-06T10:00:00Z",
            tags=["nightly"],
        )
    finally:
        os.chdir(previous)
    return store


@pytest.fixture
def seeded_store(tmp_path):
    """A store made by ``seed`` (see there); returns its path."""
    return seed(tmp_path)


AGENTPACK = Path(sys.executable).with_name("agentpack")


@contextmanager
def serving(store: Path, *args: str) -> Iterator[str]:
    """``agentpack view --port 0 --store STORE`` in a subprocess; yields its URL, stops it afterwards."""
    proc = subprocess.Popen(
        [str(AGENTPACK), "view", "--port", "0", "--store", str(store), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://\S+/", line)
        assert match, f"no URL in {line!r}: {proc.stderr.read() if proc.poll() is not None else ''}"
        yield match.group(0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.fixture(scope="module")
def viewer_url(tmp_path_factory):
    """A viewer serving a ``seed`` store for the whole module."""
    with serving(seed(tmp_path_factory.mktemp("viewer"))) as url:
        yield url
