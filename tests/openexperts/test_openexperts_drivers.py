"""The OpenAI-compatible driver against a fake chat server on 127.0.0.1 that scripts the model's turns."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class FakeModel:
    """Serves /v1/chat/completions; each request pops the next scripted turn and is recorded.

    Keeps connections alive, as real endpoints do: a driver that is not closed leaves its connection open.
    """

    def __init__(self, turns):
        self.turns = list(turns)
        self.requests = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                turn = model.turns.pop(0) if model.turns else {"status": 500, "body": {"error": "no more turns"}}
                data = json.dumps(turn.get("body", turn)).encode()
                self.send_response(turn.get("status", 200) if "body" in turn else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def tool_turn(*calls):
    return {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call-{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                        for i, (name, args) in enumerate(calls)
                    ],
                },
            }
        ],
        "usage": {"total_tokens": 10},
    }


def text_turn(content):
    return {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


@pytest.fixture
def fake_model():
    made = []

    def make(turns):
        made.append(FakeModel(turns))
        return made[-1]

    yield make
    for model in made:
        model.close()


def test_openai_driver_runs_the_tool_loop(make_runtime, acme, ledger, fake_model):
    model = fake_model(
        [
            tool_turn(("crm__get_customer", {"customer_id": "C-2"})),
            tool_turn(("complete_step", {"step": 1}), ("read_file", {"path": "knowledge/troubleshooting-guide.md"})),
            tool_turn(
                ("complete_step", {"step": 2}),
                ("finish", {"structured": {"answer": "Use the desktop app."}, "confidence": "high"}),
            ),
        ]
    )
    rt = make_runtime(
        acme,
        tools=ledger.tools(),
        driver="openai",
        driver_options={"model": "fake-1", "base_url": model.base_url, "api_key": "k"},
    )
    outcome = rt.run_process("answer-chat", {"customer_id": "C-2", "question": "Export fails"})
    assert outcome.ok and outcome.result == {
        "format": "structured",
        "structured": {"answer": "Use the desktop app."},
        "confidence": "high",
    }
    first = model.requests[0]
    assert first["model"] == "fake-1"
    assert first["messages"][0]["role"] == "system" and "# Orchestrator" in first["messages"][0]["content"]
    assert "# Process: answer-chat" in first["messages"][1]["content"]
    names = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert names["crm__get_customer"]["parameters"]["properties"]["customer_id"] == {"type": "string"}
    assert "(approval: auto)" in names["crm__get_customer"]["description"]
    assert {"read_file", "write_file", "complete_step", "finish", "escalate", "read_function"} <= set(names)
    second = model.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "crm__get_customer"
    result = json.loads(second[-1]["content"])
    assert second[-1]["role"] == "tool" and result["result"]["name"] == "Customer C-2"
    assert ledger.count("crm.get_customer") == 1
    assert [s["step"] for s in rt.store.steps(outcome.run_id)] == [1, 2]


def test_a_final_json_answer_is_structured(make_runtime, acme, ledger, fake_model):
    content = json.dumps({"narrative": "done", "structured": {"answer": "42"}, "confidence": "medium"})
    model = fake_model([text_turn(f"```json\n{content}\n```")])
    rt = make_runtime(
        acme, tools=ledger.tools(), driver="openai", driver_options={"model": "m", "base_url": model.base_url}
    )
    outcome = rt.run_process("answer-chat", {"customer_id": "C", "question": "?"})
    assert outcome.result["structured"] == {"answer": "42"} and outcome.result["confidence"] == "medium"


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, '{"narrative": "x", "structured": {"n": NaN}}'])
def test_a_final_answer_that_is_not_strict_json_is_the_narrative(make_runtime, acme, ledger, fake_model, text):
    model = fake_model([text_turn(text)])
    rt = make_runtime(
        acme, tools=ledger.tools(), driver="openai", driver_options={"model": "m", "base_url": model.base_url}
    )
    outcome = rt.run_process("answer-chat", {"customer_id": "C", "question": "?"})
    assert outcome.ok and outcome.result["structured"] is None  # no RecursionError, no NaN in the result


def test_plain_text_answer_is_the_narrative(make_runtime, acme, ledger, fake_model, edit_front):
    edit_front(acme / "processes" / "answer-chat.md", lambda d: d["delivery"].update(format="both"))
    model = fake_model([text_turn("All good.")])
    rt = make_runtime(
        acme, tools=ledger.tools(), driver="openai", driver_options={"model": "m", "base_url": model.base_url}
    )
    outcome = rt.run_process("answer-chat", {"customer_id": "C", "question": "?"})
    assert outcome.result["narrative"] == "All good." and outcome.result["structured"] is None


def test_model_errors_fail_the_attempt_and_retry(make_runtime, fast, ledger, fake_model):
    model = fake_model([{"status": 503, "body": {"error": "overloaded"}}, text_turn("recovered")])
    rt = make_runtime(
        fast, tools=ledger.tools(), driver="openai", driver_options={"model": "m", "base_url": model.base_url}
    )
    outcome = rt.run_process("answer-chat", {"customer_id": "C", "question": "?"})
    assert outcome.ok and outcome.attempts == 2
    failure = next(e for e in rt.store.events(outcome.run_id) if e["kind"] == "attempt_failed")
    assert failure["data"]["reason"] == "driver_error" and "503" in failure["data"]["error"]


def test_a_model_that_never_finishes_is_stopped(make_runtime, fast, edit_front, ledger, fake_model):
    edit_front(fast / "processes" / "answer-chat.md", lambda d: d["execution"].update(retry={"max_attempts": 1}))
    model = fake_model([tool_turn(("read_function", {"name": "classify-ticket"}))] * 3)
    rt = make_runtime(
        fast,
        tools=ledger.tools(),
        driver="openai",
        driver_options={"model": "m", "base_url": model.base_url, "max_turns": 3},
    )
    outcome = rt.run_process("answer-chat", {"customer_id": "C", "question": "?"})
    assert outcome.status == "abandoned" and "within 3 turns" in outcome.error
    reply = json.loads(model.requests[1]["messages"][-1]["content"])
    assert reply["ok"] and "Decision Rules" in reply["instructions"]


def test_openai_driver_needs_a_model(make_runtime, acme, ledger, monkeypatch):
    from agentpack.io.errors import AgentpackError

    monkeypatch.delenv("AGENTPACK_OPENEXPERTS_MODEL", raising=False)
    monkeypatch.delenv("OPENEXPERTS_MODEL", raising=False)
    with pytest.raises(AgentpackError, match="needs a model"):
        make_runtime(acme, tools=ledger.tools(), driver="openai")


@pytest.mark.parametrize("name", ["AGENTPACK_OPENEXPERTS_MODEL", "OPENEXPERTS_MODEL"])
def test_openai_driver_model_from_the_environment(make_runtime, acme, ledger, monkeypatch, tmp_path, name):
    """AGENTPACK_OPENEXPERTS_MODEL names the model; OPENEXPERTS_MODEL is its documented alias."""
    monkeypatch.delenv("AGENTPACK_OPENEXPERTS_MODEL", raising=False)
    monkeypatch.delenv("OPENEXPERTS_MODEL", raising=False)
    monkeypatch.setenv(name, "model-from-env")
    rt = make_runtime(acme, tools=ledger.tools(), driver="openai", workdir=tmp_path / name)
    assert rt.driver.client.model == "model-from-env"


def test_unknown_driver_names_the_available_ones(make_runtime, acme):
    from agentpack.io.errors import AgentpackError

    with pytest.raises(AgentpackError, match="available: noop, openai, plan, scripted"):
        make_runtime(acme, driver="gpt")


def test_a_plugin_can_register_a_driver(make_runtime, acme, ledger, register_plugin):
    from agentpack import hookimpl
    from agentpack_openexperts.registry import DriverSpec
    from agentpack_openexperts.runtime import AgentResult

    class Echo:
        def run(self, session):
            return AgentResult(structured={"echo": session.inputs["question"]})

    class Plugin:
        @hookimpl
        def agentpack_openexperts_register_drivers(self, register):
            register(DriverSpec("echo", "echoes the question", lambda options: Echo()))

    register_plugin(Plugin(), name="echo-driver")
    rt = make_runtime(acme, tools=ledger.tools(), driver="echo")
    assert rt.run_process("answer-chat", {"customer_id": "C", "question": "hi"}).result["structured"] == {"echo": "hi"}
