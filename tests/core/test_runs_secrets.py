"""The run store keeps no secrets (issue 24): environment settings whose names hold SECRET, TOKEN, KEY,
PASSWORD, PASSWD or CREDENTIAL are dropped wherever the word stands, and ``user:password@`` is stripped
from every URL; neither reaches the store, the viewer or an export."""

import httpx
import pytest

from agentpack.results.runs import open_store, record_run
from agentpack.testing import run_cli

from .conftest import serving

SECRETS = {
    "AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_MODEL_RETRAINED": "whsec-4417",
    "AGENTPACK_CHANNEL_TOKEN_MODEL": "chan-tok-4417",
    "ECP_LLM_JUDGE_KEY_MODEL": "judge-key-4417",
    "OPENAI_PASSWORD_MODEL": "pw-4417",
    "AGENTPACK_DB_PASSWD_JUDGE": "passwd-4417",
    "ECP_CREDENTIALS_JUDGE": "cred-4417",
}
URL_PASSWORD = "url-pass-4417"


def test_no_secret_reaches_the_store_the_viewer_or_an_export(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ECP_LLM_JUDGE_BASE_URL", f"https://judge:{URL_PASSWORD}@judge.example/v1")
    monkeypatch.setenv("AGENTPACK_OPENEXPERTS_MODEL", "m-2")
    store = tmp_path / "runs.sqlite"
    settings = {"endpoint": f"see http://ops:{URL_PASSWORD}@agent.example:8080/rpc", "model": "gpt-x"}
    run = record_run({}, command="eval", input="x", cases=[], settings=settings, store=store)
    assert run.settings["environment"] == {
        "AGENTPACK_OPENEXPERTS_MODEL": "m-2",
        "ECP_LLM_JUDGE_BASE_URL": "https://judge.example/v1",
    }
    assert run.settings["endpoint"] == "see http://agent.example:8080/rpc"
    secrets = [*SECRETS.values(), URL_PASSWORD]
    stored = store.read_bytes() + (
        store.with_name("runs.sqlite-wal").read_bytes() if store.with_name("runs.sqlite-wal").exists() else b""
    )
    with open_store(store) as opened:
        text = str(opened.get(run.id).to_json())
    for exporter in ("jsonl", "csv"):
        result = run_cli(["runs", "export", "--store", str(store), "-o", exporter])
        assert result.exit_code == 0, result.stderr
        text += result.stdout
    with serving(store) as url:
        for path in ("", f"runs/{run.id}", "api/runs", f"api/runs/{run.id}"):
            page = httpx.get(url + path, timeout=10)
            assert page.status_code == 200, path
            text += page.text
    assert "judge.example" in text and "agent.example" in text
    for secret in secrets:
        assert secret not in text and secret.encode() not in stored, secret


@pytest.mark.parametrize(
    "text,clean",
    [
        ("https://u:p@h.example/x", "https://h.example/x"),
        ("postgresql://app:pw@db:5432/x and redis://:pw@cache", "postgresql://db:5432/x and redis://cache"),
        ("https://h.example/x?user=a@b", "https://h.example/x?user=a@b"),
        ("mailto:someone@example.com", "mailto:someone@example.com"),
    ],
)
def test_url_credentials_are_stripped(text, clean):
    from agentpack.results.runs.provenance import without_url_credentials

    assert without_url_credentials(text) == clean
