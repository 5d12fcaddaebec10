"""Remote answer synthesis: who may see excerpts, tested against a fake chat server on 127.0.0.1."""

from __future__ import annotations

import pytest

from agentpack.io.llm import ChatClient
from agentpack_ecp.query.synthesis import Provider, refusal, synthesize

RESPONSE = {
    "answer": "Signing keys are rotated every ninety days by the rotation job.",
    "citations": [{"chunk_id": "docs::keys.md#L1-L4"}],
    "chunks": [
        {"snippet": "Signing keys are rotated every ninety days.", "citation": {"chunk_id": "docs::keys.md#L1-L4"}}
    ],
    "synthesis": {"provider": "local", "method": "extractive"},
}
OPEN = {"allow_remote_llm": True, "allowed_remote_llm_providers": ["openai"], "contains_secrets": False}


def remote_via(server):
    """A client factory that talks to the fake server whatever base URL the provider names."""
    return lambda **kw: ChatClient(**{**kw, "base_url": server.base_url})


def test_local_provider_on_loopback_is_always_allowed(chat_server) -> None:
    provider = Provider(name="ollama", base_url=chat_server.base_url, model="m", api_key="k")
    assert provider.local
    secret_pack = {"contains_secrets": True, "allow_remote_llm": False}
    out = synthesize("How are keys rotated?", RESPONSE, secret_pack, provider=provider)
    assert out["answer"] == "Keys rotate every ninety days [1]."
    assert out["synthesis"]["method"] == "llm" and out["synthesis"]["remote"] is False
    assert out["citations"] == RESPONSE["citations"]
    [request] = chat_server.requests
    assert request["path"] == "/v1/chat/completions" and request["authorization"] == "Bearer k"
    prompt = request["body"]["messages"][1]["content"]
    assert "How are keys rotated?" in prompt and "[1] docs::keys.md#L1-L4" in prompt


@pytest.mark.parametrize(
    "security, reason",
    [
        ({}, "allow_remote_llm is not true"),
        ({"allow_remote_llm": True}, "not in security.allowed_remote_llm_providers"),
        ({"allow_remote_llm": True, "allowed_remote_llm_providers": ["anthropic"]}, "'openai' is not in"),
        ({**OPEN, "contains_secrets": True}, "contains_secrets"),
    ],
)
def test_remote_provider_refused_keeps_local_answer(chat_server, security, reason) -> None:
    provider = Provider(name="openai", base_url="https://api.openai.com/v1", model="gpt", api_key="k")
    out = synthesize("q", RESPONSE, security, provider=provider, client_factory=remote_via(chat_server))
    assert out["answer"] == RESPONSE["answer"] and out["synthesis"]["provider"] == "local"
    assert reason in out["synthesis"]["fallback_reason"]
    assert chat_server.requests == []  # nothing left the machine


def test_remote_provider_allowed(chat_server) -> None:
    provider = Provider(name="openai", base_url="https://api.openai.com/v1", model="gpt", api_key="k")
    assert refusal(OPEN, provider) is None
    usage = []
    out = synthesize(
        "q", RESPONSE, OPEN, provider=provider, client_factory=remote_via(chat_server), on_usage=usage.append
    )
    assert out["synthesis"] == {
        "provider": "openai",
        "model": "gpt",
        "method": "llm",
        "max_evidence_chunks": 8,
        "remote": True,
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }
    assert usage[0]["total_tokens"] == 60


def test_provider_failure_falls_back(chat_server) -> None:
    chat_server.status = 500
    provider = Provider(name="local", base_url=chat_server.base_url, model="m", api_key=None)
    out = synthesize("q", RESPONSE, {}, provider=provider)
    assert out["answer"] == RESPONSE["answer"] and "HTTP 500" in out["synthesis"]["fallback_reason"]
    chat_server.status = 200
    chat_server.reply = "   "
    out = synthesize("q", RESPONSE, {}, provider=provider)
    assert "empty answer" in out["synthesis"]["fallback_reason"]


def test_provider_from_env_and_modes(chat_server) -> None:
    assert Provider.from_env({}) is None
    p = Provider.from_env({"AGENTPACK_ECP_LLM_MODEL": "m"})
    assert p.name == "openai" and not p.local
    p = Provider.from_env(
        {"AGENTPACK_ECP_LLM_MODEL": "m", "AGENTPACK_ECP_LLM_BASE_URL": "https://openrouter.ai/api/v1"}
    )
    assert p.name == "openrouter"
    p = Provider.from_env(
        {
            "AGENTPACK_ECP_LLM_MODEL": "m",
            "AGENTPACK_ECP_LLM_BASE_URL": chat_server.base_url,
            "AGENTPACK_ECP_LLM_PROVIDER": "vllm",
        }
    )
    assert p.name == "vllm" and p.local
    assert synthesize("q", RESPONSE, {}, provider=p, mode="local") is RESPONSE
    out = synthesize("q", RESPONSE, {}, provider=None, mode="llm")
    assert "no synthesis provider" in out["synthesis"]["fallback_reason"]
    assert chat_server.requests == []


# -- through the CLI and a refresh ---------------------------------------------------------------
def _llm_env(server, monkeypatch) -> None:
    monkeypatch.setenv("AGENTPACK_ECP_LLM_MODEL", "fake-model")
    monkeypatch.setenv("AGENTPACK_ECP_LLM_BASE_URL", server.base_url)


def test_cli_query_uses_a_local_provider_and_logs_it(chat_server, monkeypatch, tmp_path, make_pack) -> None:
    import json

    from agentpack.testing import run_cli
    from agentpack_ecp.index.build import build_pack

    pack = make_pack(tmp_path, logs={"enabled": True})
    build_pack(pack)
    _llm_env(chat_server, monkeypatch)
    response = run_cli(["query", pack, "How are signing keys rotated?", "--json"]).json()["response"]
    assert response["answer"] == "Keys rotate every ninety days [1]."
    assert response["synthesis"]["provider"] == "127.0.0.1" and response["synthesis"]["remote"] is False
    local = run_cli(["query", pack, "How are signing keys rotated?", "--option", "synthesis=local", "--json"])
    assert local.json()["response"]["synthesis"]["provider"] == "local" and len(chat_server.requests) == 1
    bad = run_cli(["query", pack, "keys", "--option", "synthesis=maybe"])
    assert bad.exit_code == 2 and "unknown synthesis mode" in bad.stderr
    log = next((pack / "expert/logs/queries").glob("*.jsonl")).read_text().splitlines()
    assert [json.loads(line)["outputs"]["synthesis"] for line in log] == ["127.0.0.1", "local"]


def test_refresh_charges_llm_tokens_to_the_budget(chat_server, monkeypatch, tmp_path, make_pack) -> None:
    import json

    from agentpack.testing import run_cli
    from agentpack_ecp.index.build import build_pack

    pack = make_pack(tmp_path)
    build_pack(pack)
    policy_path = pack / "expert/maintenance/policy.json"
    policy = json.loads(policy_path.read_text())
    policy["budgets"]["max_tokens"] = 10
    policy_path.write_text(json.dumps(policy))
    (pack / "expert/sources/docs/tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
    _llm_env(chat_server, monkeypatch)
    result = run_cli(["ecp", "refresh", pack, "--json"])
    data = result.json()
    assert result.exit_code == 1 and data["decision"] == "refused" and "max_tokens" in data["messages"][0]
    assert data["budget"]["tokens"] == 60 and len(chat_server.requests) == 1
    policy["budgets"]["max_tokens"] = 0  # zero: no model call at all, the evals answer locally
    policy_path.write_text(json.dumps(policy))
    data = run_cli(["ecp", "refresh", pack, "--json"]).json()
    assert data["decision"] == "published" and len(chat_server.requests) == 1
