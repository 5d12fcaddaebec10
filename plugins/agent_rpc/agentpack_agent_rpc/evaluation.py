"""``agentpack eval MANIFEST``: the loaded manifest (``Pack.data``) run as a suite, one case per scenario."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentpack.models import EvalOptions, EvalReport, Pack
    from agentpack.plugins import Host


def evaluate(pack: Pack, options: EvalOptions, host: Host) -> EvalReport:
    """Run the manifest ``agentpack_load`` read and parsed; its agent starts before validation."""
    from .api import open_manifest, running
    from .report import to_eval_report
    from .runner import RunOptions

    filters = [f.strip() for f in (options.filter or "").split(",") if f.strip()]
    extra = options.options or {}
    manifest, transport = open_manifest(pack.path, document=pack.data, host=host)
    run_options = RunOptions(jobs=options.jobs, filters=filters, executor=extra.get("executor", "local"))
    with running(
        pack.path, run_options, suite=options.suite, manifest=manifest, transport=transport, host=host
    ) as report:
        return to_eval_report(report)  # while the agent exits
