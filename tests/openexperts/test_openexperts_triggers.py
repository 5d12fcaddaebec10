"""Triggers end to end: real HTTP on 127.0.0.1, bursts with duplicates, lanes, channels, cron, presets.

These tests are about triggers, so the server accepts unsigned deliveries (``--insecure-webhooks``
on loopback); signatures, tokens and the attacks are in test_openexperts_server_security.py.
"""

import json
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agentpack_openexperts.runtime.serverconfig import ServerSettings

LOCAL = ServerSettings(insecure_webhooks=True)


def post(url, body, raw=None, token=None):
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


class Recorder:
    """A driver that records when each invocation starts and ends, per key."""

    def __init__(self, key_input, pause=0.01):
        self.key_input = key_input
        self.pause = pause
        self.lock = threading.Lock()
        self.events = []
        self.active = 0
        self.peak = 0

    def run(self, session):
        from agentpack_openexperts.runtime import AgentResult

        key = session.inputs.get(self.key_input)
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.events.append(("start", key, session.inputs.get("seq")))
        time.sleep(self.pause)
        with self.lock:
            self.active -= 1
            self.events.append(("end", key, session.inputs.get("seq")))
        return AgentResult(narrative="ok", structured={})


def ticket(ticket_id, customer, seq=0):
    return {"ticket": {"id": ticket_id, "customer_id": customer}, "seq": seq}


def test_webhook_over_http(make_runtime, acme, ledger, script):
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    with rt.started(http=True, server=LOCAL):
        url = rt.webhook_urls()["new_ticket"]
        assert url.startswith("http://127.0.0.1:")
        status, body = post(url, ticket("T-100", "C-1"))
        assert status == 202 and body["accepted"] and body["lane"] == 'key:new_ticket:"C-1"'
        status, again = post(url, ticket("T-100", "C-1"))
        assert status == 202 and again["duplicate"] is True
        assert post(f"{rt.url}/hooks/no_such", {})[0] == 404
        assert post(f"{rt.url}/hooks/morning_digest", {})[0] == 404  # a cron trigger is no webhook
        assert post(url, None, raw=b"{not json")[0] == 400
        assert get(f"{rt.url}/health")[1]["package"] == "acme-support-expert"
        assert rt.wait_idle(20)
        run = rt.store.run(body["run_id"])
        assert run["status"] == "succeeded" and run["inputs"] == {"ticket_id": "T-100", "customer_id": "C-1"}
        assert run["trigger"] == "new_ticket"


def test_burst_with_duplicates_keeps_order_per_key_and_runs_keys_in_parallel(make_runtime, acme, ledger):
    recorder = Recorder("customer_id", pause=0.01)
    rt = make_runtime(acme, tools=ledger.tools(), driver=recorder, workers=4)
    with rt.started(http=True, server=LOCAL):
        url = rt.webhook_urls()["new_ticket"]
        accepted = 0
        for seq in range(80):
            customer = f"C-{seq % 5}"
            status, body = post(url, ticket(f"T-{seq % 60}", customer, seq))  # 20 duplicates
            accepted += body["accepted"]
            assert status == 202
        assert rt.wait_idle(60)
    assert accepted == 60
    starts = [(key, seq) for kind, key, seq in recorder.events if kind == "start"]
    assert len(starts) == 60
    # the payload carries seq but payload_mapping maps only ticket_id/customer_id: read it back from the runs
    per_key = {}
    for kind, key, _ in recorder.events:
        per_key.setdefault(key, []).append(kind)
    for key, kinds in per_key.items():  # never two at once for one key
        assert kinds == ["start", "end"] * (len(kinds) // 2), key
    assert recorder.peak > 1  # different keys overlapped


def test_serial_per_key_keeps_arrival_order(make_runtime, acme, edit_yaml, ledger):
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][0]["payload_mapping"].update(seq="seq"))
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][0].pop("dedupe_key"))
    from agentpack_openexperts.runtime import AgentResult

    order, lock = {}, threading.Lock()

    class Driver:
        def run(self, session):
            time.sleep(0.002)
            with lock:
                order.setdefault(session.inputs["customer_id"], []).append(session.inputs["seq"])
            return AgentResult(narrative="ok")

    path = acme / "processes" / "triage-ticket.md"
    path.write_text(
        path.read_text().replace(
            "  - name: customer_id\n", "  - name: customer_id\n    type: string\n  - name: seq\n", 1
        )
    )
    rt = make_runtime(acme, tools=ledger.tools(), driver=Driver(), workers=4)
    with rt.started():
        for seq in range(120):
            rt.fire("new_ticket", ticket(f"T-{seq}", f"C-{seq % 3}", seq))
        assert rt.wait_idle(60)
    assert sorted(order) == ["C-0", "C-1", "C-2"]
    for seqs in order.values():
        assert seqs == sorted(seqs) and len(seqs) == 40


@pytest.mark.parametrize("mode,expect_overlap", [("serial", False), ("parallel", True)])
def test_serial_and_parallel(make_runtime, acme, edit_yaml, ledger, mode, expect_overlap):
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][0].update(concurrency=mode))
    recorder = Recorder("customer_id", pause=0.03)
    rt = make_runtime(acme, tools=ledger.tools(), driver=recorder, workers=4)
    with rt.started():
        for seq in range(8):
            assert rt.fire("new_ticket", ticket(f"T-{seq}", "C-1", seq))["lane"] == (
                "serial:new_ticket" if mode == "serial" else None
            )
        assert rt.wait_idle(30)
    assert (recorder.peak > 1) is expect_overlap


def test_unresolvable_key_falls_back_to_serial_with_a_warning(make_runtime, acme, ledger, caplog):
    rt = make_runtime(acme, tools=ledger.tools(), driver="noop")
    with rt.started():
        answer = rt.fire("new_ticket", {"ticket": {"id": "T-1"}})
        assert rt.wait_idle(10)
    assert answer["lane"] == "serial:new_ticket"
    assert any("falls back to serial" in w for w in answer["warnings"])
    assert any("payload_mapping" in w for w in answer["warnings"])  # customer_id is missing too


def test_dedupe_window_is_persisted_across_restarts(make_runtime, acme, ledger, tmp_path):
    first = make_runtime(acme, tools=ledger.tools(), driver="noop", workdir=tmp_path / "w")
    with first.started():
        assert first.fire("new_ticket", ticket("T-1", "C-1"))["accepted"]
        assert first.wait_idle(10)
    second = make_runtime(acme, tools=ledger.tools(), driver="noop", workdir=tmp_path / "w")
    with second.started():
        assert second.fire("new_ticket", ticket("T-1", "C-1"))["duplicate"]
        assert second.fire("new_ticket", ticket("T-2", "C-1"))["accepted"]
        assert second.wait_idle(10)
    third = make_runtime(acme, tools=ledger.tools(), driver="noop", workdir=tmp_path / "w", dedupe_window=0.0)
    with third.started():
        assert third.fire("new_ticket", ticket("T-1", "C-1"))["accepted"]  # the window has passed
        assert third.wait_idle(10)


def test_channel_messages_over_http(make_runtime, acme, ledger, script):
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    with rt.started(http=True, server=LOCAL):
        status, body = post(f"{rt.url}/channels/slack", {"event": {"user": "C-2", "text": "How do I export?"}})
        assert status == 202 and body["accepted"]
        run_id = body["invocations"][0]["run_id"]
        rt.channel_message("telegram", {"message": {"from": {"id": 42}, "text": "hello"}})
        assert post(f"{rt.url}/channels/slack", {"nothing": True})[0] == 400
        assert rt.wait_idle(20)
        run = rt.store.run(run_id)
        assert run["inputs"] == {"customer_id": "C-2", "question": "How do I export?"}
        assert run["payload"]["channel_name"] == "slack" and run["lane"] == 'key:support_chat:"C-2"'
        assert run["result"]["structured"] == {"answer": "Hi Customer C-2: reset your password from the login page."}
        telegram = [r for r in rt.store.runs() if r["inputs"].get("customer_id") == "42"]
        assert telegram and telegram[0]["status"] == "succeeded"


def test_channel_trigger_bound_to_one_source(make_runtime, acme, edit_yaml, ledger):
    edit_yaml(
        acme / "expert.yaml",
        lambda d: (d["triggers"][2].update(requires_tool="whatsapp"), d["requires"]["tools"].append("whatsapp")),
    )
    tools = ledger.tools()
    tools["whatsapp"] = {}
    rt = make_runtime(acme, tools=tools, driver="noop")
    with rt.started():
        assert rt.channel_message("slack", {"sender_id": "a", "message_text": "x"}) == []
        assert rt.channel_message("whatsapp", {"sender_id": "a", "message_text": "x"})[0]["accepted"]
        assert rt.wait_idle(10)


def test_requires_tool_trigger_is_inactive_without_binding(make_runtime, acme, edit_yaml, ledger):
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][0].update(requires_tool="zendesk"))
    rt = make_runtime(acme, tools=ledger.tools(), driver="noop")
    with rt.started(http=True, server=LOCAL):
        assert "new_ticket" in rt.inactive
        status, body = post(rt.webhook_urls()["new_ticket"], ticket("T-1", "C-1"))
        assert status == 503 and "inactive" in body["error"]


def test_cron_fires_on_schedule(make_runtime, acme, edit_yaml, ledger):
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][1].update(expr="* * * * * *", tz="Asia/Tokyo"))
    rt = make_runtime(acme, tools=ledger.tools(), driver="noop")
    with rt.started():
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and len(rt.store.runs()) < 2:
            time.sleep(0.05)
        runs = rt.store.runs()
        assert len(runs) >= 2 and {r["trigger"] for r in runs} == {"morning_digest"}
        scheduled = runs[0]["payload"]["scheduled_for"]
        assert scheduled.endswith("+09:00")


def test_cron_next_time_honours_the_time_zone():
    from croniter import croniter

    start = datetime(2026, 1, 2, 12, 0, tzinfo=ZoneInfo("Europe/Berlin"))  # a Friday
    nxt = croniter("0 9 * * 1-5", start).get_next(datetime)
    assert nxt.isoformat() == "2026-01-05T09:00:00+01:00"  # Monday 09:00 Berlin (08:00 UTC)


def test_gmail_preset_on_the_reference_package(make_runtime, reference_pack):
    tools = {"crm": {"get_contact": lambda email: {"contact_id": "c-1"}}, "email": {}, "calendar": {}}
    rt = make_runtime(reference_pack, tools=tools, driver="noop")
    with rt.started(http=True, server=LOCAL):
        payload = {"messages": [{"id": "m-1", "threadId": "t-1", "from": "Ann Lee <Ann@Example.com>"}]}
        status, body = post(rt.webhook_urls()["new_email"], payload)
        assert status == 202 and body["lane"] == 'key:new_email:"ann@example.com"'
        assert post(rt.webhook_urls()["new_email"], payload)[1]["duplicate"]  # dedupe on the enriched message_id
        assert rt.wait_idle(10)
        assert rt.store.run(body["run_id"])["inputs"] == {"message_id": "m-1"}


def test_http_approvals(make_runtime, acme, ledger, script):
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, broker="http")
    with rt.started(http=True, server=LOCAL):
        token = rt.server.token.value
        rt.fire("new_ticket", ticket("T-100", "C-1"))
        pending = []
        deadline = time.monotonic() + 10
        while not pending and time.monotonic() < deadline:
            pending = get(f"{rt.url}/approvals", token)[1]["pending"]
            time.sleep(0.05)
        assert pending and pending[0]["operation"] == "helpdesk.set_status"
        assert post(f"{rt.url}/approvals/{pending[0]['id']}", {"approve": "yes"}, token=token)[0] == 400
        assert post(f"{rt.url}/approvals/{pending[0]['id']}", {"approve": True}, token=token) == (
            200,
            {"id": pending[0]["id"], "approved": True},
        )
        assert post(f"{rt.url}/approvals/nope", {"approve": True}, token=token)[0] == 404
        assert rt.wait_idle(10)
        assert ledger.count("helpdesk.set_status") == 1
