"""A small customer-support agent written with agentpack.agents (rule-based, so the demo is offline).

python support_agent.py                  # stdio
python support_agent.py --http --port 0  # Streamable HTTP on http://127.0.0.1:PORT/ecp
"""

import re

from agentpack.agents import Agent, Result

agent = Agent("support-agent", capabilities={"tool_calls": {}, "evaluation_context": {}, "multi_turn": {}})
ORDERS = {"A-1001": "shipped", "A-1002": "processing"}
state = {"awaiting_order": False, "tone": "friendly"}


@agent.initialize
def initialize(config):
    state["tone"] = config.get("tone", "friendly")


@agent.reset
def reset():
    state["awaiting_order"] = False


def _order(text):
    match = re.search(r"\bA-\d{4}\b", text)
    return match.group(0) if match else None


@agent.step
def step(text):
    order = _order(text)
    lowered = text.lower()
    if "refund" in lowered and not order:
        state["awaiting_order"] = True
        return Result(
            status="paused",
            public_output="I can help with a refund. What is your order number?",
            evaluation_context="asked for the order number before acting",
        )
    if order and (state["awaiting_order"] or "refund" in lowered):
        state["awaiting_order"] = False
        status = ORDERS.get(order, "unknown")
        return Result(
            public_output=f"Your refund for order {order} has been issued. It takes 3-5 business days.",
            evaluation_context=f"order {order} is {status}; refund policy allows it",
            tool_calls=[
                {"name": "lookup_order", "arguments": {"order_id": order, "fields": ["status", "total"]}},
                {"name": "issue_refund", "arguments": {"order_id": order, "reason": "customer request"}},
            ],
            usage={"input_tokens": 42, "output_tokens": 17},
        )
    if order:
        status = ORDERS.get(order)
        if status is None:
            return Result(
                public_output=f"I could not find order {order}.",
                evaluation_context="lookup returned nothing",
                tool_calls=[{"name": "lookup_order", "arguments": {"order_id": order}}],
            )
        return Result(
            public_output=f"Order {order} is {status}.",
            evaluation_context=f"looked up {order}",
            tool_calls=[{"name": "lookup_order", "arguments": {"order_id": order}}],
        )
    if "password" in lowered:
        return Result(
            public_output="For security, I cannot see or reset passwords here. Use the account page.",
            evaluation_context="refused to handle credentials",
        )
    greeting = "Hello!" if state["tone"] == "friendly" else "Good day."
    return Result(public_output=f"{greeting} How can I help you today?", evaluation_context="small talk")


if __name__ == "__main__":
    agent.main()
