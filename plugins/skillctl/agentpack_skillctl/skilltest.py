"""``skill test``: run every skill's fixtures (input, expected output) and its tests/ scripts.

Each fixture and test runs in a fresh workspace: a temporary copy of the
skill's ``fixtures/workspace/`` (or an empty folder), so nothing is written
into the repository and each case starts from the same files.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io import jsonio
from agentpack.io.clock import SYSTEM_CLOCK
from agentpack.io.userfiles import read_bytes
from agentpack.kernel.models import AssertionResult, CaseResult, CaseStatus, EvalOptions, EvalReport, SuiteResult

from .access import ACCESS_FILE, load_access
from .fixtures import FixtureCase, fixture_cases, output_matches
from .iopump import pump
from .manifest import SkillManifest, is_skill_dir, load_skill, tree_skill_dirs
from .prepare import prepare
from .runner import RunOptions, run_prepared
from .sandbox import build_env, spawn_isolated

if TYPE_CHECKING:
    from .prepare import LoadedAccess

TEST_TIMEOUT_S = 120.0


@contextmanager
def fresh_workspace(skill_dir: Path) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="skillctl-ws-"))
    try:
        template = skill_dir / "fixtures" / "workspace"
        workspace = folder / "workspace"
        if template.is_dir():
            shutil.copytree(template, workspace, symlinks=True)
        else:
            workspace.mkdir()
        yield workspace
    finally:
        shutil.rmtree(folder, ignore_errors=True)


INTERRUPTED = "interrupted (Ctrl-C): the skills that finished are reported"
"""``EvalReport.aborted`` of a test run stopped by Ctrl-C."""


def evaluate(root: Path, options: EvalOptions, *, skill: SkillManifest | None = None, bar: Any = None) -> EvalReport:
    """The fixtures and tests of the skill folder ``root`` (whose loaded ``skill.yaml`` is ``skill``, when
    the caller has it) or of every skill of the tree ``root``. ``bar`` (``agentpack.io.console.progress``)
    counts the skills."""
    from agentpack.io.console import NO_PROGRESS

    bar = bar or NO_PROGRESS
    started = SYSTEM_CLOCK.now()
    t0 = time.monotonic()
    single = is_skill_dir(root)
    dirs = [root] if single else tree_skill_dirs(root)
    access: LoadedAccess | None = None
    if not single:  # one manifest for the whole tree, read once
        access = load_access(root / ACCESS_FILE) if os.path.lexists(root / ACCESS_FILE) else (None, [])
    suites = []
    aborted = None
    bar.phase(f"skill test {root.name}", total=len(dirs))
    for directory in dirs:
        bar.update(description=f"skill test: {directory.name}")
        try:
            suite = run_suite(directory, options, skill=skill if single else None, access=access)
        except KeyboardInterrupt:  # Ctrl-C: report the skills that finished
            aborted = INTERRUPTED
            break
        bar.advance()
        if options.suite and suite.id != options.suite and directory.name != options.suite:
            continue
        suites.append(suite)
    return EvalReport(
        name=root.resolve().name,
        format="skillctl",
        path=str(root),
        started_at=started,
        duration_s=round(time.monotonic() - t0, 3),
        suites=suites,
        metadata={"check_determinism": bool(options.options.get("check_determinism"))},
        aborted=aborted,
    )


def run_suite(
    directory: Path, options: EvalOptions, *, skill: SkillManifest | None = None, access: LoadedAccess | None = None
) -> SuiteResult:
    """One skill's cases; ``skill`` and ``access`` are its loaded ``skill.yaml`` and the tree's access
    manifest (read here when not given)."""
    from agentpack.io.errors import AgentpackError

    t0 = time.monotonic()
    try:
        if skill is None:
            skill = load_skill(directory)
        suite_id = skill.id
        prepare(directory, skill, access)  # a skill whose contract stops a run is not tested either
    except AgentpackError as exc:
        return SuiteResult(
            id=getattr(skill, "id", directory.name),
            file=str(directory),
            cases=[CaseResult(id="contract", status="error", message=str(exc))],
        )
    if options.suite and options.suite not in (suite_id, directory.name):
        return SuiteResult(id=suite_id)
    cases = []
    for fixture in fixture_cases(directory):
        if not options.filter or options.filter in f"fixture:{fixture.name}":
            cases.append(_fixture(skill, access, fixture, options))
    tests = directory / "tests"
    if tests.is_dir():
        for script in sorted(tests.iterdir()):
            if (
                script.is_file()
                and script.name.startswith("test")
                and (not options.filter or options.filter in f"test:{script.name}")
            ):
                cases.append(_script(directory, script))
    return SuiteResult(
        id=suite_id,
        name=skill.name,
        file=str(directory / "skill.yaml"),
        duration_s=round(time.monotonic() - t0, 3),
        cases=cases,
    )


def _fixture(
    skill: SkillManifest, access: LoadedAccess | None, fixture: FixtureCase, options: EvalOptions
) -> CaseResult:
    from agentpack.io.errors import AgentpackError

    t0 = time.monotonic()
    case, input_path, expected = fixture.name, fixture.input, fixture.expected
    cid = f"fixture:{case}"
    runs = 2 if options.options.get("check_determinism") else 1
    results = []
    directory = skill.directory
    try:
        want_status = fixture.status()
        raw = read_bytes(input_path)
        prepared = prepare(directory, skill, access)
        for _ in range(runs):  # each run in its own fresh workspace, so writes cannot leak between them
            with fresh_workspace(directory) as workspace:
                results.append(run_prepared(prepared, RunOptions(workspace=workspace), raw=raw))
    except AgentpackError as exc:
        return CaseResult(id=cid, status="error", message=str(exc), file=str(input_path))
    result = results[0]
    if runs == 2 and result.ok:
        identical = results[1].ok and results[1].output_bytes == result.output_bytes
        result.report["determinismCheck"] = {
            "runs": 2,
            "identical": identical,
            "outputSha256": [r.report["output"]["sha256"] for r in results],
        }
        if not identical:
            result.status = "nondeterministic"
            result.report["errors"].append(
                {
                    "code": "nondeterministic",
                    "side": "skill",
                    "message": "two runs in fresh workspaces gave different output bytes",
                }
            )
    assertions = [
        AssertionResult(
            name="status",
            passed=result.status == want_status,
            expected=want_status,
            actual=result.status,
            message="; ".join(e["message"] for e in result.report["errors"])[:2000],
        )
    ]
    if expected is not None and want_status == "ok":
        try:
            want = jsonio.load_file(expected)
        except jsonio.JsonError as exc:
            assertions.append(AssertionResult(name="output", passed=False, message=f"unusable expected output: {exc}"))
        else:
            assertions.append(
                AssertionResult(
                    name="output", passed=output_matches(want, result.output), expected=want, actual=result.output
                )
            )
    passed = all(a.passed for a in assertions)
    message = (
        ""
        if passed
        else "; ".join(
            f"{a.name}: expected {json.dumps(a.expected)[:300]}, got "
            f"{json.dumps(a.actual)[:300]}" + (f" ({a.message})" if a.message else "")
            for a in assertions
            if not a.passed
        )
    )
    return CaseResult(
        id=cid,
        name=case,
        status="passed" if passed else "failed",
        message=message,
        duration_s=round(time.monotonic() - t0, 3),
        file=str(input_path),
        assertions=assertions,
        details={"report": result.report},
    )


SUFFIX_INTERPRETERS = {".sh": ["sh"], ".js": ["node"], ".mjs": ["node"]}
"""How a test without a ``#!`` line is run, by its suffix (``.py``: the Python running agentpack)."""


def shebang(script: Path) -> list[str] | None:
    """The interpreter and its one optional argument on the ``#!`` line of ``script`` (as the kernel reads
    it), or None without one."""
    try:
        with script.open("rb") as handle:
            head = handle.readline(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].decode("utf-8", "replace").strip()
    interpreter, _, argument = line.replace("\t", " ").partition(" ")
    if not interpreter:
        return None
    return [interpreter, argument.strip()] if argument.strip() else [interpreter]


def script_command(script: Path) -> list[str]:
    """How to run the test ``script``, as its ``#!`` line and executable bit say: an executable with a
    ``#!`` line runs itself, one without the bit runs under its ``#!`` interpreter; a script without a
    ``#!`` line by its suffix (``.py`` this Python, ``.sh`` sh, ``.js``/``.mjs`` node), else itself."""
    script = script.resolve()
    interpreter = shebang(script)
    if interpreter is not None:
        return [str(script)] if os.access(script, os.X_OK) else [*interpreter, str(script)]
    if script.suffix == ".py":
        return [sys.executable, str(script)]
    return [*SUFFIX_INTERPRETERS.get(script.suffix, []), str(script)]


def _script(directory: Path, script: Path) -> CaseResult:
    t0 = time.monotonic()
    cid = f"test:{script.name}"
    with fresh_workspace(directory) as workspace:
        env, _ = build_env(
            granted=[],
            time="forbidden",
            randomness="forbidden",
            extra={
                "SKILL_DIR": str(directory.resolve()),
                "SKILL_WORKSPACE": str(workspace),
                "TMPDIR": str(workspace.parent),
                "SKILLCTL_PYTHON": sys.executable,
            },
        )
        try:
            proc, _ = spawn_isolated(
                script_command(script), network=False, stdin=-1, stdout=-1, stderr=-1, cwd=str(directory), env=env
            )
        except OSError as exc:
            return CaseResult(id=cid, status="error", message=f"cannot start {script.name}: {exc}", file=str(script))
        out = pump(proc, b"", timeout_s=TEST_TIMEOUT_S, max_stdout=1 << 20, keep_stderr=1 << 16)
    text = (out.stdout.decode("utf-8", "replace") + out.stderr_kept.decode("utf-8", "replace")).strip()
    status: CaseStatus
    if out.timed_out:
        status, message = "failed", f"timed out after {TEST_TIMEOUT_S:.0f} s"
    elif out.returncode == 0:
        status, message = "passed", ""
    else:
        status, message = "failed", f"exit code {out.returncode}: {text[-1500:]}"
    return CaseResult(
        id=cid,
        name=script.name,
        status=status,
        message=message,
        file=str(script),
        duration_s=round(time.monotonic() - t0, 3),
        details={"output": text[-4000:]},
    )


__all__ = ["evaluate", "fresh_workspace", "run_suite"]
