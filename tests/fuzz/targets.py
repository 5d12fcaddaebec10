"""What the fuzz harness mutates, per format: the example inputs, their files' rules, and the commands run on them.

Rules are an outside view of each format (what its spec and docs promise to reject), kept short on
purpose: a required key, a type, a closed object. ``checked_by`` names the commands that read the file
and so must not exit 0 once a mutation made it invalid; every other command only has to answer without a
crash or a hang.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from fuzzkit import Command, Rule, Source

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Target:
    name: str
    owner: str
    """The plugin (or ``core``) whose robustness a finding is about."""
    sources: tuple[Source, ...]


def _names(*names: str) -> frozenset[str]:
    return frozenset(names)


def _contained(rules: tuple[Rule, ...], commands: frozenset[str], under: str = "") -> tuple[Rule, ...]:
    """``rules`` whose files under ``under`` the ``commands`` (those that check them) refuse as a link out of
    the pack (issue 24: ECP114, OEX004, SKC101, a linked SKILL.md)."""
    return tuple(replace(r, contained_by=r.checked_by & commands) if r.glob.startswith(under) else r for r in rules)


# -- core: SKILL.md (the Agent Skill format) ----------------------------------------------------------
SKILL_MD = Rule(
    "SKILL.md",
    "markdown",
    checked_by=_names("validate"),
    required=("/name", "/description"),
    types={"/name": "string", "/description": "string"},
    closed=("",),
    must_exist=_names("validate"),
    strings_only=True,
    contained_by=_names("validate"),
)
CORE_FIXTURES = ROOT / "tests" / "core" / "fixtures" / "skills"


def _core_sources() -> tuple[Source, ...]:
    validate = Command("validate", ("validate", "{case}"))
    json_validate = Command("validate --json", ("validate", "{case}", "--json"))
    return tuple(
        Source(f"skill-md/{folder.name}", folder, (validate, json_validate), (SKILL_MD,))
        for folder in sorted(CORE_FIXTURES.iterdir())
        if (folder / "SKILL.md").is_file()
    )


# -- skillctl: deterministic skills ---------------------------------------------------------------------
SKILLS = EXAMPLES / "skills"
CONTRACT_READERS = _names("validate", "skill validate", "skill run", "skill test")
"""``skill describe`` shows a contract as it is; it must only refuse schemas it cannot read."""


def _skill_source(folder: Path) -> Source:
    slug = folder.name
    fixture = next(
        f
        for f in sorted((folder / "fixtures").glob("*.input.json"))
        if not f.with_name(f.name[: -len(".input.json")] + ".status").exists()
    )
    fixture_rel = fixture.relative_to(SKILLS).as_posix()
    workspace = ("--workspace", "{tmp}/workspace")
    commands = (
        Command("validate", ("validate", f"{{case}}/{slug}")),
        Command("skill validate", ("skill", "--root", "{case}", "validate", f"{{case}}/{slug}", "--json")),
        Command("skill describe", ("skill", "--root", "{case}", "describe", f"{{case}}/{slug}", "--json")),
        Command(
            "skill run",
            (
                "skill",
                "--root",
                "{case}",
                "run",
                f"{{case}}/{slug}",
                "--input",
                f"{{case}}/{fixture_rel}",
                "--json",
                *workspace,
            ),
        ),
        Command("skill test", ("skill", "--root", "{case}", "test", f"{{case}}/{slug}", "-o", "json"), long=True),
    )
    run_input = Rule(
        fixture_rel, "json", checked_by=_names("skill run", "validate", "skill validate", "skill test"), stream=True
    )
    expecting_failure = tuple(  # a fixture that expects invalid_input stays valid when its input breaks
        Rule(f.relative_to(SKILLS).as_posix().removesuffix(".status") + ".input.json", "json")
        for f in sorted((folder / "fixtures").glob("*.status"))
    )
    rules = (
        Rule(
            f"{slug}/skill.yaml",
            "yaml",
            checked_by=CONTRACT_READERS,
            required=(
                "/apiVersion",
                "/kind",
                "/id",
                "/name",
                "/version",
                "/description",
                "/governance",
                "/runtime",
                "/io",
                "/determinism",
                "/security",
                "/observability",
            ),
            types={
                "/id": "string",
                "/version": "string",
                "/runtime": "object",
                "/io": "object",
                "/runtime/command": "array",
            },
            closed=("", "/runtime", "/io", "/determinism"),
            read_by=_names("skill describe"),
            must_exist=CONTRACT_READERS | _names("skill describe"),
        ),
        Rule(
            f"{slug}/schemas/*.schema.json",
            "json",
            checked_by=CONTRACT_READERS,
            types={"/properties": "object", "/required": "array"},
            read_by=_names("skill describe"),
            must_exist=CONTRACT_READERS | _names("skill describe"),
        ),
        run_input,
        *expecting_failure,
        Rule(f"{slug}/fixtures/*.input.json", "json", checked_by=_names("validate", "skill validate", "skill test")),
        Rule(f"{slug}/fixtures/*.expected.json", "json", checked_by=_names("validate", "skill validate", "skill test")),
        Rule(f"{slug}/fixtures/*.status", "text"),
        Rule(
            "_access.yaml",
            "yaml",
            checked_by=_names("validate", "skill validate"),
            required=("/apiVersion", "/kind"),
            closed=("",),
        ),
        Rule(f"{slug}/impl/*.py", "program"),
        Rule(f"{slug}/README.md", "text"),
    )
    rules = _contained(rules, _names("validate", "skill validate"), under=f"{slug}/")
    return Source(f"skills/{slug}", SKILLS, commands, rules, focus=(slug, "_access.yaml"), prepare=_workspace(slug))


def _workspace(slug: str) -> Callable[[Path, Path], None]:
    """The skill's fixture workspace copied outside the skill (a skill's own folder is read-only in a run)."""

    def prepare(case: Path, tmp: Path) -> None:
        fixture = case / slug / "fixtures" / "workspace"
        if fixture.is_dir():
            shutil.copytree(fixture, tmp / "workspace", symlinks=True)
        else:
            (tmp / "workspace").mkdir()

    return prepare


def _skill_sources() -> tuple[Source, ...]:
    return tuple(_skill_source(f) for f in sorted(SKILLS.iterdir()) if (f / "skill.yaml").is_file())


# -- dci: capability contracts ----------------------------------------------------------------------------
DCI = EXAMPLES / "dci" / "workspace"
DCI_RESOLVERS = _names("dci resolve", "dci resolve --consumer", "dci explain", "dci lint")
"""Resolution reads the workspace's alias table and config; lint checks every ``.dci/`` file."""


def _reliability_state(case: Path, tmp: Path) -> None:
    state = case / ".dci" / "state"
    state.mkdir(parents=True, exist_ok=True)
    entry = {"outcomes_last_20": [1, 0, 1], "success_rate_last_20": 0.666667, "sample_size": 3}
    data = {
        "schema_version": "1",
        "updated_at": "2026-01-02T03:04:05Z",
        "candidates": {
            "web-search::skills/research/web-search": {**entry, "last_used_at": "2026-01-02T03:04:05Z"},
        },
    }
    (state / "reliability.v1.json").write_text(json.dumps(data, indent=2) + "\n")


def _skill_md(
    glob: str,
    checked_by: frozenset[str],
    must_exist: frozenset[str] = frozenset(),
    required: tuple[str, ...] = ("/name", "/description"),
) -> Rule:
    return Rule(glob, "markdown", checked_by=checked_by, required=required, strings_only=True, must_exist=must_exist)


def _dci_sources() -> tuple[Source, ...]:
    commands = (
        Command("dci lint", ("dci", "lint", "{case}", "--json")),
        Command(
            "dci resolve",
            ("dci", "resolve", "-w", "{case}", "-r", "web-search,summarization", "--selection", "cover", "--json"),
        ),
        Command(
            "dci resolve --consumer",
            ("dci", "resolve", "-w", "{case}", "--consumer", "{case}/consumers/research-brief"),
        ),
        Command("dci explain", ("dci", "explain", "-w", "{case}", "-r", "web-search", "--candidate", "web-search")),
        Command(
            "dci record", ("dci", "record", "web-search", "--success", "-w", "{case}", "--at", "2026-02-03T04:05:06Z")
        ),
        Command("validate", ("validate", "{case}/skills/research/web-search")),
    )
    rules = (
        _skill_md("skills/research/web-search/SKILL.md", _names("dci lint", "validate"), _names("validate")),
        _skill_md("skills/*/*/SKILL.md", _names("dci lint")),
        _skill_md(
            "consumers/research-brief/SKILL.md",
            _names("dci resolve --consumer"),
            _names("dci resolve --consumer"),
            required=("/metadata", "/metadata/contract"),
        ),
        Rule(
            ".dci/aliases.v1.json",
            "json",
            checked_by=DCI_RESOLVERS,
            required=("/schema_version", "/alias_table_version", "/aliases"),
            types={"/aliases": "object", "/alias_table_version": "string"},
            closed=("",),
        ),
        Rule(
            ".dci/config.v1.json",
            "json",
            checked_by=DCI_RESOLVERS,
            required=("/schema_version",),
            types={"/known_runtimes": "array", "/disabled": "array"},
            closed=("",),
        ),
        Rule(
            ".dci/state/reliability.v1.json",
            "json",
            checked_by=_names("dci record", "dci lint"),
            required=("/schema_version", "/updated_at", "/candidates"),
            types={"/candidates": "object", "/updated_at": "string"},
            closed=("",),
            timestamps=True,
        ),
    )
    return (Source("dci/workspace", DCI, commands, rules, prepare=_reliability_state),)


# -- openexperts: expert packages -------------------------------------------------------------------------
OPENEXPERTS = EXAMPLES / "openexperts"
PACKAGE_READERS = _names("validate", "experts dry-run", "experts run")
"""``experts explain`` only prints effective values: it is no validator, but refuses files it cannot read."""


def _component(*required: str) -> dict[str, object]:
    """A component file: Markdown with frontmatter (unknown keys are warnings, for later spec versions)."""
    return {
        "kind": "markdown",
        "checked_by": PACKAGE_READERS,
        "read_by": _names("experts explain"),
        "required": required,
    }


def _openexperts_sources() -> tuple[Source, ...]:
    pack = "{case}/acme-support"
    commands = (
        Command("validate", ("validate", pack)),
        Command("experts explain", ("experts", "explain", pack, "--process", "triage-ticket", "--json")),
        Command(
            "experts dry-run",
            (
                "experts",
                "dry-run",
                pack,
                "triage-ticket",
                "--input",
                "ticket_id=T-1",
                "--input",
                "customer_id=C-1",
                "--bindings",
                "{case}/bindings.yaml",
                "--json",
            ),
        ),
        Command(
            "experts run",
            (
                "experts",
                "run",
                pack,
                "--process",
                "triage-ticket",
                "--input",
                "ticket_id=T-101",
                "--bindings",
                "{case}/bindings.yaml",
                "--script",
                "{case}/script.yaml",
                "--approve",
                "approve",
                "--workdir",
                "{tmp}/work",
                "--json",
            ),
        ),
    )
    front = _component("/name", "/description")
    rules = (
        Rule(
            "acme-support/expert.yaml",
            "yaml",
            checked_by=PACKAGE_READERS,
            required=("/spec", "/name", "/version", "/description", "/components"),
            types={"/components": "object", "/name": "string", "/requires": "object"},
            read_by=_names("experts explain"),
            must_exist=PACKAGE_READERS | _names("experts explain"),
        ),
        Rule("acme-support/processes/*.md", **front),
        Rule("acme-support/functions/*.md", **front),
        Rule(
            "acme-support/tools/*.yaml",
            "yaml",
            checked_by=PACKAGE_READERS,
            required=("/name", "/operations"),
            types={"/operations": "object"},
            read_by=_names("experts explain"),
        ),
        Rule("acme-support/knowledge/*.md", **_component()),
        Rule("acme-support/state/*.md", **_component()),
        Rule("acme-support/*.md", "text"),
        Rule("acme-support/persona/*.md", "text"),
        Rule(
            "bindings.yaml",
            "yaml",
            checked_by=_names("experts dry-run", "experts run"),
            required=("/tools",),
            types={"/tools": "object"},
            closed=("",),
            must_exist=_names("experts dry-run", "experts run"),
        ),
        Rule("script.yaml", "yaml", checked_by=_names("experts run"), must_exist=_names("experts run")),
        Rule("tools.py", "module"),
    )
    rules = _contained(rules, _names("validate"), under="acme-support/")
    return (Source("openexperts/acme-support", OPENEXPERTS, commands, rules, prepare=_quick_retries),)


def _quick_retries(case: Path, tmp: Path) -> None:
    """Retries without the example's 10 s backoff: a failing tool must not make a case wait half a minute."""
    manifest = case / "acme-support" / "expert.yaml"
    manifest.write_text(manifest.read_text().replace("delay: 10s", "delay: 0s"))


# -- agent_rpc: evaluation manifests ------------------------------------------------------------------------
def _agent_rpc_sources() -> tuple[Source, ...]:
    readers = _names("rpc validate", "validate", "rpc run")
    commands = (
        Command("rpc validate", ("rpc", "validate", "{case}/manifest.yaml", "--json")),
        Command("validate", ("validate", "{case}/manifest.yaml")),
        Command(  # an agent that never answers costs one scenario and two seconds
            "rpc run",
            ("rpc", "run", "-m", "{case}/manifest.yaml", "--json-out", "{tmp}/r.json", "--timeout", "2", "--fail-fast"),
        ),
    )
    rules = (
        Rule(
            "manifest.yaml",
            "yaml",
            checked_by=readers,
            required=("/name", "/target", "/scenarios"),
            types={"/scenarios": "array", "/name": "string", "/timeout": "number"},
            closed=("",),
            must_exist=readers,
        ),
        Rule("data/*.csv", "text"),
        Rule("support_agent.py", "agent"),  # hostile replies: step errors and a report, never a crash or a hang
    )
    return (
        Source(
            "agent_rpc/manifest",
            EXAMPLES / "agent_rpc",
            commands,
            rules,
            focus=("manifest.yaml", "data", "support_agent.py"),
        ),
    )


# -- ECP: Expert Context Packs, through the CLI only (its robustness work is owned separately) -----------------
def _ecp_sources() -> tuple[Source, ...]:
    pack = "{case}"
    commands = (
        Command("validate", ("validate", pack)),
        Command("query", ("query", pack, "How is the prediction cache invalidated?", "-k", "2", "--json")),
        Command("eval", ("eval", pack, "--json")),
    )
    rules = (
        SKILL_MD,
        Rule(
            "expert/EXPERT.yaml",
            "yaml",
            checked_by=_names("validate"),
            required=("/ecp_version", "/id", "/skill", "/sources", "/context", "/maintenance", "/evals"),
            types={"/sources": "array", "/context": "object"},
            must_exist=_names("validate", "query", "eval"),
        ),
        Rule(
            "expert/evals/*.yaml",
            "yaml",
            checked_by=_names("validate", "eval"),
            required=("/suite_id", "/suite_version", "/cases"),
            types={"/cases": "array", "/description": "string"},
        ),
        Rule(
            "expert/maintenance/policy.json",
            "json",
            checked_by=_names("validate"),
            required=(
                "/policy_version",
                "/budgets",
                "/refresh_triggers",
                "/update_strategy",
                "/validation",
                "/publishing",
            ),
        ),
        Rule("expert/context/indexes/*/index.json", "json", checked_by=_names("validate"), timestamps=True),
        Rule("expert/context/indexes/*/*.json", "json"),
        Rule("expert/context/indexes/*/*.jsonl", "text"),
        Rule("expert/context/summaries/*.md", "text"),
        Rule("expert/maintenance/PLAYBOOK.md", "text"),
    )
    return (
        Source(
            "ecp/conformance-pack",
            EXAMPLES / "ecp" / "conformance-pack",
            commands,
            _contained(rules, _names("validate")),
            focus=("SKILL.md", "expert/EXPERT.yaml", "expert/evals", "expert/maintenance", "expert/context"),
        ),
    )


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("skill-md", "core", _core_sources()),
        Target("skills", "skillctl", _skill_sources()),
        Target("dci", "dci", _dci_sources()),
        Target("openexperts", "openexperts", _openexperts_sources()),
        Target("agent_rpc", "agent_rpc", _agent_rpc_sources()),
        Target("ecp", "ecp", _ecp_sources()),
    )
}
