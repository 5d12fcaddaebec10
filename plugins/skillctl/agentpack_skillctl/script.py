"""The ``skillctl`` console script. ``skillctl run`` with plain options skips click (a faster start);
anything else (help, other commands, unusual options) goes to the click group in ``cli``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .env import ROOT, lookup

FLAGS: dict[str, str | None] = {
    "--quiet-logs": "quiet_logs",
    "--json": "as_json",
    "--check-determinism": "check_determinism",
    "--cache": "cache",
    "--no-cache": None,
    "--require-sandbox": "require_sandbox",
}
VALUES = {
    "-i": "input_file",
    "--input": "input_file",
    "--output": "output_file",
    "--timeout-ms": "timeout_ms",
    "--workspace": "workspace",
    "--report": "report_file",
    "--cache-dir": "cache_dir",
}
PATHS = ("output_file", "workspace", "report_file", "cache_dir")


def parse_fast_run(argv: list[str]) -> dict[str, Any] | None:
    """Keyword arguments for ``run_command``, or None when click should handle ``argv``."""
    args = list(argv)
    kwargs: dict[str, Any] = {"root": lookup(ROOT)}
    if len(args) >= 2 and args[0] == "--root":
        kwargs["root"] = args[1]
        args = args[2:]
    if not args or args[0] != "run":
        return None
    positional = []
    rest = iter(args[1:])
    for arg in rest:
        if arg in FLAGS:
            flag = FLAGS[arg]
            if flag:
                kwargs[flag] = True
        elif arg in VALUES:
            value = next(rest, None)
            if value is None:
                return None
            kwargs[VALUES[arg]] = value
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            positional.append(arg)
    if len(positional) != 1 or "input_file" not in kwargs:
        return None
    kwargs["ref"] = positional[0]
    if "timeout_ms" in kwargs:
        if not kwargs["timeout_ms"].isdigit() or int(kwargs["timeout_ms"]) < 1:
            return None
        kwargs["timeout_ms"] = int(kwargs["timeout_ms"])
    for key in PATHS:
        if key in kwargs:
            kwargs[key] = Path(kwargs[key])
    if "workspace" in kwargs and not kwargs["workspace"].is_dir():
        return None  # click explains it
    return kwargs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    kwargs = parse_fast_run(argv)
    if kwargs is None:
        from .cli import main as click_main

        return click_main(argv)
    from agentpack.io.errors import AgentpackError

    from .runcmd import run_command

    try:
        return run_command(**kwargs)
    except AgentpackError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.stderr.flush()
        return exc.exit_code
    except BrokenPipeError:
        return 0


def run_script() -> None:
    sys.exit(main())
