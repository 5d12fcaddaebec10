"""``agentpack eval MANIFEST``: the loaded manifest (``Pack.data``) run as one suite, one case per scenario.

``--filter`` and ``--jobs`` work as ``rpc run``'s; ``--option KEY=VALUE``
takes the keys of ``OPTIONS`` (``-`` and ``_`` alike), the rest of what
``rpc run`` offers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError

from .api import open_manifest, require_manifest, running
from .manifest.model import SECONDS_LIMIT, SECONDS_RULE, parse_seconds
from .outputs import html, write_text
from .report import dumps, to_eval_report

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.models import EvalOptions, EvalReport
    from agentpack.kernel.packtypes import Pack

OPTIONS = {
    "timeout": "per-call timeout in seconds (rpc run --timeout)",
    "max_duration": "budget for the whole run in seconds (rpc run --max-duration)",
    "isolation": "reset or process (rpc run --isolation)",
    "executor": "where scenarios run, a registered executor (rpc run --executor)",
    "ray_address": "executor=ray: the cluster's address (rpc run --ray-address; default RAY_ADDRESS)",
    "ray_local": "executor=ray: true starts a throwaway local Ray instance (rpc run --ray-local)",
    "fail_fast": "true stops at the first scenario that fails or errs (rpc run --fail-fast)",
    "tags": "comma-separated tags: also run the scenarios that carry one (rpc run --filter tag:X)",
    "html": "also write the run's HTML page to this file (rpc run --report FILE.html)",
    "json_out": "also write the native JSON report to this file (rpc run --json-out)",
}
"""The ``--option`` keys ``agentpack eval`` takes for an agent-rpc manifest, and what each does."""


def evaluate(pack: Pack, options: EvalOptions, host: Host) -> EvalReport:
    """Run the manifest ``agentpack_load`` read and parsed; its agent starts before validation and the runner load."""
    settings, files = run_settings(options)  # a bad option is an error before the agent starts
    if settings["executor"] == "local":
        manifest, transport = open_manifest(pack.path, document=pack.data, host=host)
    else:  # the executor starts agents where it runs scenarios
        manifest, transport = require_manifest(pack.path, document=pack.data, host=host), None
    from .runner import RunOptions  # loads while the agent starts

    with running(
        pack.path, RunOptions(**settings), suite=options.suite, manifest=manifest, transport=transport, host=host
    ) as report:  # report files and the evaluation report are made while the agent exits (decision 27)
        if "html" in files:
            write_text(files["html"], html(report))
        if "json_out" in files:
            write_text(files["json_out"], dumps(report))
        return to_eval_report(report)


def run_settings(options: EvalOptions) -> tuple[dict[str, Any], dict[str, Path]]:
    """``RunOptions`` arguments from ``--filter``, ``--jobs`` and ``--option``, and the report files asked for."""
    extra = {key.replace("-", "_"): value for key, value in (options.options or {}).items()}
    unknown = sorted(set(extra) - set(OPTIONS))
    if unknown:
        raise AgentpackError(
            f"unknown option {', '.join(repr(k) for k in unknown)} for an agent-rpc manifest; "
            f"known: {', '.join(OPTIONS)}",
            hint="agentpack eval MANIFEST --option timeout=10 --option html=report.html",
        )
    filters = [f.strip() for f in (options.filter or "").split(",") if f.strip()]
    filters += [f"tag:{t.strip()}" for t in str(extra.get("tags", "")).split(",") if t.strip()]
    isolation = extra.get("isolation")
    if isolation not in (None, "reset", "process"):
        raise AgentpackError(f"option isolation must be 'reset' or 'process', got {isolation!r}")
    ray = {"address": extra.get("ray_address"), "local": _flag(extra, "ray_local")}
    settings = {
        "jobs": options.jobs,
        "filters": filters,
        "executor": str(extra.get("executor", "local")),
        "executor_options": {key: value for key, value in ray.items() if value},
        "fail_fast": _flag(extra, "fail_fast"),
        "step_timeout": _seconds(extra, "timeout"),
        "max_duration": _seconds(extra, "max_duration"),
        "isolation": isolation,
    }
    return settings, {key: Path(str(extra[key])) for key in ("html", "json_out") if extra.get(key)}


def _flag(extra: dict[str, Any], key: str) -> bool:
    value = str(extra.get(key, "false")).lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise AgentpackError(f"option {key} must be true or false, got {extra.get(key)!r}")
    return value in ("true", "1", "yes")


def _seconds(extra: dict[str, Any], key: str) -> float | None:
    value = extra.get(key)
    if value is None:
        return None
    seconds = parse_seconds(value)
    if seconds is None:
        raise AgentpackError(f"option {key} must be {SECONDS_RULE}, got {value!r} ({SECONDS_LIMIT})")
    return seconds
