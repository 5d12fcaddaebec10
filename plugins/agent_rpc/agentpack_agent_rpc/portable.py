"""``rpc validate --portable``: what in a manifest the reference runtime, ``ecp-runtime`` 0.10, would not run.

The reference's manifest models forbid unknown keys at the top, in steps and
in graders (so ``cwd``, ``timeout``, ``expect_status`` or ``case_sensitive``
make ``ecp validate`` and ``ecp run`` fail), and silently drop unknown keys
of scenarios and datasets (so ``tags``, ``repeat`` or a dataset's
``condition`` run there without effect). Each such use is a finding naming
the feature: an error (``ARP401``) where the reference rejects the manifest,
a warning (``ARP402``) where it ignores the key. The rules were read from
``ecp_runtime/manifest.py`` 0.10.0; ``tests/agent_rpc`` checks them against
the installed reference.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentpack.io.yamlio import YamlDocument, join_pointer

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding

REFERENCE = "ecp-runtime 0.10"
TOP_KEYS = frozenset({"manifest_version", "name", "target", "require_capabilities", "scenarios"})
SCENARIO_KEYS = frozenset({"name", "steps", "dataset"})
STEP_KEYS = frozenset({"input", "constraints", "graders"})
DATASET_KEYS = frozenset({"type", "source", "input_column", "output_column"})
GRADER_KEYS = frozenset(
    {"type", "field", "condition", "value", "pattern", "prompt", "assertion", "tool_name", "arguments"}
)
GRADER_TYPES = frozenset({"text_match", "llm_judge", "tool_usage"})
CONDITIONS = frozenset({"contains", "equals", "does_not_contain", "regex"})


def portable_findings(doc: YamlDocument) -> list[Finding]:
    """The findings for a manifest (already valid for agentpack) that ``ecp-runtime`` 0.10 would not run as is."""
    from agentpack.kernel.models import Finding

    found = []
    for rejected, feature, pointer, why in _features(doc.data):
        if rejected:
            message = f"not portable: {REFERENCE} rejects '{feature}' ({why})"
            found.append(Finding.error("ARP401", message, **doc.where(pointer)))
        else:
            message = f"not portable: {REFERENCE} ignores '{feature}' ({why})"
            found.append(Finding.warning("ARP402", message, **doc.where(pointer)))
    return found


def _features(data: dict[str, Any]) -> Iterator[tuple[bool, str, str, str]]:
    """``(rejected, feature, pointer, why)`` for each use of a feature the reference lacks, in document order."""
    if "manifest_version" not in data:
        yield True, "manifest_version", "", "it requires manifest_version: v1"
    for key in data:
        if key not in TOP_KEYS:
            yield True, key, f"/{key}", "an agentpack key"
    if isinstance(data.get("target"), list):
        yield True, "argv target", "/target", "its target is one command line, run through a shell"
    for s_index, scenario in enumerate(data.get("scenarios") or []):
        pointer = f"/scenarios/{s_index}"
        for key in scenario:
            if key not in SCENARIO_KEYS:
                yield False, key, join_pointer(pointer, key), "an agentpack scenario key; the scenario runs without it"
        dataset = scenario.get("dataset")
        if not scenario.get("steps") and dataset is None:
            where = join_pointer(pointer, "steps") if "steps" in scenario else pointer
            yield True, "a scenario without steps", where, "it requires steps or a dataset in every scenario"
        if isinstance(dataset, dict):
            for key in dataset:
                if key not in DATASET_KEYS:
                    where = join_pointer(join_pointer(pointer, "dataset"), key)
                    yield False, key, where, "an agentpack dataset key; rows are compared with equals"
        for i, step in enumerate(scenario.get("steps") or []):
            step_pointer = f"{pointer}/steps/{i}"
            for key in step:
                if key not in STEP_KEYS:
                    yield True, key, join_pointer(step_pointer, key), "an agentpack step key"
            for g_index, grader in enumerate(step.get("graders") or []):
                yield from _grader(grader, f"{step_pointer}/graders/{g_index}")


def _grader(grader: dict[str, Any], pointer: str) -> Iterator[tuple[bool, str, str, str]]:
    kind = grader.get("type")
    if kind not in GRADER_TYPES:
        yield True, str(kind), join_pointer(pointer, "type"), "a grader type of an agentpack plugin"
        return
    for key in grader:
        if key not in GRADER_KEYS:
            yield True, key, join_pointer(pointer, key), f"an agentpack {kind} key"
    condition = grader.get("condition")
    if kind == "text_match" and condition not in CONDITIONS:
        yield True, str(condition), join_pointer(pointer, "condition"), "an agentpack text_match condition"
