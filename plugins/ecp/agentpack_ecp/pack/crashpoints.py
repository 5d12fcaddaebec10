"""Named points where crash-safety tests stop a build, refresh, publish or rollback for real.

``AGENTPACK_ECP_CRASH_AT=publish.after_swap`` makes the process SIGKILL itself
when it reaches that point (``AGENTPACK_ECP_CRASH_AT=*`` with
``AGENTPACK_ECP_CRASH_SKIP=N``: at the N-th point reached, whatever its name).
``AGENTPACK_ECP_CRASH_MODE=sleep`` pauses there instead (at most 60 s) so a test
can act while the process holds the pack lock, then kill it.
``AGENTPACK_ECP_CRASH_TRACE=FILE`` appends each point's name to FILE, so a test
can list the points a run passes. Unset, a crash point costs one dict lookup.
"""

from __future__ import annotations

import itertools
import os
import signal
import time

_reached = itertools.count(1)
"""How many crash points this process has passed (``AGENTPACK_ECP_CRASH_AT=*``)."""


def crashpoint(name: str) -> None:
    target = os.environ.get("AGENTPACK_ECP_CRASH_AT")
    trace = os.environ.get("AGENTPACK_ECP_CRASH_TRACE")
    if trace:
        with open(trace, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")
    if not target:
        return
    if target == "*":
        if next(_reached) != int(os.environ.get("AGENTPACK_ECP_CRASH_SKIP", "1")):
            return
    elif name != target:
        return
    if os.environ.get("AGENTPACK_ECP_CRASH_MODE") == "sleep":
        if trace:
            with open(trace, "a", encoding="utf-8") as handle:
                handle.write(f"sleeping at {name}\n")
        time.sleep(60)
        return
    os.kill(os.getpid(), signal.SIGKILL)
