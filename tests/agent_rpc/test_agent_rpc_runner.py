"""End-to-end runs against the SDK test agent over stdio: conversation, isolation, repeat, retries, jobs, filters."""

from __future__ import annotations

import pytest

from agentpack_agent_rpc.api import run_manifest
from agentpack_agent_rpc.runner import RunOptions
from agentpack_agent_rpc.schema_store import REPORT, store


def contains(value: str, **extra) -> dict:
    return {"type": "text_match", "condition": "contains", "value": value, **extra}


def equals(value: str) -> dict:
    return {"type": "text_match", "condition": "equals", "value": value}


def run(path, **options) -> dict:
    report = run_manifest(path, RunOptions(**options))
    assert store().validate(REPORT, report) == []
    return report


def test_steps_of_a_scenario_are_one_conversation(write_manifest, helpers):
    path = write_manifest(
        [
            {
                "name": "multi-turn",
                "steps": [
                    {"input": "ask", "expect_status": "paused", "graders": [contains("Which order")]},
                    {"input": "A-1", "graders": [contains("Echo: A-1")]},
                    {"input": "count", "expect_status": "done", "graders": [equals("3")]},
                ],
            }
        ]
    )
    report = run(path)
    assert report["ok"], report["scenarios"][0]["message"]
    steps = report["scenarios"][0]["runs"][0]["steps"]
    assert [s["agent_status"] for s in steps] == ["paused", "done", "done"]
    assert steps[0]["checks"][-1]["type"] == "status" and steps[0]["checks"][-1]["passed"]


@pytest.mark.parametrize("isolation", ["reset", "process"])
def test_isolation_between_scenarios(write_manifest, isolation, helpers):
    scenarios = [
        {"name": f"s{i}", "steps": [{"input": "hi"}, {"input": "count", "graders": [equals("2")]}]} for i in range(3)
    ]
    report = run(write_manifest(scenarios, isolation=isolation))
    assert report["ok"] and report["run"]["isolation"] == isolation
    pids = helpers.run_pids(report)
    assert len(set(pids)) == (1 if isolation == "reset" else 3)
    assert all(helpers.group_gone(pid) for pid in set(pids))


def test_repeat_reports_pass_at_k_and_flaky(write_manifest, tmp_path):
    scenario = {"name": "coin", "repeat": 4, "steps": [{"input": "flaky", "graders": [equals("good")]}]}
    path = write_manifest([scenario], env={"FLAKY_FILE": str(tmp_path / "n")})
    record = run(path)["scenarios"][0]
    assert (record["passes"], record["pass_rate"], record["pass_at_k"], record["flaky"]) == (2, 0.5, True, True)
    assert record["status"] == "failed" and "passed 2 of 4 runs" in record["message"]
    (tmp_path / "n").unlink()
    report = run(write_manifest([{**scenario, "pass_threshold": 0.5}], env={"FLAKY_FILE": str(tmp_path / "n")}))
    assert report["scenarios"][0]["status"] == "passed" and report["totals"]["flaky"] == 1


def test_retries_rerun_after_execution_errors_only(write_manifest, helpers):
    crashing = {"name": "crash", "retries": 2, "steps": [{"input": "a"}, {"input": "b"}]}
    report = run(write_manifest([crashing], target=helpers.bad_target("crash")))
    record = report["scenarios"][0]
    assert record["status"] == "error" and record["exit_reason"] == "transport_error"
    assert record["runs"][0]["attempt"] == 3
    failing = {"name": "wrong", "retries": 2, "steps": [{"input": "a", "graders": [equals("nope")]}]}
    record = run(write_manifest([failing]))["scenarios"][0]
    assert record["status"] == "failed" and record["runs"][0]["attempt"] == 1


def test_jobs_run_scenarios_on_several_agents_in_manifest_order(write_manifest, helpers):
    scenarios = [{"name": f"s{i}", "steps": [{"input": f"n{i}", "graders": [contains(f"n{i}")]}]} for i in range(6)]
    report = run(write_manifest(scenarios), jobs=3)
    assert report["ok"] and report["run"]["jobs"] == 3
    assert [s["id"] for s in report["scenarios"]] == [f"s{i}" for i in range(6)]
    pids = set(helpers.run_pids(report))
    assert 1 < len(pids) <= 3 and all(helpers.group_gone(p) for p in pids)


def test_filters_by_name_and_tag(write_manifest):
    scenarios = [
        {"name": "refund flow", "tags": ["billing"], "steps": [{"input": "x"}]},
        {"name": "login", "tags": ["auth", "smoke"], "steps": [{"input": "x"}]},
        {"name": "smoke test", "steps": [{"input": "x"}]},
    ]
    path = write_manifest(scenarios)
    assert [s["id"] for s in run(path, filters=["billing"])["scenarios"]] == ["refund flow"]
    assert [s["id"] for s in run(path, filters=["smoke"])["scenarios"]] == ["login", "smoke test"]
    report = run(path, filters=["tag:smoke"])
    assert [s["id"] for s in report["scenarios"]] == ["login"]
    assert report["run"]["scenarios_selected"] == 1 and report["run"]["scenarios_in_manifest"] == 3
    none = run(path, filters=["nothing-matches"])
    assert none["scenarios"] == [] and none["warnings"] == ["no scenario matches the filters ['nothing-matches']"]


def test_config_env_and_cwd_reach_the_agent(write_manifest, tmp_path):
    (tmp_path / "work").mkdir()
    path = write_manifest(
        [
            {
                "name": "setup",
                "steps": [
                    {"input": "config", "graders": [equals("[('mode', 'strict'), ('n', 2)]")]},
                    {"input": "env", "graders": [equals("hello in work")]},
                ],
            }
        ],
        config={"mode": "strict", "n": 2},
        env={"AGENT_GREETING": "hello"},
        cwd="work",
    )
    report = run(path)
    assert report["ok"], report["scenarios"][0]["message"]


def test_step_and_scenario_timeouts(write_manifest, helpers):
    step_timeout = {"name": "slow step", "step_timeout": 0.5, "steps": [{"input": "a"}, {"input": "b"}, {"input": "c"}]}
    report = run(
        write_manifest([step_timeout, {"name": "after", "steps": [{"input": "a"}]}], target=helpers.bad_target("hang"))
    )
    first, after = report["scenarios"]
    assert first["exit_reason"] == "timeout" and first["status"] == "error"
    steps = first["runs"][0]["steps"]
    assert [s["status"] for s in steps] == ["ok", "failed", "skipped"]
    assert "within the step timeout" in steps[1]["error"]
    assert after["status"] == "passed", "a fresh agent replaces the timed-out one"
    assert all(helpers.group_gone(p) for p in helpers.run_pids(report))
    scenario_timeout = {"name": "budget", "timeout": 0.6, "steps": [{"input": "a"}, {"input": "b"}]}
    report = run(write_manifest([scenario_timeout], target=helpers.bad_target("hang")))
    assert report["scenarios"][0]["exit_reason"] == "scenario_timeout"


def test_max_duration_skips_the_rest(write_manifest, helpers):
    scenarios = [{"name": f"s{i}", "steps": [{"input": "a"}, {"input": "b"}]} for i in range(3)]
    report = run(write_manifest(scenarios, target=helpers.bad_target("hang")), max_duration=0.7)
    reasons = [s["exit_reason"] for s in report["scenarios"]]
    assert reasons[0] == "max_duration_exceeded" and reasons[1:] == ["max_duration_exceeded"] * 2
    assert [s["status"] for s in report["scenarios"]][1:] == ["skipped", "skipped"]
    assert not report["ok"]


def test_agent_error_and_invalid_result_are_reported_precisely(write_manifest, helpers):
    report = run(
        write_manifest(
            [
                {"name": "boom", "steps": [{"input": "boom"}, {"input": "after"}]},
                {"name": "next", "steps": [{"input": "count", "graders": [equals("1")]}]},
            ]
        )
    )
    boom, nxt = report["scenarios"]
    assert boom["exit_reason"] == "agent_error"
    assert "RuntimeError: the agent broke" in boom["runs"][0]["steps"][0]["error"]
    assert nxt["status"] == "passed", "the next scenario starts from a reset agent"
    report = run(
        write_manifest(
            [{"name": "bad", "steps": [{"input": "a"}, {"input": "b"}]}], target=helpers.bad_target("bad_result")
        )
    )
    error = report["scenarios"][0]["runs"][0]["steps"][1]["error"]
    assert error == "agent/step result.status must be 'done' or 'paused', got 'finished'"


def test_private_thought_alias_is_mirrored(write_manifest):
    path = write_manifest(
        [
            {
                "name": "legacy",
                "steps": [
                    {
                        "input": "thought",
                        "graders": [
                            contains("legacy", field="evaluation_context"),
                            contains("legacy", field="private_thought"),
                        ],
                    }
                ],
            }
        ]
    )
    assert run(path)["ok"]


def test_legacy_agent_and_capability_requirements(write_manifest, helpers):
    tools = {"name": "t", "steps": [{"input": "a", "graders": [{"type": "tool_usage", "tool_name": "x"}]}]}
    report = run(write_manifest([tools], target=helpers.bad_target("legacy")))
    assert report["agent"]["legacy"] and report["agent"]["protocol_version"] == "0.1"
    assert any("legacy protocol" in w for w in report["warnings"])
    assert any("does not declare: tool_calls" in w for w in report["warnings"])
    report = run(write_manifest([tools], target=helpers.bad_target("legacy"), require_capabilities=True))
    record = report["scenarios"][0]
    assert record["exit_reason"] == "protocol_error" and "require_capabilities" in record["message"]


def test_usage_and_latency_are_summed(write_manifest):
    report = run(write_manifest([{"name": "u", "steps": [{"input": "a"}, {"input": "b"}]}]))
    assert report["usage"] == {"input_tokens": 6, "output_tokens": 10}
    assert report["latency"]["count"] == 2 and report["latency"]["max_ms"] >= report["latency"]["p50_ms"] > 0


def test_custom_executor_through_the_hook(write_manifest, register_plugin):
    from agentpack import hookimpl
    from agentpack_agent_rpc.executors import ExecutorInfo, LocalExecutor

    seen = []

    class Reversed(LocalExecutor):
        def run(self, scenarios, make_worker, jobs, on_result, cancel):
            seen.extend(s.id for s in reversed(scenarios))
            super().run(list(reversed(scenarios)), make_worker, 1, on_result, cancel)

    class Plugin:
        @hookimpl
        def agentpack_agent_rpc_register_executors(self, register):
            register(ExecutorInfo("reversed", Reversed, "test"))

    register_plugin(Plugin(), name="reversed-executor")
    path = write_manifest([{"name": "a", "steps": [{"input": "x"}]}, {"name": "b", "steps": [{"input": "x"}]}])
    report = run(path, executor="reversed")
    assert seen == ["b", "a"] and [s["id"] for s in report["scenarios"]] == ["a", "b"]
