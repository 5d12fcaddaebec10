"""No webhook event is lost to the dedupe window (issue 24): a delivery's keys and a trigger's dedupe key
commit in the transaction that creates the run, or not at all, in the SQLite and the PostgreSQL store.

Before, the keys were committed first: a delivery answered 503 (trigger inactive) or one that failed
after the check was refused as a duplicate (409) when the sender retried, even after a restart.
"""

import http.client
import json
import sqlite3

import pytest

from agentpack_openexperts.runtime.serverconfig import ServerSettings
from agentpack_openexperts.runtime.webhooks import signature

SECRET = "webhook-secret-for-tests"
TICKET = {"ticket": {"id": "T-1", "customer_id": "C-1"}}


@pytest.fixture(params=["sqlite", "postgres"])
def store(request) -> str | None:
    """Each store the runtime offers: None (SQLite in the workdir) or a PostgreSQL URL."""
    return None if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def deliver(rt, body=TICKET, delivery="d-1", path="/hooks/new_ticket"):
    """POST a signed delivery; ``(status, parsed body or text)``."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": signature(SECRET, data)}
    conn = http.client.HTTPConnection("127.0.0.1", rt.server.port, timeout=10)
    try:
        conn.request("POST", path, data, {**headers, "X-GitHub-Delivery": delivery})
        response = conn.getresponse()
        text = response.read()
    finally:
        conn.close()
    return response.status, json.loads(text) if text.startswith(b"{") else text


def serving(make_runtime, acme, tools, store, tmp_path, **settings):
    rt = make_runtime(acme, tools=tools, driver="noop", store=store, workdir=tmp_path / "work")
    settings.setdefault("webhook_secrets", {"new_ticket": SECRET})
    settings.setdefault("channel_secrets", {"support": SECRET})
    rt.start(http=True, server=ServerSettings(**settings))
    return rt


def test_a_delivery_refused_while_the_trigger_is_inactive_is_accepted_after_a_restart(
    make_runtime, acme, edit_yaml, ledger, store, tmp_path
):
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][0].update(requires_tool="zendesk"))
    rt = serving(make_runtime, acme, ledger.tools(), store, tmp_path)
    status, body = deliver(rt)
    assert status == 503 and "inactive" in body["error"]
    assert deliver(rt)[0] == 503  # the sender retries: still inactive, still not a duplicate
    rt.stop()
    tools = ledger.tools()
    tools["zendesk"] = {}
    again = serving(make_runtime, acme, tools, store, tmp_path)
    status, body = deliver(again)
    assert status == 202 and body["accepted"] is True, body
    assert deliver(again)[0] == 409  # accepted once: now a replay
    assert again.wait_idle(10) and len(again.store.runs()) == 1


def test_a_delivery_that_fails_after_the_dedupe_check_is_accepted_when_retried(
    make_runtime, acme, ledger, store, tmp_path, monkeypatch
):
    rt = serving(make_runtime, acme, ledger.tools(), store, tmp_path)
    real = rt.store.create_run
    failures = [sqlite3.OperationalError("disk I/O error")]

    def create_run(*args, **kwargs):
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(rt.store, "create_run", create_run)
    assert deliver(rt)[0] == 500
    status, body = deliver(rt)
    assert status == 202 and body["accepted"] is True, body
    assert deliver(rt)[0] == 409
    assert rt.wait_idle(10) and len(rt.store.runs()) == 1


def test_a_trigger_dedupe_key_commits_with_its_run(make_runtime, acme, ledger, store, tmp_path, monkeypatch):
    rt = make_runtime(acme, tools=ledger.tools(), driver="noop", store=store, workdir=tmp_path / "work")
    real = rt.store.create_run
    failures = [RuntimeError("crashed between the dedupe key and the run")]

    def create_run(*args, **kwargs):
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(rt.store, "create_run", create_run)
    with rt.started():
        with pytest.raises(RuntimeError, match="crashed"):
            rt.fire("new_ticket", TICKET)
        answer = rt.fire("new_ticket", TICKET)
        assert answer["accepted"] is True and answer["duplicate"] is False, answer
        assert rt.fire("new_ticket", TICKET)["duplicate"] is True
        assert rt.wait_idle(10)


def test_a_channel_message_no_trigger_took_can_be_delivered_again(make_runtime, acme, ledger, store, tmp_path):
    rt = serving(make_runtime, acme, ledger.tools(), store, tmp_path)
    message = {"sender_id": "C-9", "message_text": "hi"}
    rt.inactive["support_chat"] = "test: not taking messages"
    status, body = deliver(rt, message, "c-1", "/channels/support")
    assert status == 202 and body["accepted"] is False
    del rt.inactive["support_chat"]
    status, body = deliver(rt, message, "c-1", "/channels/support")
    assert status == 202 and body["accepted"] is True, body
    assert deliver(rt, message, "c-1", "/channels/support")[0] == 409
    assert rt.wait_idle(10)
