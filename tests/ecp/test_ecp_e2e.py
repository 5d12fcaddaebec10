"""The user's path end to end through the real CLI: init -> validate --strict -> build -> query -> eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentpack.testing import run_cli

AGENTPACK = Path(sys.executable).with_name("agentpack")


def test_init_validate_build_query_eval(agentpack_host, tmp_path: Path) -> None:
    pack = tmp_path / "tide-expert"
    init = run_cli(["ecp", "init", str(pack)])
    assert init.exit_code == 0, init.stderr
    assert (pack / "expert" / "context" / "indexes" / "docs-keyword" / "index_data.json").is_file()
    valid = run_cli(["validate", str(pack), "--strict", "--json"])
    assert valid.exit_code == 0, valid.stdout
    assert valid.json()["ok"] is True
    built = run_cli(["ecp", "build", str(pack), "--json"])
    assert built.exit_code == 0
    assert built.json()["indexes"][0]["status"] == "up-to-date"
    rebuilt = run_cli(["ecp", "build", str(pack), "--rebuild", "--json"])
    assert rebuilt.json()["indexes"][0]["status"] == "built"
    answer = run_cli(["query", str(pack), "How do I add a new source document?", "--json"])
    assert answer.exit_code == 0, answer.stderr
    response = answer.json()["response"]
    assert response["citations"][0]["artifact_path"] == "getting-started.md"
    assert response["as_of"]["source_id"] == "docs"
    evaluated = run_cli(["eval", str(pack), "--json"])
    assert evaluated.exit_code == 0, evaluated.stdout
    assert evaluated.json()["summary"]["cases"]["passed"] == 1


def test_real_subprocess_query_and_eval(tmp_path: Path) -> None:
    from agentpack_ecp.pack.scaffold import scaffold

    pack = tmp_path / "sub-expert"
    scaffold(pack)
    env = {**os.environ, "NO_COLOR": "1"}
    build = subprocess.run(
        [str(AGENTPACK), "ecp", "build", str(pack)], check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert build.returncode == 0, build.stderr
    query = subprocess.run(
        [str(AGENTPACK), "query", str(pack), "rebuild the index", "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)["response"]["chunks"]
    junit = subprocess.run(
        [str(AGENTPACK), "eval", str(pack), "-o", "junit"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert junit.returncode == 0 and "<testsuite" in junit.stdout


def test_failing_eval_exits_1(agentpack_host, new_pack: Path) -> None:
    suite = new_pack / "expert" / "evals" / "conformance.yaml"
    suite.write_text(suite.read_text().replace('must_cite: ["getting-started.md"]', 'must_cite: ["nowhere.md"]'))
    result = run_cli(["eval", str(new_pack), "--json"])
    assert result.exit_code == 1
    case = result.json()["evaluations"][0]["suites"][0]["cases"][0]
    failed = [a for a in case["assertions"] if not a["passed"]]
    assert [a["name"] for a in failed] == ["must_cite"]
    assert failed[0]["expected"] == ["nowhere.md"] and failed[0]["actual"] == ["getting-started.md"]


def test_cli_user_errors_are_located_not_tracebacks(agentpack_host, tmp_path: Path, new_pack: Path) -> None:
    bad_name = run_cli(["ecp", "init", str(tmp_path / "Bad_Name")])
    assert bad_name.exit_code == 2 and "not a valid skill name" in bad_name.stderr
    again = run_cli(["ecp", "init", str(new_pack)])
    assert again.exit_code == 2 and "--force" in again.stderr
    manifest = new_pack / "expert" / "EXPERT.yaml"
    manifest.write_text(manifest.read_text().replace("id: my-expert", "id: my-expert\nid: twice"))
    broken = run_cli(["ecp", "build", str(new_pack)])
    assert broken.exit_code == 2 and "expert/EXPERT.yaml:" in broken.stderr and "duplicate key" in broken.stderr
    query = run_cli(["query", str(new_pack), "anything"])
    assert query.exit_code == 2 and "Traceback" not in query.stderr
    validate = run_cli(["validate", str(new_pack), "--json"])
    assert validate.exit_code == 1 and validate.json()["items"][0]["findings"][0]["line"] == 4
