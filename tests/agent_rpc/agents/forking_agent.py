"""A raw stdio agent that, on agent/initialize, leaves a daemon behind: fork, setsid, fork again, exec a sleeper.

argv: MARKER [clean]. The sleeper's command line carries MARKER (tests look for it in /proc); with
``clean`` it runs with an empty environment, so nothing in it says which run it came from. The step
input ``wait`` makes the agent itself hang.
"""

import json
import os
import sys
import time

marker = sys.argv[1]
clean = "clean" in sys.argv[2:]


def daemon() -> None:
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            argv = [sys.executable, "-c", "import time; time.sleep(300)", marker]
            os.execve(sys.executable, argv, {} if clean else dict(os.environ))
        os._exit(0)
    os.waitpid(first, 0)


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "agent/initialize":
        daemon()
        result = {"name": "forking", "protocol_version": "1.0", "capabilities": {}}
    elif method == "agent/reset":
        result = True
    else:
        if message["params"]["input"] == "wait":
            time.sleep(300)
        result = {"status": "done", "public_output": message["params"]["input"]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
