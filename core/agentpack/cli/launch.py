"""The ``agentpack`` console script: settings for a short-lived process, then the CLI.

A command allocates tens of thousands of long-lived objects (modules,
classes, functions, parsed documents) and few reference cycles. With the
default thresholds the cyclic collector walks the young ones again and again
(about 15 ms of a 200-step ``rpc run``), and the interpreter's shutdown walks
all of them once more. So the young generation collects after 50,000
allocations instead of 700 (mypy uses a higher figure still), and the objects
still alive at the end are frozen, which shutdown's collections then skip.
Nothing is left undone: objects are freed and finalized as before.
"""

from __future__ import annotations

import gc
import sys

GEN0_THRESHOLD = 50_000


def run() -> None:
    gc.set_threshold(GEN0_THRESHOLD, 10, 10)
    from agentpack.cli.app import main

    code = main()
    gc.freeze()
    sys.exit(code)
