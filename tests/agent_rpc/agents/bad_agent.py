"""A raw stdio agent (no SDK) that misbehaves on its second step, as argv[1] says."""

import json
import os
import subprocess
import sys
import time

mode = sys.argv[1]
steps = 0
for line in sys.stdin:
    message = json.loads(line)
    rid, method = message.get("id"), message.get("method")

    def reply(result, rid=rid):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
        sys.stdout.flush()

    if method == "agent/initialize":
        if "PGID_FILE" in os.environ:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            with open(os.environ["PGID_FILE"], "a") as handle:
                handle.write(f"{os.getpgid(0)}\n")
        if mode == "init_crash":
            sys.stderr.write("Traceback: cannot import the model\n")
            sys.exit(4)
        info = {"name": f"bad-{mode}", "capabilities": {}}
        if mode != "legacy":
            info["protocol_version"] = "1.0"
        reply(info)
        continue
    if method == "agent/reset":
        reply(True)
        continue
    steps += 1
    output = {"status": "done", "public_output": f"answer {steps}"}
    if mode == "stderr":
        sys.stderr.write(("e" * 1023 + "\n") * 1024)  # 1 MB per step
        sys.stderr.flush()
    elif steps == 2:
        if mode == "crash":
            sys.stderr.write("fatal: crashing now\n")
            sys.stderr.flush()
            os._exit(3)
        if mode == "hang":
            time.sleep(3600)
        if mode == "invalid_json":
            sys.stdout.write("this is not json\n{broken\n")
        if mode == "wrong_id":
            rid = "not-my-id"
        if mode == "huge":
            output["public_output"] = "y" * (4 << 20)
        if mode == "bad_result":
            output = {"status": "finished", "public_output": 42}
        if mode == "error":
            sys.stdout.write(
                json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "nope"}}) + "\n"
            )
            sys.stdout.flush()
            continue
    reply(output, rid)
if mode == "linger":  # takes a while to exit after the end of its input
    time.sleep(0.3)
if mode == "ignore_eof":  # does not exit at the end of its input: the runtime must kill it
    time.sleep(3600)
