"""A test agent written with agentpack.agents: echo, memory across turns, tools, paused turns, errors."""

import os

from agentpack.agents import Agent, Result

agent = Agent("test-sdk-agent", capabilities={"tool_calls": {}, "evaluation_context": {}})
state = {"history": [], "config": {}}


@agent.initialize
def initialize(config):
    state["config"] = config
    return None


@agent.step
def step(text):
    state["history"].append(text)
    if text.startswith("lookup "):
        order = text.split(" ", 1)[1]
        return Result(
            public_output=f"Order {order} has shipped.",
            evaluation_context="looked the order up",
            tool_calls=[
                {"name": "lookup_order", "arguments": {"order_id": order, "options": {"verbose": True}}},
                {"name": "send_email", "arguments": {"to": "customer"}},
            ],
        )
    if text == "count":
        return Result(public_output=str(len(state["history"])))
    if text == "ask":
        return Result(public_output="Which order do you mean?", status="paused")
    if text == "config":
        return Result(public_output=repr(sorted(state["config"].items())))
    if text == "env":
        return Result(public_output=os.environ.get("AGENT_GREETING", "unset") + " in " + os.path.basename(os.getcwd()))
    if text == "boom":
        raise RuntimeError("the agent broke")
    if text == "thought":
        return {"status": "done", "public_output": "ok", "private_thought": "legacy thought"}
    if text == "flaky":
        path = os.environ["FLAKY_FILE"]
        count = 0
        if os.path.exists(path):
            with open(path) as handle:
                count = int(handle.read() or 0)
        with open(path, "w") as handle:
            handle.write(str(count + 1))
        return Result(public_output="good" if count % 2 == 0 else "bad")
    return Result(
        public_output=f"Echo: {text}",
        evaluation_context=f"turn {len(state['history'])}",
        usage={"input_tokens": 3, "output_tokens": 5},
    )


@agent.reset
def reset():
    state["history"].clear()


if __name__ == "__main__":
    agent.main()
