"""Where the cluster is and the limits of a Ray run: ``--ray-address``/``RAY_ADDRESS``/``--ray-local`` and env vars."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from agentpack.io.errors import AgentpackError

ENV = "AGENTPACK_AGENT_RPC_RAY_"
"""Prefix of the executor's tuning variables (see ``RaySettings.read``)."""


class RaySettings(NamedTuple):
    """How a run uses Ray. ``address`` None with ``local`` True: a throwaway single-node instance."""

    address: str | None
    local: bool
    cpus: float = 1.0
    """Ray CPU resource a scenario slot (one agent session) reserves; below 1 packs more agents per CPU."""
    node_retries: int = 3
    """How often a scenario whose node was lost is sent again before it is reported as an error."""
    max_upload_mb: float = 100.0
    """Largest manifest folder (MiB) that travels with the job."""
    judge_concurrency: int = 4
    """``llm_judge`` calls in flight across the whole cluster."""
    start_timeout: float = 120.0
    """Seconds to wait for a node to take a scenario slot before the run gives up."""

    @classmethod
    def read(cls, options: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> RaySettings:
        """From the executor options (``address``, ``local``), ``RAY_ADDRESS`` and ``AGENTPACK_AGENT_RPC_RAY_*``."""
        address = options.get("address") or None
        local = bool(options.get("local"))
        if address and local:
            raise AgentpackError("give either --ray-address or --ray-local, not both")
        if not local:
            address = address or environ.get("RAY_ADDRESS") or None
        if not address and not local:
            raise AgentpackError(
                "--executor ray needs a Ray cluster, and none was given",
                hint="--ray-address HOST:PORT (or RAY_ADDRESS) for an existing cluster, "
                "or --ray-local for a throwaway one on this machine",
            )
        return cls(
            address=address,
            local=local,
            cpus=_number(environ, "cpus", float, positive=True),
            node_retries=_number(environ, "node_retries", int, positive=False),
            max_upload_mb=_number(environ, "max_upload_mb", float, positive=True),
            judge_concurrency=_number(environ, "judge_concurrency", int, positive=True),
            start_timeout=_number(environ, "start_timeout", float, positive=True),
        )


def _number(environ: Mapping[str, str], field: str, kind: type, *, positive: bool) -> Any:
    """``AGENTPACK_AGENT_RPC_RAY_<FIELD>`` as ``kind`` (above 0, or at least 0), else the field's default."""
    name = ENV + field.upper()
    raw = environ.get(name, "").strip()
    if not raw:
        return RaySettings._field_defaults[field]
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "above 0" if positive else "0 or more"
        raise AgentpackError(f"{name} must be {'an integer' if kind is int else 'a number'} {bound}, got {raw!r}")
    return value
