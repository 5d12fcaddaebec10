"""``agentpack eval`` records runs; ``agentpack runs list|show|export|compare|trend`` read them back."""

import csv
import io
import json

import pytest

from agentpack import hookimpl
from agentpack.kernel.registry import RunExporter
from agentpack.results.runs import open_store
from agentpack.testing import run_cli


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("AGENTPACK_RUNS", str(path))
    monkeypatch.chdir(tmp_path)
    return path


@pytest.fixture
def with_sample(agentpack_host, register_plugin, sample_plugin):
    register_plugin(sample_plugin, name="sample")
    return agentpack_host


def test_eval_twice_then_compare_and_list(with_sample, todo_pack, store):
    pack = todo_pack("- [x] alpha\n- [x] beta\n")
    assert run_cli(["eval", pack]).exit_code == 0
    (pack / "todo.txt").write_text("- [x] alpha\n- [ ] beta\n- [x] gamma\n")
    result = run_cli(["eval", pack, "--tag", "ci", "--tag", "pr-7"])
    assert result.exit_code == 1 and "run #2 recorded" in result.stderr

    listing = run_cli(["runs", "list", "--json"]).json()
    assert [r["id"] for r in listing["runs"]] == [2, 1]
    assert listing["runs"][0]["tags"] == ["ci", "pr-7"] and listing["runs"][0]["input"] == "todos"
    assert listing["runs"][0]["input_digest"] != listing["runs"][1]["input_digest"]
    text = run_cli(["runs", "list"]).stdout
    assert "#2" in text and "FAILED" in text and "PASSED" in text

    compared = run_cli(["runs", "compare"])
    assert compared.exit_code == 1
    assert "REGRESSED: 1 regression" in compared.stdout and "L2" in compared.stdout
    data = run_cli(["runs", "compare", "--json"]).json()
    assert data["ok"] is False and data["command"] == "runs compare"
    assert [e["key"] for e in data["changes"]["regressed"]] == ["todo/L2"]
    assert [e["key"] for e in data["changes"]["new"]] == ["todo/L3"]
    assert data["input_changed"] is True
    markdown = run_cli(["runs", "compare", "1", "2", "-o", "markdown"]).stdout
    assert markdown.startswith("### agentpack runs compare: #1 → #2")
    assert "| `todo/L2` | passed | failed |" in markdown
    assert run_cli(["runs", "compare", "2", "1"]).exit_code == 0  # backwards: a fix, not a regression


def test_show_json_and_markdown(with_sample, todo_pack, store):
    run_cli(["eval", todo_pack("- [ ] open\n- [x] done\n"), "--suite", "todo"])
    shown = run_cli(["runs", "show", "latest", "--json"]).json()["run"]
    assert shown["status"] == "failed" and shown["settings"]["suite"] == "todo"
    assert [c["status"] for c in shown["cases"]] == ["failed", "passed"]
    assert shown["report"]["evaluations"][0]["format"] == "sample-todo"
    text = run_cli(["runs", "show", "1"]).stdout
    assert text.index("FAILED") < text.index("PASSED")  # failures first
    assert run_cli(["runs", "show", "1", "-o", "markdown"]).stdout.startswith("### run #1")
    missing = run_cli(["runs", "show", "9"])
    assert missing.exit_code == 2 and "no run #9" in missing.stderr


def test_no_record_and_a_named_store(with_sample, todo_pack, store, tmp_path):
    pack = todo_pack("- [x] a\n")
    assert run_cli(["eval", pack, "--no-record"]).exit_code == 0
    assert not store.exists()
    other = tmp_path / "ci.sqlite"
    assert run_cli(["-q", "eval", pack, "--store", other]).stderr == ""
    assert run_cli(["runs", "list", "--store", other, "--json"]).json()["runs"][0]["id"] == 1
    assert run_cli(["runs", "list"]).stdout.strip() == "no runs recorded yet"


def test_a_damaged_store_is_an_error_after_the_report_is_written(with_sample, todo_pack, store, tmp_path):
    store.write_bytes(b"garbage" * 100)
    out = tmp_path / "report.json"
    result = run_cli(["eval", todo_pack("- [x] a\n"), "--report", out])
    assert result.exit_code == 2
    assert "run store is damaged" in result.stderr and "Traceback" not in result.stderr
    assert json.loads(out.read_text())["ok"] is True
    listed = run_cli(["runs", "list"])
    assert listed.exit_code == 2 and "damaged" in listed.stderr


def test_trend_gates_on_a_falling_pass_rate(seeded_store):
    result = run_cli(["runs", "trend", "packs/alpha", "--store", seeded_store])
    assert result.exit_code == 1 and "REGRESSION" in result.stdout
    data = run_cli(["runs", "trend", "packs/alpha", "--store", seeded_store, "--json"]).json()
    assert data["runs"] == 3 and data["slope"] < 0 and data["regression"] is True
    assert data["flaky"] == [] and [c["key"] for c in data["regressed"]] == ["smoke/b"]  # one pass -> fail
    assert data["regressed"][0]["flips"] == 1 and data["verdict"] == "regression"
    relaxed = run_cli(["runs", "trend", "packs/alpha", "--store", seeded_store, "--threshold", "0.5"])
    assert relaxed.exit_code == 0
    few = run_cli(["runs", "trend", "manifests/support.yaml", "--store", seeded_store, "-o", "markdown"])
    assert (
        few.exit_code == 0 and "the latest run error; 1 case regressed (2 of 3 runs, not enough history" in few.stdout
    )
    young = run_cli(["runs", "trend", "skills/beta", "--store", seeded_store])
    assert young.exit_code == 0 and "not enough history (1 of 3 runs)" in young.stdout
    assert run_cli(["runs", "trend", "nothing", "--store", seeded_store]).exit_code == 2


def test_compare_rules(seeded_store):
    data = run_cli(["runs", "compare", "2", "3", "--store", seeded_store, "--json"]).json()
    assert data["counts"]["regressed"] == 1 and data["counts"]["new"] == 1 and data["counts"]["removed"] == 1
    assert data["deltas"]["total_tokens"] == 180 - 135
    errored = run_cli(["runs", "compare", "--input", "manifests/support.yaml", "--store", seeded_store, "--json"])
    assert errored.exit_code == 1 and errored.json()["run_regressed"] is True
    only = run_cli(["runs", "compare", "4", "--store", seeded_store])
    assert only.exit_code == 2 and "first run of 'manifests/support.yaml'" in only.stderr


def test_list_filters(seeded_store):
    def ids(*args):
        return [r["id"] for r in run_cli(["runs", "list", "--store", seeded_store, "--json", *args]).json()["runs"]]

    assert ids("--status", "error") == [5]
    assert ids("--tag", "nightly") == [6, 2]
    assert ids("--format", "ecp", "--since", "2026-03-02") == [3, 2]
    assert ids("--input", "packs/alpha", "-n", "1") == [3]


def test_export_jsonl_and_csv(seeded_store, tmp_path):
    lines = run_cli(["runs", "export", "--store", seeded_store, "--tag", "nightly"]).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [2, 6]  # oldest first
    assert "report" in json.loads(lines[0])
    slim = run_cli(["runs", "export", "3", "--store", seeded_store, "--option", "report=false"]).stdout
    assert "report" not in json.loads(slim)
    target = tmp_path / "runs.csv"
    result = run_cli(["runs", "export", "--store", seeded_store, "--to", target])
    assert result.exit_code == 0 and "exported 6 runs" in result.stderr
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [r["id"] for r in rows] == ["1", "2", "3", "4", "5", "6"] and rows[3]["agent"] == "SupportAgent"
    cases = run_cli(["runs", "export", "3", "--store", seeded_store, "-o", "csv", "--option", "rows=cases"]).stdout
    assert [r["case_id"] for r in csv.DictReader(io.StringIO(cases))] == ["a", "b", "d"]
    assert run_cli(["runs", "export", "--store", seeded_store, "-o", "nope"]).exit_code == 2


def test_a_plugin_exporter(agentpack_host, register_plugin, seeded_store):
    sent = []

    class Observability:
        @hookimpl
        def agentpack_register_run_exporters(self, register):
            def export(runs, out, options):
                for run in runs:
                    sent.append((run.id, run.status, len(run.cases), options.get("project")))
                out.write(f"sent {len(sent)} runs\n")

            register(RunExporter(name="observe", description="to a platform", export=export))

    register_plugin(Observability(), name="observe")
    result = run_cli(["runs", "export", "-o", "observe", "--store", seeded_store, "--option", "project=p1", "5"])
    assert result.stdout == "sent 1 runs\n" and sent == [(5, "error", 1, "p1")]


def test_runs_commands_have_help_with_examples():
    for command in ("list", "show", "export", "compare", "trend"):
        result = run_cli(["runs", command, "-h"])
        assert result.exit_code == 0 and "Example" in result.stdout


def test_recorded_eval_report_matches_the_store(with_sample, todo_pack, store):
    """The JSON report and the stored run agree on the numbers the viewer and the HTML report show."""
    report = run_cli(["eval", todo_pack("- [x] a\n- [ ] b\n"), "--json"]).json()
    with open_store(store) as opened:
        run = opened.get(1)
    assert report["summary"]["cases"]["passed"] == run.passed == 1
    assert report["summary"]["cases"]["pass_rate"] == run.pass_rate
    assert run.report["evaluations"] == report["evaluations"]


def test_ctrl_c_during_a_command_exits_130(agentpack_host, register_plugin, todo_pack, store):
    from agentpack.testing import ClaimingPlugin

    class Interrupted(ClaimingPlugin):
        @hookimpl
        def agentpack_evaluate(self, pack, options):
            raise KeyboardInterrupt

    register_plugin(Interrupted(), name="interrupted")
    result = run_cli(["eval", todo_pack("- [x] a\n")])
    assert result.exit_code == 130 and result.stderr.strip().endswith("interrupted")


def test_list_colours_statuses_on_a_terminal_unless_no_color(seeded_store, monkeypatch):
    from click.testing import CliRunner

    from agentpack.cli.app import cli

    def listing():
        return CliRunner().invoke(cli, ["runs", "list", "--store", str(seeded_store)], color=True).output

    assert "\x1b[31mFAILED" in listing() and "\x1b[32mPASSED" in listing()
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in listing() and "FAILED" in listing()


# -- issue 27: names, search, paging, housekeeping ---------------------------------------------------
def test_the_list_names_each_run_searches_and_pages(seeded_store):
    text = run_cli(["runs", "list", "--store", seeded_store]).stdout.splitlines()
    assert text[0].startswith("#6") and "beta  skill test skills/beta" in text[0]
    assert "ERROR" in text[1] and "support  rpc run manifests/support.yaml" in text[1]
    found = run_cli(["runs", "list", "--store", seeded_store, "--search", "alpha", "--json"]).json()
    assert [r["id"] for r in found["runs"]] == [3, 2, 1] and found["total"] == 3
    assert found["runs"][0]["verdict"] == "failed" and found["runs"][0]["counts"] == "2 passed, 1 failed of 3"
    assert [
        r["id"]
        for r in run_cli(["runs", "list", "--store", seeded_store, "-s", "nightly beta", "--json"]).json()["runs"]
    ] == [6]
    assert run_cli(["runs", "list", "--store", seeded_store, "-s", "#4", "--json"]).json()["runs"][0]["id"] == 4
    assert run_cli(["runs", "list", "--store", seeded_store, "-s", "100%_", "--json"]).json()["runs"] == []
    paged = run_cli(["runs", "list", "--store", seeded_store, "-n", "2", "--page", "2"])
    assert [line.split()[0] for line in paged.stdout.splitlines()] == ["#4", "#3"] and "runs 3-4 of 6" in paged.stderr


def test_delete_and_prune(seeded_store):
    dry = run_cli(["runs", "delete", "2", "latest", "--store", seeded_store, "--dry-run"])
    assert dry.exit_code == 0 and dry.stdout.startswith("would delete 2 runs")
    assert run_cli(["runs", "list", "--store", seeded_store, "--json"]).json()["total"] == 6
    gone = run_cli(["runs", "delete", "2", "--store", seeded_store, "--json"]).json()
    assert [r["id"] for r in gone["deleted"]] == [2]
    with open_store(seeded_store) as store:
        assert [r.id for r in store.find()] == [6, 5, 4, 3, 1]
    assert run_cli(["runs", "delete", "2", "--store", seeded_store]).exit_code == 2  # no run #2 any more
    kept = run_cli(["runs", "prune", "--keep", "1", "--store", seeded_store])
    assert kept.exit_code == 0 and kept.stdout.startswith("deleted 2 runs")  # #1 of packs/alpha, #4 of the manifest
    with open_store(seeded_store) as store:
        assert [r.id for r in store.find()] == [6, 5, 3]
    old = run_cli(["runs", "prune", "--older-than", "2026-03-04", "--store", seeded_store, "--json"]).json()
    assert [r["id"] for r in old["deleted"]] == [3]
    assert run_cli(["runs", "prune", "--older-than", "1d", "--store", seeded_store]).stdout.startswith("deleted 2")
    assert run_cli(["runs", "prune", "--store", seeded_store]).exit_code == 2  # nothing said
    bad = run_cli(["runs", "prune", "--older-than", "soon", "--store", seeded_store])
    assert bad.exit_code == 2 and "neither an age nor a date" in bad.stderr


def test_export_html_writes_the_run_page(seeded_store, tmp_path):
    out = tmp_path / "run.html"
    result = run_cli(["runs", "export", "3", "--to", out, "--store", seeded_store])  # picked by the suffix
    assert result.exit_code == 0
    page = out.read_text()
    assert page.startswith("<!doctype html>") and 'id="case-table"' in page and 'href="#case-2"' in page
    assert "FAILED 2 passed, 1 failed of 3 (66.7%)" in page and "/api/" not in page
    many = run_cli(["runs", "export", "-o", "html", "--store", seeded_store])
    assert many.exit_code == 2 and "writes one run's page; 6 runs were selected" in many.stderr


def test_the_store_folder_ignores_itself_in_git(with_sample, todo_pack, tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTPACK_RUNS", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    assert run_cli(["eval", todo_pack("- [x] a\n")]).exit_code == 0
    assert (tmp_path / ".agentpack" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_show_and_trend_say_what_happened(seeded_store):
    shown = run_cli(["runs", "show", "5", "--store", seeded_store]).stdout
    assert "ERROR: it could not finish (0 passed, 1 errors of 1)" in shown
    as_json = run_cli(["runs", "show", "5", "--store", seeded_store, "--json"]).json()["run"]
    assert as_json["verdict"] == "error" and as_json["rate"] == ""
    trend = run_cli(["runs", "trend", "packs/alpha", "--store", seeded_store, "--json"]).json()
    assert [p["verdict"] for p in trend["points"]] == ["passed", "passed", "failed"]
