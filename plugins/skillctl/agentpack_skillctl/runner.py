"""Run a prepared skill: schema-checked JSON in and out, the declared limits enforced, a run report.

The status is one of ``ok``, ``invalid_input``, ``invalid_output``,
``failed`` (non-zero exit), ``timeout``, ``violation`` (an undeclared
write), ``nondeterministic`` (``check_determinism``) and ``error`` (the
command could not start). Every outcome gives a report; none raises.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentpack.io import jsonio
from agentpack.io.hashing import canonical_json_bytes, sha256_bytes
from agentpack.io.paths import is_within
from agentpack.io.quickschema import is_valid
from agentpack.kernel.records import Record, constant

from . import cache as cache_mod
from . import confine, writes
from .iopump import pump
from .manifest import JsonSchema
from .prepare import Prepared
from .sandbox import build_env, find_program
from .writes import changed, snapshot, split_writes

if TYPE_CHECKING:
    from agentpack.io.clock import Clock

MAX_STDOUT = 64 * 1024 * 1024
KEEP_STDERR = 256 * 1024
MAX_LOG_RECORDS = 200
MAX_ERRORS = 20


class RunResult(Record):
    """What a run gives back: ``status``, the validated ``output`` (None unless ok) and the run ``report``."""

    __slots__ = ("status", "output", "report", "output_bytes")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"output_bytes": constant(b"")}
    status: str
    output: Any
    report: dict[str, Any]
    output_bytes: bytes

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class WallClock:
    """The system clock of ``agentpack.io.clock.Clock`` (``iso``, ``monotonic``) without datetime and uuid imports."""

    def monotonic(self) -> float:
        return time.monotonic()

    def iso(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


WALL_CLOCK = WallClock()


class RunOptions(Record):
    """``workspace`` (required), ``timeout_ms``, ``cache``, ``cache_dir``, ``check_determinism``, ``on_stderr``,
    ``clock`` (an ``agentpack.io.clock.Clock``), ``watch_filesystem`` and ``require_sandbox`` (refuse to run
    when a protection of the sandbox is missing here)."""

    __slots__ = (
        "workspace",
        "timeout_ms",
        "cache",
        "cache_dir",
        "check_determinism",
        "on_stderr",
        "clock",
        "watch_filesystem",
        "require_sandbox",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "timeout_ms": constant(None),
        "cache": constant(False),
        "cache_dir": constant(None),
        "check_determinism": constant(False),
        "on_stderr": constant(None),
        "clock": constant(WALL_CLOCK),
        "watch_filesystem": constant(True),
        "require_sandbox": constant(False),
    }
    workspace: Path
    timeout_ms: int | None
    cache: bool
    cache_dir: Path | None
    check_determinism: bool
    on_stderr: Callable[[bytes], None] | None
    clock: Clock | WallClock
    watch_filesystem: bool
    require_sandbox: bool


def _schema_errors(schema: JsonSchema, value: Any, side: str) -> list[dict[str, Any]]:
    if is_valid(schema, value):
        return []
    from .io_schemas import user_validator

    try:
        errors = sorted(user_validator(schema).iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    except Exception as exc:  # a broken schema (validate reports it as SKC131); never a traceback
        return [
            {
                "code": f"{side}_schema_unusable",
                "side": "runner",
                "pointer": None,
                "message": f"the {side} schema cannot be applied ({type(exc).__name__}: {exc}); "
                "run 'agentpack validate' on the skill",
            }
        ]
    return [
        {
            "code": f"{side}_schema",
            "side": side,
            "message": e.message,
            "pointer": "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in e.absolute_path),
        }
        for e in errors[:MAX_ERRORS]
    ]


def _cached_output(hit: bytes) -> Any:
    """A cached output, or None when it is not strict JSON any more (a miss, not a crash)."""
    try:
        return jsonio.loads(hit)
    except jsonio.JsonError:
        return None


def run_prepared(prepared: Prepared, options: RunOptions, *, value: Any = None, raw: bytes | None = None) -> RunResult:
    """Run once (twice with ``check_determinism``). ``raw`` is JSON text; otherwise ``value`` is the input."""
    clock = options.clock
    started = clock.iso()
    t0 = clock.monotonic()
    report = _base_report(prepared, options, started)
    if raw is not None:
        try:
            value = jsonio.loads(raw)
        except jsonio.JsonError as exc:
            return _finish(
                report,
                t0,
                clock,
                "invalid_input",
                errors=[{"code": "input_json", "side": "input", "message": f"the input is not JSON: {exc}"}],
            )
    try:
        data = canonical_json_bytes(value)
    except (TypeError, ValueError) as exc:
        return _finish(
            report,
            t0,
            clock,
            "invalid_input",
            errors=[{"code": "input_json", "side": "input", "message": f"the input cannot be encoded as JSON: {exc}"}],
        )
    report["input"] = {"sha256": sha256_bytes(data), "bytes": len(data)}
    errors = _schema_errors(prepared.input_schema, value, "input")
    if errors:
        return _finish(report, t0, clock, "invalid_input", errors=errors)

    eligible, why = cache_mod.eligibility(prepared)
    report["cache"] = {"eligible": eligible, "hit": False, "key": None, "reason": why}
    key = None
    if options.cache and eligible:
        key = cache_mod.key(prepared, report["input"]["sha256"])
        report["cache"]["key"] = key
        hit = cache_mod.load(options.cache_dir, key)
        cached = _cached_output(hit) if hit is not None else None
        if hit is not None and cached is not None and not _schema_errors(prepared.output_schema, cached, "output"):
            report["cache"]["hit"] = True
            report["exitCode"] = 0
            report["output"] = {"sha256": sha256_bytes(hit), "bytes": len(hit)}
            return _finish(report, t0, clock, "ok", output=cached, output_bytes=hit)

    outcome = _execute(prepared, options, data, report)
    if outcome.status == "ok" and options.check_determinism and prepared.grants.write_globs:
        report["determinismCheck"] = {
            "runs": 1,
            "identical": None,
            "skipped": (
                "the skill writes to the workspace, so a second run would not start from the same files; "
                "'skill test --check-determinism' runs each fixture twice in fresh workspaces"
            ),
        }
    elif outcome.status == "ok" and options.check_determinism:
        second = _execute(prepared, options, data, _base_report(prepared, options, started))
        identical = second.output_bytes == outcome.output_bytes and second.status == "ok"
        report["determinismCheck"] = {
            "runs": 2,
            "identical": identical,
            "outputSha256": [
                sha256_bytes(outcome.output_bytes),
                sha256_bytes(second.output_bytes) if second.status == "ok" else None,
            ],
        }
        if not identical:
            outcome.status = "nondeterministic"
            outcome.errors.append(
                {
                    "code": "nondeterministic",
                    "side": "skill",
                    "message": "two runs with the same input gave different output bytes"
                    if second.status == "ok"
                    else f"the second run ended with '{second.status}'",
                }
            )
    if outcome.status == "ok" and key is not None:
        cache_mod.store(options.cache_dir, key, outcome.output_bytes)
    return _finish(
        report,
        t0,
        clock,
        outcome.status,
        errors=outcome.errors,
        output=outcome.output,
        output_bytes=outcome.output_bytes,
    )


class _Outcome(Record):
    __slots__ = ("status", "errors", "output", "output_bytes")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"output": constant(None), "output_bytes": constant(b"")}
    status: str
    errors: list[dict[str, Any]]
    output: Any
    output_bytes: bytes


REFUSED_START = re.compile(
    r"Cannot fork|fork: |fork failed|spawn \S* ?EPERM|\bEPERM\b|\[Errno 1\] Operation not permitted"
    r"|Operation not permitted|can't fork|Resource temporarily unavailable.*fork"
)
"""What a program writes when the syscall filter refuses its fork or exec (EPERM): sh, bash, Python, Node."""


def _refused_start(skill: Any, reason: str, tail: str) -> dict[str, Any]:
    where = skill.where("/security/access/subprocess/allowed")
    at = f"{where['file']}:{where['line']}" if where["line"] else where["file"]
    return {
        "code": "subprocess_refused",
        "side": "skill",
        "pointer": where["pointer"],
        "message": f"the skill tried to start another program, which {at} forbids "
        f"(security.access.subprocess.allowed: false); it ended with {reason}: {tail}",
    }


def _execute(prepared: Prepared, options: RunOptions, data: bytes, report: dict[str, Any]) -> _Outcome:
    skill, g = prepared.skill, prepared.grants
    enforcement = report["enforcement"]
    timeout_ms = options.timeout_ms or skill.timeout_ms
    enforcement["timeout"] = {"ms": timeout_ms, "expired": False, "killed": "none"}
    workspace = os.path.realpath(options.workspace)
    skill_dir = os.path.realpath(skill.directory)
    env, fixed = build_env(
        granted=g.env,
        time=skill.get("determinism", "time", default="forbidden"),
        randomness=skill.get("determinism", "randomness", default="forbidden"),
        extra={"SKILL_DIR": skill_dir, "SKILL_WORKSPACE": workspace, "SKILL_ID": skill.id},
    )
    enforcement["env"] = {
        "level": "reduced",
        "passed": sorted(k for k in env if k in g.env),
        "withheld": sorted(g.withheld_env),
        "fixed": fixed,
    }
    argv = list(prepared.argv)
    program = argv[0] if "/" in argv[0] else find_program(argv[0], env["PATH"])
    if program is None:
        message = f"cannot start {prepared.argv[0]!r}: not found on PATH {env['PATH']}"
        return _Outcome("error", [{"code": "spawn", "side": "runner", "message": message}])
    argv[0] = program
    require = options.require_sandbox or bool(prepared.access is not None and prepared.access.sandbox_required)
    shell = confine.runs_a_shell(program, skill.get("runtime", "type"))
    plan = confine.plan(argv=argv, skill_dir=skill_dir, workspace=workspace, grants=g, require=require, shell=shell)
    report["sandbox"] = plan.section
    enforcement["subprocess"]["level"] = plan.levels["subprocess"]
    confine.warn(skill.id, plan.section)
    if plan.refused:
        confine.finish(plan)
        missing = ", ".join(m["protection"] for m in plan.section["missing"])
        message = f"a complete sandbox is required and this machine lacks: {missing} (see the report's sandbox section)"
        return _Outcome("error", [{"code": "sandbox_required", "side": "runner", "message": message}])
    watched = _watched(plan, skill_dir, workspace) if options.watch_filesystem else []
    scratch = plan.tmpdir or _scratch()
    env["TMPDIR"] = scratch
    try:
        before = [snapshot(Path(root), parts) for _, root, parts in watched]
        if plan.view is not None and watched:  # an area too large to watch is not writable for this run
            frozen = before[0][1]
            if frozen:
                confine.freeze(plan, workspace, frozen, limit=writes.MAX_ENTRIES)
                watched = _watched(plan, skill_dir, workspace)
                before = [snapshot(Path(root), parts) for _, root, parts in watched]  # the writable parts left
        for made in plan.view.created if plan.view is not None else ():  # folders made for the run count as its
            for snap, _ in before:
                snap.pop(os.path.relpath(made, workspace) + "/", None)
        try:
            proc, network = confine.start(
                plan, cwd=os.path.realpath(prepared.cwd), stdin=-1, stdout=-1, stderr=-1, env=env
            )
        except OSError as exc:
            return _Outcome(
                "error",
                [
                    {
                        "code": "spawn",
                        "side": "runner",
                        "message": f"cannot start {prepared.argv[0]!r}: {exc.strerror or exc}",
                    }
                ],
            )
        enforcement["network"] = {"allowed": g.network, **network}
        pumped = pump(
            proc,
            data,
            timeout_s=timeout_ms / 1000,
            max_stdout=MAX_STDOUT,
            keep_stderr=KEEP_STDERR,
            on_stderr=options.on_stderr,
        )
        confine.finish(plan)  # the folders made for write globs go first, unless the skill wrote in them
        _, undeclared = _writes(watched, before, g.write_globs, enforcement, plan)
    finally:
        confine.finish(plan)
        if plan.tmpdir is None:
            _empty(scratch)
    code = pumped.returncode
    report["exitCode"] = code
    report["signal"] = signal.Signals(-code).name if isinstance(code, int) and code < 0 else None
    enforcement["timeout"].update(expired=pumped.timed_out, killed="process-group" if pumped.timed_out else "none")
    enforcement["subprocess"]["leftoverKilled"] = pumped.leftover_killed
    report["logs"] = _logs(skill, pumped)
    report["output"] = {"sha256": sha256_bytes(pumped.stdout), "bytes": len(pumped.stdout)}
    errors: list[dict[str, Any]] = []
    if undeclared:
        errors.append(
            {
                "code": "undeclared_write",
                "side": "skill",
                "message": f"wrote outside its declared filesystem.write globs: {', '.join(undeclared[:10])}",
            }
        )
    if enforcement["filesystem"].get("truncated"):
        errors.append(
            {
                "code": "writes_unwatched",
                "side": "runner",
                "message": f"more than {writes.MAX_ENTRIES} entries in a watched area: its writes could not all be "
                "checked, so the run is not ok",
            }
        )
    if pumped.stdout_overflow:
        return _Outcome(
            "failed",
            [{"code": "output_too_large", "side": "output", "message": f"stdout exceeded {MAX_STDOUT} bytes"}, *errors],
        )
    if pumped.timed_out:
        return _Outcome(
            "timeout",
            [
                {
                    "code": "timeout",
                    "side": "runner",
                    "message": f"no result within {timeout_ms} ms: the process group was killed",
                },
                *errors,
            ],
        )
    if errors:  # an undeclared write, or writes that could not all be watched
        return _Outcome("violation", errors)
    if code != 0:
        tail = pumped.stderr_kept[-400:].decode("utf-8", "replace").strip()
        reason = f"signal {report['signal']}" if report["signal"] else f"exit code {code}"
        if "no-processes" in plan.section["seccomp"] and REFUSED_START.search(tail):
            return _Outcome("violation", [_refused_start(skill, reason, tail)])
        return _Outcome(
            "failed",
            [
                {
                    "code": "exit_status",
                    "side": "skill",
                    "message": f"the skill ended with {reason}" + (f": {tail}" if tail else ""),
                }
            ],
        )
    try:
        output = jsonio.loads(pumped.stdout)
    except jsonio.JsonError as exc:
        return _Outcome(
            "invalid_output",
            [{"code": "output_json", "side": "output", "message": f"stdout is not one JSON value: {exc}"}],
        )
    errors = _schema_errors(prepared.output_schema, output, "output")
    if errors:
        return _Outcome("invalid_output", errors)
    return _Outcome("ok", [], output, pumped.stdout)


_SCRATCH: list[str] = []


def _scratch() -> str:
    """The skill's TMPDIR: one private folder per process, emptied after every run (cheaper than a new one)."""
    if not _SCRATCH or not os.path.isdir(_SCRATCH[0]):
        import atexit

        _SCRATCH[:] = [_private_folder("skillctl-")]
        atexit.register(_remove_tree, _SCRATCH[0])
    return _SCRATCH[0]


def _private_folder(prefix: str) -> str:
    """A new mode-0700 folder with an unguessable name in the first usable temporary folder (as ``mkdtemp``)."""
    bases = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp", os.getcwd()]
    error: OSError | None = None
    for base in filter(None, bases):
        for _ in range(10):
            path = os.path.join(base, prefix + os.urandom(6).hex())
            try:
                os.mkdir(path, 0o700)
                return os.path.abspath(path)
            except FileExistsError:
                continue
            except OSError as exc:
                error = exc
                break
    raise error or FileExistsError("no free name for a scratch folder")


def _remove_tree(path: str) -> None:
    try:
        os.rmdir(path)  # the scratch folder is emptied after every run, so this is the common case
    except OSError:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


def _empty(folder: str) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(entry.path)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass


def _watched(plan: confine.Plan, skill_dir: str, workspace: str) -> list[tuple[str, str, list[str]]]:
    """``(label, root, parts)`` to snapshot: in the sandbox only the writable parts (nothing else can change)."""
    if plan.view is not None:
        return [("workspace", workspace, plan.view.writable)] if plan.view.writable else []
    watched = [("workspace", workspace, [""])]
    if not is_within(workspace, skill_dir):
        watched.append(("skill", skill_dir, [""]))
    return watched


def _writes(watched, before, globs: list[str], enforcement: dict[str, Any], plan: confine.Plan):
    fs = enforcement["filesystem"]
    fs["level"] = "enforce" if plan.view is not None else ("detect" if watched else "off")
    if plan.view is not None:
        fs.update(readable=plan.view.readable, writable=plan.view.writable, notes=plan.view.notes)
    declared: list[str] = []
    undeclared: list[str] = []
    truncated: list[str] = []
    for (label, root, parts), (snap, cut) in zip(watched, before, strict=True):
        after, cut_after = snapshot(Path(root), parts)
        truncated += [f"{label}:{p or '.'}" for p in dict.fromkeys([*cut, *cut_after])]
        paths = changed(snap, after)
        if label == "workspace":
            ok, bad = split_writes(paths, globs)
            declared += ok
            undeclared += bad
        else:
            undeclared += [f"<skill>/{p}" for p in paths]
    fs.update(
        watched=[label for label, _, _ in watched],
        writeGlobs=list(globs),
        declaredWrites=declared[:200],
        undeclaredWrites=undeclared[:200],
        truncated=bool(truncated),
    )
    return declared, undeclared


def _logs(skill, pumped) -> dict[str, Any]:
    fmt = skill.get("observability", "logs", "format", default="jsonl")
    text = pumped.stderr_kept.decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    logs: dict[str, Any] = {
        "format": fmt if fmt in ("jsonl", "text") else "jsonl",
        "lines": len(lines),
        "bytes": pumped.stderr_bytes,
        "truncated": pumped.stderr_truncated,
    }
    if logs["format"] == "jsonl":
        records: list[dict[str, Any]] = []
        invalid: list[str] = []
        for line in lines:
            try:
                record = jsonio.loads(line)
            except jsonio.JsonError:
                record = None
            if isinstance(record, dict):
                if len(records) < MAX_LOG_RECORDS:
                    records.append(record)
            else:
                invalid.append(line)
        logs.update(records=records, invalidLines=len(invalid), text=invalid[-20:])
    else:
        logs["text"] = lines[-50:]
    return logs


def _base_report(prepared: Prepared, options: RunOptions, started: str) -> dict[str, Any]:
    skill = prepared.skill
    g = prepared.grants
    det = {k: skill.get("determinism", k, default="forbidden") for k in ("network", "time", "randomness")}
    return {
        "apiVersion": "skill-run-report/v1",
        "kind": "SkillRunReport",
        "skill": {"id": skill.id, "version": skill.version, "path": str(skill.directory), "contentSha256": None},
        "status": "error",
        "ok": False,
        "exitCode": None,
        "signal": None,
        "startedAt": started,
        "durationMs": 0,
        "input": {"sha256": None, "bytes": 0},
        "output": {"sha256": None, "bytes": 0},
        "enforcement": {
            "env": {"level": "reduced", "passed": [], "withheld": sorted(g.withheld_env), "fixed": {}},
            "determinism": det,
            "network": {"allowed": g.network, "level": "not-needed" if g.network else "none", "detail": "not started"},
            "filesystem": {"level": "detect" if options.watch_filesystem else "off", "undeclaredWrites": []},
            "subprocess": {"allowed": g.subprocess, "level": "process-group", "leftoverKilled": 0},
            "timeout": {"ms": options.timeout_ms or skill.timeout_ms, "expired": False, "killed": "none"},
        },
        "logs": {"format": "jsonl", "lines": 0, "bytes": 0},
        "errors": [],
    }


def _finish(
    report: dict[str, Any],
    t0: float,
    clock: Clock | WallClock,
    status: str,
    *,
    errors=(),
    output=None,
    output_bytes: bytes = b"",
) -> RunResult:
    report["status"] = status
    report["ok"] = status == "ok"
    report["errors"] = list(errors)
    report["durationMs"] = round(max(0.0, (clock.monotonic() - t0) * 1000), 3)
    report["skill"]["contentSha256"] = cache_mod.content_hash_cached(report["skill"]["path"])
    return RunResult(status, output if status == "ok" else None, report, output_bytes if status == "ok" else b"")


__all__ = ["RunOptions", "RunResult", "run_prepared"]
