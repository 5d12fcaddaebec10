"""A raw stdio agent whose step replies are JSON the runtime must refuse, chosen by the step's input.

deep: a result nested 10 000 levels; nan / infinity: a number JSON does not have; truncated: a reply
cut short; nested_ok: tool-call arguments nested 200 levels (accepted); anything else: an echo.
"""

import json
import sys


def reply(rid, result_text):
    sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {rid}, "result": {result_text}}}\n')
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    rid, method = message["id"], message["method"]
    if method == "agent/initialize":
        reply(rid, json.dumps({"name": "hostile", "protocol_version": "1.0", "capabilities": {}}))
        continue
    if method == "agent/reset":
        reply(rid, "true")
        continue
    text = message["params"]["input"]
    if text == "deep":
        reply(rid, "[" * 10_000 + "]" * 10_000)
    elif text == "nan":
        reply(rid, '{"status": "done", "public_output": "x", "usage": {"input_tokens": NaN}}')
    elif text == "infinity":
        reply(rid, '{"status": "done", "public_output": "x", "usage": {"output_tokens": -Infinity}}')
    elif text == "truncated":
        sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {rid}, "result": {{"status": "do\n')
        sys.stdout.flush()
    elif text == "nested_ok":
        arguments = "[" * 200 + "1" + "]" * 200
        call = '{"name": "deep", "arguments": {"v": ' + arguments + "}}"
        reply(rid, '{"status": "done", "public_output": "nested", "tool_calls": [' + call + "]}")
    else:
        reply(rid, json.dumps({"status": "done", "public_output": "Echo: " + text}))
