"""Graders: text_match, tool_usage, llm_judge (against a fake judge on 127.0.0.1), and plugin graders."""

from __future__ import annotations

import pytest

from agentpack_agent_rpc.graders.base import GradeContext, GraderConfigError
from agentpack_agent_rpc.graders.llm_judge import LlmJudge
from agentpack_agent_rpc.graders.text_match import TextMatch
from agentpack_agent_rpc.graders.tool_usage import ToolUsage, subset_match
from agentpack_agent_rpc.protocol import parse_step_result


def result(**fields):
    return parse_step_result({"status": "done", **fields})


CTX = GradeContext()


@pytest.mark.parametrize(
    "config,text,passed",
    [
        ({"condition": "contains", "value": "refund"}, "Your refund is on its way", True),
        ({"condition": "contains", "value": "REFUND"}, "Your refund", False),
        ({"condition": "contains", "value": "REFUND", "case_sensitive": False}, "Your refund", True),
        ({"condition": "equals", "value": "ok"}, "ok", True),
        ({"condition": "equals", "value": "OK", "case_sensitive": False}, "ok", True),
        ({"condition": "not_equals", "value": "ok"}, "ok!", True),
        ({"condition": "does_not_contain", "value": "password"}, "here is your password", False),
        ({"condition": "regex", "pattern": r"order \d+"}, "order 42 shipped", True),
        ({"condition": "regex", "pattern": r"^ORDER", "case_sensitive": False}, "order 42", True),
        ({"condition": "not_regex", "pattern": r"\d{16}"}, "card 1234567812345678", False),
    ],
)
def test_text_match_conditions(config, text, passed):
    check = TextMatch({"type": "text_match", **config}).grade(result(public_output=text), CTX)
    assert check.passed is passed
    assert check.expected[config["condition"]] == config.get("value", config.get("pattern"))


@pytest.mark.parametrize("value", [None, ""])
def test_text_match_on_empty_or_absent_field(value):
    negative = TextMatch(
        {"type": "text_match", "condition": "does_not_contain", "value": "x", "field": "evaluation_context"}
    )
    positive = TextMatch({"type": "text_match", "condition": "contains", "value": "x"})
    state = "absent" if value is None else "empty"
    check = negative.grade(result(evaluation_context=value), CTX)
    assert check.passed and f"evaluation_context is {state}" in check.reason
    check = positive.grade(result(public_output=value), CTX)
    assert not check.passed and check.reason == f"expected public_output to contain 'x', but public_output was {state}"


def test_text_match_reason_says_what_was_seen():
    check = TextMatch({"type": "text_match", "condition": "equals", "value": "yes"}).grade(
        result(public_output="no"), CTX
    )
    assert check.reason == "expected public_output to equal 'yes', but it did not; saw 'no'"
    assert check.actual == "no"


def test_text_match_rejects_a_bad_regex():
    with pytest.raises(GraderConfigError) as info:
        TextMatch({"type": "text_match", "condition": "regex", "pattern": "("})
    assert info.value.key == "pattern"


CALLS = [
    {"name": "search", "arguments": {"q": "shoes", "filters": {"size": 42, "color": "red"}, "tags": ["a", "b"]}},
    {"name": "lookup_order", "arguments": {"order_id": "A-1"}},
    {"name": "search", "arguments": {"q": "socks"}},
    {"name": "send_email", "arguments": {"to": "x"}},
]


@pytest.mark.parametrize(
    "config,passed",
    [
        ({"tool_name": "search"}, True),
        ({"tool_name": "search", "arguments": {"filters": {"size": 42}}}, True),
        ({"tool_name": "search", "arguments": {"filters": {"size": "42"}}}, False),
        ({"tool_name": "search", "arguments": {"tags": ["a"]}}, False),
        ({"tool_name": "search", "arguments": {"tags": ["a", "b"]}}, True),
        ({"arguments": {"order_id": "A-1"}}, True),
        ({"tool_name": "refund", "not_called": True}, True),
        ({"tool_name": "search", "not_called": True}, False),
        ({"tool_name": "search", "count": 2}, True),
        ({"tool_name": "search", "max_count": 1}, False),
        ({"min_count": 4}, True),
        ({"sequence": ["search", "lookup_order", "send_email"]}, True),
        ({"sequence": ["lookup_order", {"name": "search", "arguments": {"q": "socks"}}]}, True),
        ({"sequence": ["send_email", "search"]}, False),
    ],
)
def test_tool_usage(config, passed):
    check = ToolUsage({"type": "tool_usage", **config}).grade(result(tool_calls=CALLS), CTX)
    assert check.passed is passed, check.reason


def test_tool_usage_reasons_list_the_calls_seen():
    check = ToolUsage({"type": "tool_usage", "tool_name": "refund", "arguments": {"amount": 5}}).grade(
        result(tool_calls=CALLS[1:2]), CTX
    )
    assert check.reason == (
        "expected a call to 'refund' with arguments including {\"amount\": 5}, "
        'but saw lookup_order({"order_id": "A-1"})'
    )
    assert not ToolUsage({"type": "tool_usage"}).grade(result(), CTX).passed


def test_subset_match_does_not_confuse_bools_and_numbers():
    assert subset_match({"a": 1}, {"a": 1, "b": 2}) and not subset_match({"a": True}, {"a": 1})


@pytest.mark.parametrize(
    "config",
    [{"sequence": ["a"], "tool_name": "b"}, {"not_called": True, "count": 1}, {"min_count": 3, "max_count": 1}],
)
def test_tool_usage_rejects_contradictions(config):
    with pytest.raises(GraderConfigError):
        ToolUsage({"type": "tool_usage", **config})


def judge_context(fake_judge, **env) -> GradeContext:
    return GradeContext(env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_judge.url, **env})


def test_llm_judge_pass_and_fail(fake_judge):
    judge = LlmJudge({"type": "llm_judge", "prompt": "Mentions the refund?"})
    context = judge_context(fake_judge).for_step("where is my money?")
    passed = judge.grade(result(public_output="Your refund was sent."), context)
    failed = judge.grade(result(public_output="Have a nice day."), context)
    assert passed.passed and "says PASS" in passed.reason and "mentions the refund" in passed.reason
    assert not failed.passed and not failed.error
    request = fake_judge.requests[0]
    assert request["model"] == "gpt-4o-mini" and request["temperature"] == 0.0
    assert request["_auth"] == "Bearer sk-test" and request["_path"] == "/v1/chat/completions"
    assert "where is my money?" in request["messages"][-1]["content"]
    assert len(context.clients) == 1, "one keep-alive client per judge endpoint"


def test_llm_judge_settings_precedence(fake_judge):
    env = {"ECP_LLM_JUDGE_MODEL": "env-model", "ECP_LLM_JUDGE_TEMPERATURE": "0.7"}
    LlmJudge({"type": "llm_judge", "prompt": "p"}).grade(
        result(public_output="refund"), judge_context(fake_judge, **env)
    )
    context = judge_context(fake_judge, **env)
    context.judge = {"model": "pinned", "temperature": 0.2}
    LlmJudge({"type": "llm_judge", "prompt": "p"}).grade(result(public_output="refund"), context)
    LlmJudge({"type": "llm_judge", "prompt": "p", "model": "own"}).grade(result(public_output="refund"), context)
    seen = [(r["model"], r["temperature"]) for r in fake_judge.requests]
    assert seen == [("env-model", 0.7), ("pinned", 0.2), ("own", 0.2)]


def test_llm_judge_agentpack_env_names_win_over_the_reference_aliases(fake_judge):
    env = {
        "AGENTPACK_AGENT_RPC_JUDGE_MODEL": "ours",
        "ECP_LLM_JUDGE_MODEL": "theirs",
        "AGENTPACK_AGENT_RPC_JUDGE_TEMPERATURE": "0.3",
        "AGENTPACK_AGENT_RPC_JUDGE_API_KEY": "sk-ours",
        "AGENTPACK_AGENT_RPC_JUDGE_BASE_URL": fake_judge.url,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    LlmJudge({"type": "llm_judge", "prompt": "p"}).grade(result(public_output="refund"), GradeContext(env=env))
    request = fake_judge.requests[0]
    assert (request["model"], request["temperature"], request["_auth"]) == ("ours", 0.3, "Bearer sk-ours")


def test_llm_judge_without_key_or_with_failing_endpoint_is_an_error(fake_judge):
    judge = LlmJudge({"type": "llm_judge", "prompt": "p"})
    check = judge.grade(result(public_output="x"), GradeContext(env={"PATH": "/bin"}))
    assert (
        check.error
        and not check.passed
        and check.reason == ("cannot judge: AGENTPACK_AGENT_RPC_JUDGE_API_KEY (or OPENAI_API_KEY) is not set")
    )
    fake_judge.status = 500
    check = judge.grade(result(public_output="x"), judge_context(fake_judge))
    assert check.error and "HTTP 500" in check.reason


def test_llm_judge_in_a_run_uses_the_manifest_pins(write_manifest, fake_judge, monkeypatch):
    from agentpack_agent_rpc.api import run_manifest

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = write_manifest(
        [
            {
                "name": "judged",
                "steps": [
                    {"input": "refund please", "graders": [{"type": "llm_judge", "prompt": "Mentions a refund?"}]},
                    {"input": "hello", "graders": [{"type": "llm_judge", "prompt": "Mentions a refund?"}]},
                ],
            }
        ],
        judge={"base_url": fake_judge.url, "model": "judge-x"},
    )
    report = run_manifest(path)
    checks = [s["checks"][0] for s in report["scenarios"][0]["runs"][0]["steps"]]
    assert [c["passed"] for c in checks] == [True, False]
    assert checks[0]["expected"] == {"criteria": "Mentions a refund?", "model": "judge-x"}
    monkeypatch.delenv("OPENAI_API_KEY")
    report = run_manifest(path)
    assert report["scenarios"][0]["status"] == "error" and report["scenarios"][0]["exit_reason"] == "grader_error"


def test_plugin_graders_register_through_the_hook(register_plugin, write_manifest, agentpack_cli):
    from agentpack import hookimpl
    from agentpack_agent_rpc.graders.base import Check, GraderType

    class LengthAtMost:
        def __init__(self, config):
            self.limit = config["max"]

        def grade(self, result, context):
            size = len(result.public_output or "")
            return Check(
                "max_length",
                "public_output",
                size <= self.limit,
                self.limit,
                size,
                f"{size} characters, limit {self.limit}",
            )

    class Plugin:
        @hookimpl
        def agentpack_agent_rpc_register_graders(self, register):
            register(
                GraderType(
                    "max_length",
                    LengthAtMost,
                    "output length limit",
                    schema={
                        "type": "object",
                        "required": ["type", "max"],
                        "additionalProperties": False,
                        "properties": {"type": {"const": "max_length"}, "max": {"type": "integer", "minimum": 1}},
                    },
                )
            )

    register_plugin(Plugin(), name="length-grader")
    good = write_manifest(
        [{"name": "short", "steps": [{"input": "hi", "graders": [{"type": "max_length", "max": 10}]}]}]
    )
    assert agentpack_cli("rpc", "run", "-m", good).exit_code == 0
    bad = write_manifest(
        [{"name": "x", "steps": [{"input": "hi", "graders": [{"type": "max_length", "max": "ten"}]}]}], name="bad.yaml"
    )
    result = agentpack_cli("rpc", "validate", bad, "--json")
    finding = result.json()["items"][0]["findings"][0]
    assert result.exit_code == 1 and finding["pointer"] == "/scenarios/0/steps/0/graders/0/max"
    assert "'ten' is not of type 'integer'" in finding["message"]


def test_duplicate_grader_names_are_an_error(register_plugin):
    from agentpack import hookimpl
    from agentpack.io.errors import PluginError
    from agentpack_agent_rpc.api import graders
    from agentpack_agent_rpc.graders.base import GraderType

    class Plugin:
        @hookimpl
        def agentpack_agent_rpc_register_graders(self, register):
            register(GraderType("text_match", TextMatch))

    register_plugin(Plugin(), name="clash")
    with pytest.raises(PluginError, match="grader 'text_match' is registered by both plugin"):
        graders()
