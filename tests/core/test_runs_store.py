"""The SQLite run store: schema and migrations, WAL, transactions, damaged files, concurrent writers."""

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from agentpack.kernel.runtypes import Case, Run
from agentpack.results.runs import StoreError, open_store, record_run
from agentpack.results.runs import store as store_module


def _run(**fields):
    values = {
        "id": 0,
        "uid": fields.pop("uid", "u" * 32),
        "command": "eval",
        "input": "p",
        "status": "passed",
        "started_at": "2026-03-01T00:00:00.000Z",
        "report": {},
    }
    values.update(fields)
    return Run(**values)


def test_a_new_store_is_versioned_and_in_wal_mode(tmp_path):
    path = tmp_path / "deep" / "runs.sqlite"
    with open_store(path) as store:
        assert store.schema_version() == store_module.SCHEMA_VERSION
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(store_module.SCHEMA_VERSION,)]
    db.close()


def test_migrations_run_in_order_once(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    with open_store(path) as store:
        store.add(_run())
    monkeypatch.setattr(store_module, "MIGRATIONS", [*store_module.MIGRATIONS, "ALTER TABLE runs ADD COLUMN note TEXT"])
    with open_store(path) as store:
        assert store.schema_version() == len(store_module.MIGRATIONS)
        assert store.count() == 1  # the old run survived the migration
    with open_store(path) as store:  # a second open does not run it again (it would fail: duplicate column)
        assert store.schema_version() == len(store_module.MIGRATIONS)


def test_a_store_from_a_newer_agentpack_is_a_clear_error(tmp_path):
    path = tmp_path / "runs.sqlite"
    open_store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version 99") as info:
        open_store(path)
    assert info.value.hint and "upgrade agentpack" in info.value.hint


def test_a_damaged_store_is_a_clear_error_and_is_left_alone(tmp_path):
    path = tmp_path / "runs.sqlite"
    garbage = b"this is not a database\n" * 200
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match="damaged") as info:
        open_store(path)
    assert info.value.file == str(path) and "mv" in info.value.hint
    assert path.read_bytes() == garbage


def test_reading_a_missing_store_creates_nothing(tmp_path):
    path = tmp_path / "none" / "runs.sqlite"
    with pytest.raises(StoreError, match="no runs recorded yet"):
        open_store(path, create=False)
    assert not path.parent.exists()


def test_a_run_is_written_in_one_transaction(tmp_path, monkeypatch):
    """A failure after the run row was inserted (here: writing its cases) rolls the whole run back."""
    path = tmp_path / "runs.sqlite"
    real_dump = store_module._dump

    def dump(value):
        if value == {"explode": True}:
            raise RuntimeError("disk on fire")
        return real_dump(value)

    monkeypatch.setattr(store_module, "_dump", dump)
    with open_store(path) as store:
        store.add(_run(uid="a" * 32))
        broken = _run(uid="b" * 32, cases=[Case(suite="s", id="1", status="passed", detail={"explode": True})])
        with pytest.raises(RuntimeError, match="disk on fire"):
            store.add(broken)
        assert [r.uid for r in store.find()] == ["a" * 32]
        assert store._db.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 0
        store.add(_run(uid="c" * 32))  # the store is still usable


def test_cases_and_tags_round_trip(tmp_path):
    with open_store(tmp_path / "runs.sqlite") as store:
        run = store.add(
            _run(
                tags=["b", "a"],
                agent={"name": "x"},
                git_dirty=True,
                cases=[Case(suite="s", id="1", status="failed", detail={"details": {"stderr": "boom"}})],
            )
        )
        back = store.get(run.id)
    assert back.tags == ["a", "b"] and back.agent == {"name": "x"} and back.git_dirty is True
    assert back.cases[0].key == "s/1" and back.cases[0].detail["details"]["stderr"] == "boom"


def test_find_filters_and_references(seeded_store):
    with open_store(seeded_store) as store:
        assert [r.id for r in store.find()] == [6, 5, 4, 3, 2, 1]
        assert [r.id for r in store.find(input="packs/alpha")] == [3, 2, 1]
        assert [r.id for r in store.find(status="error")] == [5]
        assert [r.id for r in store.find(tag="nightly")] == [6, 2]
        assert [r.id for r in store.find(format="agent-rpc")] == [5, 4]
        assert [r.id for r in store.find(command="skill test")] == [6]
        assert [r.id for r in store.find(since="2026-03-04")] == [6, 5, 4]
        assert [r.id for r in store.find(until="2026-03-02")] == [2, 1]
        assert [r.id for r in store.find(limit=2)] == [6, 5]
        assert store.resolve("latest") == 6 and store.resolve("latest~2") == 4 and store.resolve("#3") == 3
        uid = store.get(2).uid
        assert store.resolve(uid[:8]) == 2
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.resolve("nope")
        with pytest.raises(StoreError, match="no run #99"):
            store.get(99)
        assert store.previous(store.get(3)).id == 2
        assert store.previous(store.get(1)) is None
        assert [r.id for r in store.history("packs/alpha", last=2)] == [2, 3]
        assert store.distinct("tag") == ["nightly"]
        assert [name for name, _, _ in store.inputs()] == ["skills/beta", "manifests/support.yaml", "packs/alpha"]


WRITER = textwrap.dedent(
    """
    import sys
    from agentpack.results.runs import record_run
    report = {"evaluations": [{"name": "n", "format": "f", "suites": [{"id": "s", "cases": [
        {"id": "c", "status": "passed"}]}]}]}
    for i in range(int(sys.argv[2])):
        record_run(report, command="eval", input=f"in-{sys.argv[3]}", store=sys.argv[1], input_digest="sha256:x")
    """
)


def test_concurrent_writers_all_land_their_runs(tmp_path):
    """Four processes recording at once (WAL, BEGIN IMMEDIATE, busy timeout): no run is lost."""
    path = tmp_path / "runs.sqlite"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), "15", str(n)], cwd=tmp_path, stderr=subprocess.PIPE)
        for n in range(4)
    ]
    errors = [proc.communicate(timeout=120)[1].decode() for proc in procs]  # wait for all: none left running
    assert [proc.returncode for proc in procs] == [0] * 4, "\n".join(errors)
    assert not list(tmp_path.glob(".runs.sqlite.*")), "a draft of the new store was left behind"
    with open_store(path) as store:
        assert store.count() == 60
        assert sorted({r.input for r in store.find()}) == [f"in-{n}" for n in range(4)]
        assert store._db.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 60


def test_writers_starting_together_on_a_missing_store_all_open_it(tmp_path):
    """A new store is built whole and linked into place: twelve processes racing to create it all succeed."""
    path = tmp_path / "runs.sqlite"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), "1", str(n)], cwd=tmp_path, stderr=subprocess.PIPE)
        for n in range(12)
    ]
    errors = [proc.communicate(timeout=120)[1].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 12, "\n".join(errors)
    with open_store(path) as store:
        assert store.count() == 12
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.sqlite", "writer.py"]


def test_the_default_store_is_under_the_project_root(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTPACK_RUNS")
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub" / "dir").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "sub" / "dir")
    assert store_module.default_store_path() == tmp_path.resolve() / ".agentpack" / "runs.sqlite"
    monkeypatch.setenv("AGENTPACK_RUNS", str(tmp_path / "elsewhere.sqlite"))
    assert store_module.default_store_path() == tmp_path / "elsewhere.sqlite"


def test_record_run_without_a_store_argument_uses_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTPACK_RUNS", str(tmp_path / "env.sqlite"))
    monkeypatch.chdir(tmp_path)
    run = record_run({"evaluations": []}, command="eval", input=tmp_path)
    with open_store(tmp_path / "env.sqlite") as store:
        assert store.get(run.id).input == "."


def test_token_counts_a_store_cannot_hold_are_left_out(tmp_path):
    """An agent may report any number: one beyond SQLite's INTEGER, negative or NaN is not a count."""
    from agentpack.results.runs import record_run
    from agentpack.results.runs.store import open_store

    store_path = tmp_path / "runs.sqlite"
    report = {"evaluations": []}
    cases = [
        {"suite": "s", "id": "huge", "status": "passed", "total_tokens": 10**30},
        {"suite": "s", "id": "nan", "status": "passed", "total_tokens": float("nan")},
        {"suite": "s", "id": "ok", "status": "passed", "total_tokens": 7},
    ]
    run = record_run(report, command="test", input=tmp_path, cases=cases, usage={"input_tokens": -1}, store=store_path)
    stored = open_store(store_path).get(run.id)
    assert [c.total_tokens for c in stored.cases] == [None, None, 7] and stored.input_tokens is None


def test_a_uid_prefix_of_digits_only_names_its_run(seeded_store):
    with open_store(seeded_store) as store:
        store._db.execute("UPDATE runs SET uid = ? WHERE id = 2", ("72524177" + "a" * 24,))
        store._db.commit()
        assert store.resolve("72524177") == 2  # no run has that id: the uid prefix
        assert store.resolve("#72524177") == 72524177  # '#' says id
        assert store.resolve("3") == 3
