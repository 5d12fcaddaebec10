"""The ``agentpack experts`` commands, in-process and as real subprocesses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.testing import run_cli

EXAMPLES = Path(__file__).parents[2] / "examples" / "openexperts"
AGENTPACK = str(Path(sys.executable).with_name("agentpack"))


def common(tmp_path):
    return ["--bindings", str(EXAMPLES / "bindings.yaml"), "--workdir", str(tmp_path / "work")]


def test_explain_json_names_sources(acme):
    result = run_cli(["experts", "explain", str(acme), "--process", "daily-digest", "--op", "helpdesk.reply", "--json"])
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["command"] == "experts explain" and data["ok"] is True
    proc = data["processes"]["daily-digest"]
    assert proc["execution"]["timeout"]["value"] == "2m" and "daily-digest.md" in proc["execution"]["timeout"]["source"]
    assert proc["execution"]["retry.max_attempts"]["value"] == 2
    assert proc["execution"]["retry.backoff"]["value"] == "exponential"  # merged field by field from the package
    assert "expert.yaml" in proc["execution"]["retry.backoff"]["source"]
    assert proc["delivery"]["format"]["value"] == "narrative"
    assert proc["delivery"]["channel"]["source"].startswith(str(acme / "expert.yaml"))
    assert proc["operations"]["helpdesk.list_open"] == {
        "value": "confirm",
        "source": proc["operations"]["helpdesk.list_open"]["source"],
    }
    assert "/policy/approval/default" in proc["operations"]["helpdesk.list_open"]["source"]
    assert data["operation"]["tier"]["value"] == "manual"
    assert data["operation"]["declared"]["approval_documented"] == "manual"
    assert list(data["triggers"]) == ["morning_digest"]
    assert data["triggers"]["morning_digest"]["concurrency"]["value"] == "serial"


def test_explain_text_and_defaults_without_policy(acme, edit_yaml):
    edit_yaml(acme / "expert.yaml", lambda d: d.pop("policy"))
    result = run_cli(["experts", "explain", str(acme), "--op", "crm.get_customer"])
    assert result.exit_code == 0
    assert "tier confirm   <- no policy block: the spec's safe default" in result.stdout
    assert "execution:" in result.stdout and "spec default" in result.stdout


def test_explain_unknown_process_is_a_usage_error(acme):
    result = run_cli(["experts", "explain", str(acme), "--process", "nope"])
    assert result.exit_code == 2 and "no process named 'nope'" in result.stderr


def test_output_option_and_error_envelope(acme):
    """Every command has -o text|json with --json as its alias; with JSON, an error is an envelope too."""
    assert (
        run_cli(["experts", "explain", str(acme), "-o", "json"]).json()
        == run_cli(["experts", "explain", str(acme), "--json"]).json()
    )
    failed = run_cli(["experts", "explain", str(acme), "--process", "nope", "-o", "json"])
    assert failed.exit_code == 2
    assert failed.json()["command"] == "experts explain" and failed.json()["ok"] is False
    assert "no process named 'nope'" in failed.json()["error"]["message"]


def test_dry_run_report(acme, tmp_path):
    result = run_cli(
        [
            "experts",
            "dry-run",
            str(acme),
            "triage-ticket",
            "--input",
            "ticket_id=T-100",
            "--input",
            "customer_id=C-1",
            "--bindings",
            str(EXAMPLES / "bindings.yaml"),
            "--json",
        ]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    run = result.json()["run"]
    assert run["dry_run"] is True and len(run["steps"]) == 8 and all(s["completed"] for s in run["steps"])
    plan = {(p["operation"], p["tier"]): p["executed"] for p in run["plan"]}
    assert plan[("helpdesk.get_ticket", "auto")] is True and plan[("crm.get_customer", "auto")] is True
    assert plan[("helpdesk.set_status", "confirm")] is False and plan[("helpdesk.reply", "manual")] is False
    assert not (acme / ".openexperts").exists()  # a throwaway workdir


def test_dry_run_with_a_script_describes_confirm_and_manual(acme, tmp_path):
    result = run_cli(
        [
            "experts",
            "dry-run",
            str(acme),
            "triage-ticket",
            "--input",
            "ticket_id=T-100",
            "--script",
            str(EXAMPLES / "script.yaml"),
            *common(tmp_path),
        ]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    out = result.stdout
    assert "helpdesk.add_internal_note [auto]" in out and ": executed" in out
    assert 'helpdesk.set_status [confirm] {"ticket_id": "T-100", "status": "triaged"}: not executed' in out
    assert "helpdesk.reply [manual]" in out


def test_run_once_and_list(acme, tmp_path):
    result = run_cli(
        [
            "experts",
            "run",
            str(acme),
            "--process",
            "triage-ticket",
            "--input",
            "ticket_id=T-101",
            "--script",
            str(EXAMPLES / "script.yaml"),
            "--approve",
            "approve",
            *common(tmp_path),
        ]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "succeeded after 1 attempt(s)" in result.stdout and "Initech" in result.stdout
    listed = run_cli(["experts", "runs", str(acme), "--workdir", str(tmp_path / "work"), "--json"]).json()
    assert [r["status"] for r in listed["runs"]] == ["succeeded"]
    log = run_cli(["experts", "log", str(acme), listed["runs"][0]["run_id"], "--workdir", str(tmp_path / "work")])
    assert "call 4 helpdesk.set_status [confirm] executed" in log.stdout


def test_run_with_rejection_exits_1(acme, tmp_path, edit_yaml):
    edit_yaml(acme / "expert.yaml", lambda d: d["execution"]["retry"].update(max_attempts=1))
    result = run_cli(
        [
            "experts",
            "run",
            str(acme),
            "--process",
            "triage-ticket",
            "--input",
            "ticket_id=T-101",
            "--script",
            str(EXAMPLES / "script.yaml"),
            "--approve",
            "reject",
            "--json",
            *common(tmp_path),
        ]
    )
    assert result.exit_code == 1
    assert result.json()["run"]["status"] == "failed" and "rejected" in result.json()["run"]["error"]


@pytest.mark.parametrize("answer,code", [("y\n", 0), ("n\n", 1)])
def test_prompt_broker_asks_on_the_terminal(acme, tmp_path, edit_yaml, answer, code):
    edit_yaml(acme / "expert.yaml", lambda d: d["execution"]["retry"].update(max_attempts=1))
    result = run_cli(
        [
            "experts",
            "run",
            str(acme),
            "--process",
            "triage-ticket",
            "--input",
            "ticket_id=T-100",
            "--script",
            str(EXAMPLES / "script.yaml"),
            "--approve",
            "prompt",
            *common(tmp_path),
        ],
        input=answer,
    )
    assert result.exit_code == code, result.stdout + result.stderr
    assert 'approve helpdesk.set_status {"status": "triaged", "ticket_id": "T-100"}' in result.stderr


def test_missing_bindings_is_a_clear_error(acme, tmp_path):
    result = run_cli(["experts", "run", str(acme), "--process", "answer-chat", "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 2
    assert "requires.tools is not satisfied: no binding for 'helpdesk', 'crm'" in result.stderr
    assert "expert.yaml:" in result.stderr


def test_dead_letters_list_and_replay(acme, tmp_path, edit_front):
    edit_front(acme / "processes" / "daily-digest.md", lambda d: d["execution"]["retry"].update(delay="10ms"))
    failing = tmp_path / "fail.yaml"
    failing.write_text("processes:\n  daily-digest:\n    steps:\n      - - fail: helpdesk is down\n")
    run = run_cli(
        ["experts", "run", str(acme), "--process", "daily-digest", "--script", str(failing), *common(tmp_path)]
    )
    assert run.exit_code == 1 and "dead_lettered after 2 attempt(s)" in run.stdout
    letters = run_cli(["experts", "dead-letters", "list", str(acme), "--workdir", str(tmp_path / "work"), "--json"])
    [letter] = letters.json()["dead_letters"]
    assert letter["error"] == "helpdesk is down"
    replay = run_cli(
        [
            "experts",
            "dead-letters",
            "replay",
            str(acme),
            letter["id"],
            "--script",
            str(EXAMPLES / "script.yaml"),
            *common(tmp_path),
        ]
    )
    assert replay.exit_code == 0, replay.stdout + replay.stderr
    empty = run_cli(["experts", "dead-letters", "list", str(acme), "--workdir", str(tmp_path / "work")])
    assert "no dead letters" in empty.stdout


def test_runs_without_state_is_a_usage_error(acme, tmp_path):
    result = run_cli(["experts", "runs", str(acme), "--workdir", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no runtime state" in result.stderr


def test_bad_inputs_are_usage_errors(acme, tmp_path):
    assert run_cli(["experts", "dry-run", str(acme), "answer-chat", "--input", "novalue"]).exit_code == 2
    bad = tmp_path / "inputs.json"
    bad.write_text("[1, 2]")
    assert run_cli(["experts", "dry-run", str(acme), "answer-chat", "--inputs", str(bad)]).exit_code == 2
    for text in ('{"customer_id": NaN}', "[" * 5000 + "]" * 5000):  # not strict JSON: never a traceback
        bad.write_text(text)
        result = run_cli(["experts", "dry-run", str(acme), "answer-chat", "--inputs", str(bad)])
        assert result.exit_code == 2 and "Invalid value for --inputs" in result.stderr, result.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: reading it would wait forever
    for where in (fifo, tmp_path):
        result = run_cli(["experts", "dry-run", str(acme), "answer-chat", "--inputs", str(where)])
        assert result.exit_code == 2 and "expected a JSON file" in result.stderr, result.stderr
    good = run_cli(
        ["experts", "dry-run", str(acme), "answer-chat", "--inputs", "-"],
        input='{"customer_id": "C-1", "question": "hi"}',
    )
    assert good.exit_code == 0, good.stdout + good.stderr


def test_export_to_skills(acme, tmp_path, agentpack_host):
    target = tmp_path / "skills"
    result = run_cli(["experts", "export", str(acme), "--to", "skills", str(target), "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    data = result.json()
    assert sorted(s["skill"] for s in data["skills"]) == ["classify-ticket", "draft-reply", "summarise-queue"]
    assert all(s["findings"] == [] for s in data["skills"])
    assert data["omitted"] == [
        {"function": "draft-reply", "knowledge": "knowledge/escalation-contacts.md", "reason": "private"}
    ]
    text = (target / "draft-reply" / "SKILL.md").read_text()
    assert "Dana" not in text and "helpdesk" in text and "reply (manual)" in text
    assert (target / "classify-ticket" / "references" / "troubleshooting-guide.md").exists()
    assert not (target / "draft-reply" / "references" / "escalation-contacts.md").exists()
    for folder in target.iterdir():
        assert agentpack_host.detect(folder).format == "agent-skill"
        validated = run_cli(["validate", str(folder)])
        assert validated.exit_code == 0, validated.stdout
    # exporting again replaces the folder as a whole
    (target / "stale").mkdir()
    assert run_cli(["experts", "export", str(acme), "--to", "skills", str(target)]).exit_code == 0
    assert not (target / "stale").exists()


def test_serve_triggers_for_a_while(acme, tmp_path):
    """Serving mode: a real subprocess on a free port, posting one signed webhook, printing JSON lines."""
    import os
    import socket
    import time
    import urllib.request

    from agentpack_openexperts.runtime.webhooks import signature

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            AGENTPACK,
            "experts",
            "run",
            str(acme),
            "--script",
            str(EXAMPLES / "script.yaml"),
            "--approve",
            "approve",
            "--port",
            str(port),
            "--duration",
            "4",
            *common(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_NEW_TICKET": "cli-test-secret"},
    )
    try:
        body = json.dumps({"ticket": {"id": "T-100", "customer_id": "C-1"}}).encode()
        headers = {"Content-Type": "application/json", "X-Hub-Signature-256": signature("cli-test-secret", body)}
        deadline, status = time.monotonic() + 20, None
        while status is None and time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{port}/hooks/new_ticket"
                request = urllib.request.Request(url, data=body, method="POST", headers=headers)
                with urllib.request.urlopen(request, timeout=5) as response:
                    status = response.status
            except OSError:
                time.sleep(0.1)
        assert status == 202
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"webhook new_ticket: POST http://127.0.0.1:{port}/hooks/new_ticket (signed)" in err
    token = (tmp_path / "work" / "server-token").read_text().strip()
    assert f"approval token: {token} (saved in" in err and len(token) >= 40
    kinds = [json.loads(line)["kind"] for line in out.splitlines()]
    assert kinds.count("result") == 1 and "draft" in kinds and "approval_request" in kinds


def test_help_has_examples():
    result = subprocess.run([AGENTPACK, "experts", "--help"], capture_output=True, text=True, check=True)
    assert "agentpack experts dry-run" in result.stdout
    for command in ("explain", "run", "dry-run", "export", "runs", "log"):
        out = run_cli(["experts", command, "-h"]).stdout
        assert "Example" in out, command
    for command in ("list", "replay"):
        assert "Example" in run_cli(["experts", "dead-letters", command, "-h"]).stdout


def test_mcp_tools_match_the_cli(acme, agentpack_host):
    from agentpack.io.errors import AgentpackError
    from agentpack.kernel.registry import McpContext

    tools = agentpack_host.mcp_tools(McpContext(packs=[acme]))
    explained = tools["experts_explain"].handler({"process": "answer-chat"})
    cli = run_cli(["experts", "explain", str(acme), "--process", "answer-chat", "--json"]).json()
    assert explained == cli
    planned = tools["experts_dry_run"].handler({"process": "answer-chat", "inputs": {"customer_id": "C-1"}})
    assert planned["ok"] and planned["run"]["plan"][0] == {
        "operation": "crm.get_customer",
        "tier": "auto",
        "arguments": {"customer_id": "C-1"},
        "executed": False,
        "description": "Fetch a customer by id",
        "note": "no binding for this tool",
    }
    with pytest.raises(AgentpackError, match="not an expert package served"):
        tools["experts_explain"].handler({"pack": "/elsewhere"})
    none = agentpack_host.mcp_tools(McpContext(packs=[]))
    with pytest.raises(AgentpackError, match="name the package"):
        none["experts_explain"].handler({})
