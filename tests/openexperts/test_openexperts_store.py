"""The SQLite runtime store against the ``RuntimeStore`` protocol's contract (PostgreSQL: test_openexperts_postgres)."""

import pytest

from agentpack_openexperts.runtime.runstore import SqliteStore


@pytest.fixture
def store(tmp_path):
    made = SqliteStore(tmp_path / "runtime.db")
    yield made
    made.close()


def test_the_shared_journal_bodies_number_calls_per_run(store):
    store.create_run("r1", "answer", None, "s", None, {"a": 1}, None, now=1.0)
    assert store.record_call("r1", 1, "crm.get", "h", {"id": 1}, {"ok": True}, "auto", "replayed", 2.0) == 1
    assert store.begin_call("r1", 1, "crm.get", "h", {"id": 1}, "auto", "key-1", 3.0) == 2
    store.finish_call("r1", 2, "executed", {"name": "x"}, 4.0)
    calls = store.calls("r1")
    assert [(c["seq"], c["status"], c["key"], c["result"]) for c in calls] == [
        (1, "replayed", None, {"ok": True}),
        (2, "executed", "key-1", {"name": "x"}),
    ]


def test_update_run_changes_only_the_run_state_columns(store):
    store.create_run("r1", "answer", None, "s", None, {}, None, now=1.0)
    store.update_run("r1", 2.0, status="done", result={"x": 1})
    assert (store.run("r1")["status"], store.run("r1")["result"]) == ("done", {"x": 1})
    with pytest.raises(ValueError, match="cannot update inputs, process"):
        store.update_run("r1", 3.0, process="other", inputs="{}")


def test_add_message_returns_the_message_id(store):
    first = store.add_message("console", "result", "r1", "answer", {"a": 1}, 1.0)
    second = store.add_message("console", "result", "r1", "answer", {"a": 2}, 2.0)
    assert second == first + 1
    assert [m["data"] for m in store.messages("r1")] == [{"a": 1}, {"a": 2}]
