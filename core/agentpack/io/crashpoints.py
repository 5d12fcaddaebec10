"""Named points where crash-safety tests stop a process for real (SIGKILL), one environment prefix per plugin.

With ``prefix="AGENTPACK_OPENEXPERTS"``:

* ``AGENTPACK_OPENEXPERTS_CRASH_AT=call.after_tool`` kills the process when it reaches that point;
  ``=*`` with ``AGENTPACK_OPENEXPERTS_CRASH_SKIP=N`` kills it at the N-th point reached, whatever its name
  (a test walks every point of a run that way);
* ``AGENTPACK_OPENEXPERTS_CRASH_TRACE=FILE`` appends each point's name to FILE, so a test can list the
  points a run passes.

Unset, a crash point costs two environment lookups.
"""

from __future__ import annotations

import os
import signal

_reached: dict[str, int] = {}


def crashpoint(name: str, *, prefix: str) -> None:
    """SIGKILL this process here when ``{prefix}_CRASH_AT`` names this point (see the module docstring)."""
    trace = os.environ.get(f"{prefix}_CRASH_TRACE")
    if trace:
        with open(trace, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")
    target = os.environ.get(f"{prefix}_CRASH_AT")
    if not target:
        return
    if target == "*":
        _reached[prefix] = _reached.get(prefix, 0) + 1
        if _reached[prefix] != int(os.environ.get(f"{prefix}_CRASH_SKIP", "1")):
            return
    elif name != target:
        return
    os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["crashpoint"]
