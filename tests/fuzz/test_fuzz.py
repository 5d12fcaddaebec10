"""Mutated example inputs of every format never crash a command, never hang it, and are never passed as valid.

Budget: a fixed seed and a few cases per (target, mutation) by default, so CI explores the same inputs
on every run. ``AGENTPACK_FUZZ_LONG=1`` runs many more with random seeds (``AGENTPACK_FUZZ_EXAMPLES=N``
sets the number per pair, ``AGENTPACK_FUZZ_SEED=S`` replays a long run). A failure prints the mutated
file, what the mutation did and every command's exit code and output.

Every target has zero findings; a new one fails its pair (never skipped: a class not fixed at once is
marked ``xfail`` with its class and owner).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from fuzzkit import MUTATIONS, Applied, Mutation, Rule, Source, command_env, materialize, run_command
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from targets import TARGETS, Target

LONG = bool(os.environ.get("AGENTPACK_FUZZ_LONG"))
EXAMPLES = int(os.environ.get("AGENTPACK_FUZZ_EXAMPLES") or (200 if LONG else 5))
TIMEOUT = float(os.environ.get("AGENTPACK_FUZZ_TIMEOUT") or (120 if LONG else 30))
"""Seconds a single command may take before it counts as a hang (generous: CI machines are shared)."""


def _pairs() -> list[object]:
    params = []
    for target in TARGETS.values():
        for mutation in MUTATIONS.values():
            if not any(_files(mutation, source) for source in target.sources):
                continue
            params.append(pytest.param(target, mutation, id=f"{target.name}-{mutation.name}"))
    return params


_FILES: dict[tuple[str, str], list[tuple[str, Rule]]] = {}


def _files(mutation: Mutation, source: Source) -> list[tuple[str, Rule]]:
    """The files of ``source`` that ``mutation`` applies to (worked out once per pair)."""
    key = (mutation.name, source.name)
    if key not in _FILES:
        _FILES[key] = [(rel, rule) for rel, rule in source.files() if mutation.applies(rule, source.original(rel))]
    return _FILES[key]


@pytest.mark.parametrize(("target", "mutation"), _pairs())
def test_mutated_inputs(target: Target, mutation: Mutation) -> None:
    sources = [s for s in target.sources if _files(mutation, s)]

    @settings(
        max_examples=EXAMPLES,
        derandomize=not LONG,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink] if LONG else [Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=LONG,
    )
    @given(st.data())
    def explore(data: st.DataObject) -> None:
        source = data.draw(st.sampled_from(sources), label="source")
        rel, rule = data.draw(st.sampled_from(_files(mutation, source)), label="file")
        with tempfile.TemporaryDirectory(prefix="agentpack-fuzz-") as scratch:
            tmp = Path(scratch)
            case = materialize(source, tmp)
            applied = mutation.apply(case / rel, rule, data.draw)
            if applied is None:
                applied = Applied("not applicable", False)
            problems = []
            for command in source.commands:
                if command.long and not LONG:
                    continue
                outcome = run_command(command, case, tmp, timeout=TIMEOUT, env=command_env(tmp))
                problem = outcome.problem(applied, rule)
                if problem:
                    problems.append(f"{problem}\n{outcome.report()}{_traceback(outcome, case, tmp)}")
            assert not problems, (
                f"{target.name} ({target.owner}): {source.name}: {rel}: {mutation.name}: {applied.description}\n\n"
                + "\n\n".join(problems)
            )

    if LONG and os.environ.get("AGENTPACK_FUZZ_SEED"):
        explore = seed(int(os.environ["AGENTPACK_FUZZ_SEED"]))(explore)
    explore()


def _traceback(outcome, case: Path, tmp: Path) -> str:
    """For a crash, the traceback of the same command run again with AGENTPACK_DEBUG=1."""
    if outcome.result is None or outcome.result.exit_code != 3:
        return ""
    again = run_command(outcome.command, case, tmp, timeout=TIMEOUT, env={**command_env(tmp), "AGENTPACK_DEBUG": "1"})
    return f"\n  with AGENTPACK_DEBUG=1:\n{again.result.stderr[-3000:] if again.result else again.hang}"


@pytest.mark.parametrize("target", list(TARGETS.values()), ids=list(TARGETS))
def test_examples_pass_unmutated(target: Target, tmp_path: Path) -> None:
    """The harness's baseline: each command accepts the unmutated examples (the core's fixtures vary)."""
    for source in target.sources:
        tmp = tmp_path / source.name.replace("/", "_")
        tmp.mkdir()
        case = materialize(source, tmp)
        for command in source.commands:
            if command.long and not LONG:
                continue
            outcome = run_command(command, case, tmp, timeout=TIMEOUT, env=command_env(tmp))
            problem = outcome.problem(None, None)
            if problem is None and target.owner != "core" and outcome.result and outcome.result.exit_code != 0:
                problem = "the unmutated example is not accepted"
            if problem:
                pytest.fail(f"{source.name}: {problem}\n{outcome.report()}", pytrace=False)
