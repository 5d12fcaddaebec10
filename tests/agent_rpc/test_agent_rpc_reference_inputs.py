"""Manifests in the shapes the reference runtime's own tests write (evaluation-context-protocol/ecp 34c6c91):
`scenarios: []`, which its CLI tests validate and run, and its probe of a scenario with `steps: []` and no
dataset, which it rejects (so `--portable` does too; the reference's own verdicts are checked in
test_agent_rpc_interop.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentpack_agent_rpc.api import validate_manifest

RPC = Path(__file__).parents[2] / ".." / "shared" / "reference" / "upstream" / "interop3" / "rpc"
EMPTY_SCENARIOS = RPC / "reference-tests" / "cli-test-empty-scenarios.yaml"
EMPTY_STEPS = RPC / "probes" / "empty-steps.yaml"
pytestmark = pytest.mark.skipif(not RPC.is_dir(), reason=f"the reference's manifests are not at {RPC}")


def test_empty_scenarios_validate_and_run(agentpack_cli, tmp_path):
    manifest, findings = validate_manifest(EMPTY_SCENARIOS)
    assert manifest is not None and manifest.scenarios == [] and findings == []
    assert agentpack_cli("rpc", "validate", str(EMPTY_SCENARIOS)).exit_code == 0
    assert agentpack_cli("rpc", "validate", "--portable", str(EMPTY_SCENARIOS)).exit_code == 0
    shutil.copy(EMPTY_SCENARIOS, tmp_path / "manifest.yaml")  # its agent.py is never started: nothing to run
    out = tmp_path / "o.json"
    run = agentpack_cli("rpc", "run", "-m", str(tmp_path / "manifest.yaml"), "--no-record", "--json-out", str(out))
    assert run.exit_code == 0, run.stderr
    assert "0/0 scenarios" in run.stdout


def test_a_scenario_without_steps_or_dataset_is_refused_as_the_reference_does(agentpack_cli):
    """The reference rejects it; so do we, portable or not (issue 24: ``steps: []`` runs nothing)."""
    for flags in ((), ("--portable",)):
        result = agentpack_cli("rpc", "validate", *flags, "--json", str(EMPTY_STEPS))
        assert result.exit_code == 1
        (finding,) = [f for i in result.json()["items"] for f in i["findings"] if f["severity"] == "error"]
        assert finding["code"] == "ARP100" and "steps" in finding["message"] and finding["line"] == 6
