import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples" / "openexperts"
REFERENCE = ROOT / ".." / "shared" / "reference" / "openexperts" / "radiant-sales-expert-fixture"


@pytest.fixture
def acme(tmp_path: Path) -> Path:
    """A fresh copy of the example package (ours), safe to mutate."""
    target = tmp_path / "acme-support"
    shutil.copytree(EXAMPLES / "acme-support", target, ignore=shutil.ignore_patterns(".openexperts"))
    return target


@pytest.fixture
def reference_pack(tmp_path: Path) -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"reference package not present at {REFERENCE}")
    target = tmp_path / "radiant"
    shutil.copytree(REFERENCE, target)
    return target


def _edit_yaml(path: Path, change: Callable[[Any], Any]) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _edit_front(path: Path, change: Callable[[dict], Any]) -> None:
    text = path.read_text()
    _, front, body = text.split("---", 2)
    data = yaml.safe_load(front)
    change(data)
    path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False) + "---" + body)


@pytest.fixture
def edit_yaml():
    return _edit_yaml


@pytest.fixture
def edit_front():
    return _edit_front


@pytest.fixture
def fast(acme: Path) -> Path:
    """The example package with short retry delays, so retry tests take milliseconds."""
    _edit_yaml(acme / "expert.yaml", lambda d: d["execution"]["retry"].update(delay="20ms"))
    return acme


class Ledger:
    """Python tool bindings for the example package that record every side effect (thread-safe)."""

    def __init__(self) -> None:
        import threading

        self.calls: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        self.fail: dict[str, int] = {}
        self.hooks: dict[str, Callable[..., Any]] = {}

    def record(self, op: str, args: dict) -> None:
        with self.lock:
            self.calls.append((op, args))
            left = self.fail.get(op, 0)
            if left:
                self.fail[op] = left - 1
        if left:
            raise RuntimeError(f"{op} is down")
        if op in self.hooks:
            self.hooks[op](**args)

    def count(self, op: str) -> int:
        return sum(1 for name, _ in self.calls if name == op)

    def tools(self) -> dict[str, Any]:
        def op(name: str, result: Callable[..., Any]):
            def call(**args):
                self.record(name, args)
                return result(**args)

            return call

        return {
            "helpdesk": {
                "get_ticket": op(
                    "helpdesk.get_ticket",
                    lambda ticket_id: {
                        "id": ticket_id,
                        "subject": f"Subject {ticket_id}",
                        "body": "It broke.",
                        "customer_id": "C-1",
                    },
                ),
                "list_open": op("helpdesk.list_open", lambda: [{"id": "T-1"}]),
                "add_internal_note": op("helpdesk.add_internal_note", lambda ticket_id, body: {"note_id": "N-1"}),
                "set_status": op("helpdesk.set_status", lambda ticket_id, status: {"ok": True}),
                "reply": op("helpdesk.reply", lambda ticket_id, body: {"message_id": "M-1"}),
            },
            "crm": {
                "get_customer": op(
                    "crm.get_customer",
                    lambda customer_id: {
                        "id": customer_id,
                        "name": f"Customer {customer_id}",
                        "plan": "team",
                        "health": "green",
                    },
                )
            },
        }


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def script() -> dict:
    return yaml.safe_load((EXAMPLES / "script.yaml").read_text())


@pytest.fixture
def make_runtime(tmp_path: Path):
    """``make_runtime(pack, **kwargs)``: an ExpertRuntime in a temp workdir, stopped after the test."""
    from agentpack_openexperts.runtime import ExpertRuntime

    made = []

    def make(pack: Path, **kwargs: Any):
        kwargs.setdefault("workdir", tmp_path / "work")
        kwargs.setdefault("broker", "approve")
        rt = ExpertRuntime(pack, **kwargs)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.stop()


# -- a real PostgreSQL server (initdb + pg_ctl in a temporary folder) for the deployment tests ------------
def _unavailable(reason: str) -> None:
    """Skip with ``reason``; fail instead where AGENTPACK_TESTS_REQUIRE lists postgres (CI)."""
    import os

    if "postgres" in os.environ.get("AGENTPACK_TESTS_REQUIRE", "").split(","):
        pytest.fail(f"AGENTPACK_TESTS_REQUIRE lists postgres, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server():
    """One throwaway PostgreSQL server for the session, stopped and removed afterwards."""
    try:
        import procrastinate  # noqa: F401  # only to skip with the reason when the extra is missing
        import psycopg  # noqa: F401
    except ImportError as exc:
        _unavailable(f"the postgres extra is not installed ({exc.name}): pip install 'agentpack-openexperts[postgres]'")
    from agentpack_openexperts.runtime.postgres.server import TemporaryServer, find_bindir

    if find_bindir() is None:
        _unavailable("PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)")
    server = TemporaryServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server, request) -> str:
    """A fresh database on the session's server, for one test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    return postgres_server.create_database(name)
