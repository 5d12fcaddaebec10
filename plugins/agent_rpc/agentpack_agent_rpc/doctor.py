"""``agentpack rpc doctor [MANIFEST]``: check what a run needs, before a run finds out.

Without a manifest: the interpreter, ``python`` on ``PATH`` and the SDKs it
can import, process containment (subreaper, guard, PID namespace), the HTTP
client, the timeout and the ``llm_judge`` settings. With one: the manifest
(and whether ecp-runtime would run it), where its agent starts, whether the
files its command names are there, and whether it answers
``agent/initialize`` (``start=False`` skips that). A check is ``ok``,
``warn`` (a run may still work) or ``fail`` (a run would fail).
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .env import JUDGE_API_KEY, JUDGE_BASE_URL, JUDGE_MODEL, TIMEOUT, described, getenv
from .manifest.model import SECONDS_LIMIT, SECONDS_RULE, Manifest, parse_seconds

if TYPE_CHECKING:
    from agentpack.kernel.host import Host

_FIND_SDKS = "import importlib.util as u; print(*(bool(u.find_spec(m)) for m in ('agentpack.agents', 'ecp')))"


class Check(NamedTuple):
    """One thing the doctor looked at: ``status`` is ok, warn or fail."""

    name: str
    status: str
    detail: str


def run_doctor(manifest: Path | None = None, *, start: bool = True, host: Host | None = None) -> list[Check]:
    """The environment's checks, then the manifest's (when given)."""
    loaded: Manifest | None = None
    checks: list[Check] = []
    if manifest is not None:
        loaded, checks = _manifest(manifest, host)
    found = _environment(loaded) + checks
    if loaded is not None:
        found += _agent(loaded, start)
    return found


def _environment(manifest: Manifest | None) -> list[Check]:
    from . import __version__
    from .containment import wrap_pid_namespace

    checks = [
        Check("agentpack", "ok", f"{__version__} on Python {platform.python_version()} ({sys.executable})"),
        Check("working directory", "ok", f"{os.getcwd()} (agents of manifests without 'cwd:' start here)"),
        _python_on_path(),
    ]
    from agentpack.io.proc import set_child_subreaper

    if set_child_subreaper():
        checks.append(Check("process containment", "ok", "child subreaper: daemons an agent leaves end with the run"))
    else:
        checks.append(
            Check(
                "process containment",
                "warn",
                "no child subreaper here (Linux only): a daemon an agent leaves may outlive the run",
            )
        )
    wants_namespace = manifest is not None and manifest.target.pid_namespace
    try:
        probe = wrap_pid_namespace(["true"])
        works = subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
        detail = "bubblewrap makes PID namespaces here" if works else "bubblewrap is installed but cannot make one"
    except (OSError, subprocess.TimeoutExpired) as exc:
        works, detail = False, str(exc)
    status = "ok" if works else ("fail" if wants_namespace else "warn")
    checks.append(Check("pid_namespace", status, detail + ("" if works else ": 'pid_namespace: true' cannot run")))
    checks.append(_httpx(manifest))
    value = getenv(TIMEOUT)
    if value is None:
        checks.append(Check("timeout", "ok", f"{described(TIMEOUT)} unset: 30 s per call unless the manifest says"))
    elif parse_seconds(value) is None:
        checks.append(
            Check("timeout", "fail", f"{described(TIMEOUT)}={value!r}: must be {SECONDS_RULE} ({SECONDS_LIMIT})")
        )
    else:
        checks.append(Check("timeout", "ok", f"{value} s per call unless the manifest says (from the environment)"))
    checks.append(_judge(manifest))
    return checks


def _python_on_path() -> Check:
    found = shutil.which("python")
    if found is None:
        return Check("python on PATH", "warn", "none: targets such as 'python agent.py' cannot start")
    try:
        answer = subprocess.run([found, "-c", _FIND_SDKS], capture_output=True, text=True, timeout=30, check=False)
        ours, theirs = (word == "True" for word in answer.stdout.split())
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return Check("python on PATH", "warn", f"{found} does not run")
    sdks = [name for name, there in (("agentpack.agents", ours), ("ecp (ecp-sdk)", theirs)) if there]
    if ours:
        return Check("python on PATH", "ok", f"{found}: can import {' and '.join(sdks)}")
    detail = f"{found}: cannot import agentpack.agents, so agents written with agentpack's SDK need "
    detail += f"the path of an interpreter that can ({sys.executable})"
    return Check("python on PATH", "warn", detail + (f"; it can import {sdks[0]}" if sdks else ""))


def _httpx(manifest: Manifest | None) -> Check:
    import importlib.util

    http = manifest is not None and manifest.target.kind == "http"
    if importlib.util.find_spec("httpx") is not None:
        return Check("HTTP agents", "ok", "httpx is installed")
    return Check("HTTP agents", "fail" if http else "warn", "httpx is not installed: http(s) targets cannot run")


def _judge(manifest: Manifest | None) -> Check:
    from .graders.llm_judge import DEFAULT_MODEL

    used = manifest is not None and any(
        g.type == "llm_judge" for s in manifest.scenarios for st in s.steps for g in st.graders
    )
    pins = manifest.judge if manifest is not None else {}
    model = pins.get("model") or getenv(JUDGE_MODEL) or DEFAULT_MODEL
    endpoint = pins.get("base_url") or getenv(JUDGE_BASE_URL) or "OpenAI's"
    if getenv(JUDGE_API_KEY) is None:
        detail = f"no API key: llm_judge checks would be errors (set {described(JUDGE_API_KEY)})"
        return Check("llm_judge", "fail" if used else "warn", detail)
    return Check("llm_judge", "ok", f"API key set; model {model}, endpoint {endpoint}")


def _manifest(path: Path, host: Host | None) -> tuple[Manifest | None, list[Check]]:
    from .api import validate_manifest

    manifest, findings = validate_manifest(path, portable=True, host=host)
    portable = [f for f in findings if f.code in ("ARP401", "ARP402")]
    errors = [f for f in findings if f.severity == "error" and f.code not in ("ARP401", "ARP402")]
    if errors or manifest is None:
        first = errors[0] if errors else findings[0]
        more = f" (and {len(errors) - 1} more: agentpack rpc validate)" if len(errors) > 1 else ""
        return None, [Check("manifest", "fail", f"{first.location()}: {first.message}{more}")]
    steps = sum(len(s.steps) for s in manifest.scenarios)
    checks = [Check("manifest", "ok", f"{path}: {manifest.name!r}, {len(manifest.scenarios)} scenarios, {steps} steps")]
    if portable:
        features = sorted({f.message.split("'")[1] for f in portable})
        checks.append(
            Check(
                "portable",
                "warn",
                f"ecp-runtime 0.10 would not run it as is: {', '.join(features)} (agentpack rpc validate --portable)",
            )
        )
    else:
        checks.append(Check("portable", "ok", "ecp-runtime 0.10 runs it too"))
    return manifest, checks


def _agent(manifest: Manifest, start: bool) -> list[Check]:
    from .manifest.loader import start_hint

    target = manifest.target
    if target.kind == "http":
        checks = [Check("agent", "ok", f"Streamable HTTP at {target.url}")]
    else:
        where = target.cwd or os.getcwd()
        how = "from the manifest's cwd" if target.cwd else "the current directory: the manifest sets no cwd"
        checks = [Check("agent working directory", "ok", f"{where} ({how})")]
        checks.append(_command(manifest, Path(where)))
    if start:
        checks.append(_answers(manifest, start_hint(manifest)))
    return checks


def _command(manifest: Manifest, where: Path) -> Check:
    command = manifest.target.command
    if isinstance(command, str):
        return Check("agent command", "ok", f"{command} (through /bin/sh)")
    assert command is not None
    program = command[0]
    if not ((where / program).exists() if os.sep in program else shutil.which(program)):
        return Check("agent command", "fail", f"'{program}' is not on PATH nor in {where}")
    missing = [w for w in command[1:] if not w.startswith("-") and _looks_like_file(w) and not (where / w).exists()]
    if missing:
        return Check("agent command", "fail", f"'{missing[0]}' is not in {where}")
    return Check("agent command", "ok", shlex.join(command))


def _looks_like_file(word: str) -> bool:
    return os.sep in word or word.endswith((".py", ".js", ".sh", ".ts", ".rb"))


def _answers(manifest: Manifest, hint: str) -> Check:
    from .containment import Containment
    from .protocol import CallError
    from .session import Session

    scope = Containment()
    try:
        try:
            session = Session.open(manifest.target, manifest.config, 10.0, scope=scope)
        except CallError as exc:
            return Check("agent answers", "fail", f"{exc}{hint}")
        session.close()
    finally:
        scope.close()
    info: dict[str, Any] = session.info
    return Check("agent answers", "ok", f"agent/initialize: {info['name']!r}, protocol {info['protocol_version']}")
