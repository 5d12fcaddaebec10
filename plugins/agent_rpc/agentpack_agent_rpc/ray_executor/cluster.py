"""Connect this process to a Ray cluster (or start a throwaway local one) for one run, then disconnect."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from agentpack.io.errors import AgentpackError, require

from .settings import RaySettings

LOCAL_OBJECT_STORE = 200 * 1024 * 1024
"""A throwaway instance carries scenario records only: a small object store, not Ray's 30 % of memory."""


def import_ray() -> ModuleType:
    """Ray, or an error that names the extra to install."""
    return require("ray", distribution="agentpack-agent-rpc", extra="ray", feature="--executor ray")


@contextmanager
def connect(settings: RaySettings, working_dir: Path) -> Iterator[ModuleType]:
    """Ray, initialised with the manifest's folder as the job's ``working_dir``; shut down on the way out.

    Ray's driver logs stay quiet (errors only) and workers' output is not
    forwarded: each scenario record carries its agent's stderr. ``ray.init``
    replaces the SIGTERM handler, so the caller's is put back.
    """
    ray = import_ray()
    kwargs: dict = {}
    if settings.local:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # an offline tool's throwaway instance reports nothing
        kwargs = {"include_dashboard": False, "object_store_memory": LOCAL_OBJECT_STORE}
    address = "local" if settings.local else settings.address
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(
            address=address,
            runtime_env={"working_dir": str(working_dir)},
            logging_level=logging.ERROR,
            log_to_driver=False,
            **kwargs,
        )
    except (OSError, ValueError, RuntimeError) as exc:  # ConnectionError is an OSError
        ray.shutdown()
        where = "start a local Ray instance" if settings.local else f"connect to the Ray cluster at {address}"
        raise AgentpackError(
            f"cannot {where}: {exc}",
            hint=None
            if settings.local
            else "check the address with 'ray status --address ADDR'; "
            "--ray-local starts a throwaway instance on this machine",
        ) from None
    finally:
        if main and sigterm is not None:
            signal.signal(signal.SIGTERM, sigterm)
    try:
        yield ray
    finally:
        ray.shutdown()
