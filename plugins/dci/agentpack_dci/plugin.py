"""Hook implementations of the dci plugin (kept light: heavy imports happen inside hooks).

Format ``dci``: a DCI workspace, i.e. a directory with ``.dci/`` or with a
``skills/`` tree whose SKILL.md files carry ``metadata.contract`` (confidence
0.5). Cross-cutting: ``metadata.contract`` is linted in any pack whose root has
a SKILL.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentpack import hookimpl
from agentpack.kernel.registry import CommandSpec, FormatInfo, RunView, ScaffoldInfo, SchemaInfo, register_schema_folder

if TYPE_CHECKING:
    import pluggy

    from agentpack.kernel.models import Finding
    from agentpack.kernel.packtypes import Detection, Pack
    from agentpack.kernel.runtypes import Run

FORMAT = "dci"
_CONTRACT_LINE = re.compile(r"^\s+contract\s*:", re.MULTILINE)
_DETECT_SCAN_LIMIT = 200


def _has_contract_skills(skills: Path) -> bool:
    from agentpack.io.errors import AgentpackError
    from agentpack.io.userfiles import read_bytes

    scanned = 0
    for directory, dirnames, filenames in os.walk(skills):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if "SKILL.md" in filenames:
            scanned += 1
            try:
                head = read_bytes(Path(directory) / "SKILL.md").decode("utf-8", "replace")[:8192]
            except AgentpackError:  # a FIFO or a folder named SKILL.md: no contract here (validation says why)
                head = ""
            if head.startswith("---") and _CONTRACT_LINE.search(
                head.split("---", 2)[1] if head.count("---") >= 2 else ""
            ):
                return True
            if scanned >= _DETECT_SCAN_LIMIT:
                return False
    return False


@hookimpl
def agentpack_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    register(
        FormatInfo(
            name=FORMAT,
            title="DCI workspace",
            description="skills with Dependent Capability Contracts (metadata.contract) and .dci/",
            extra="dci",
        )
    )


@hookimpl
def agentpack_detect(path: Path) -> Detection | None:
    if not path.is_dir():
        return None
    from agentpack.kernel.packtypes import Detection

    if (path / ".dci").is_dir():
        return Detection(format=FORMAT, confidence=0.5, reason="has .dci/")
    skills = path / "skills"
    if skills.is_dir() and _has_contract_skills(skills):
        return Detection(format=FORMAT, confidence=0.5, reason="skills/ with metadata.contract")
    return None


@hookimpl
def agentpack_load(path: Path) -> Pack:
    from agentpack.io.errors import PackError
    from agentpack.kernel.packtypes import Pack

    if not path.is_dir():
        raise PackError("a DCI workspace is a directory (with skills/ or .dci/)", file=str(path))
    return Pack(path=path, root=path, format=FORMAT, name=path.resolve().name)


@hookimpl
def agentpack_validate(pack: Pack, strict: bool) -> list[Finding]:
    """A DCI workspace: every skill's contracts and the workspace's own files."""
    from .lint import lint_workspace, strictly

    findings = lint_workspace(pack.root)
    return strictly(findings) if strict else findings


@hookimpl
def agentpack_check(pack: Pack, strict: bool) -> list[Finding] | None:
    """Capability contracts in the SKILL.md of a pack of any other format."""
    if pack.format == FORMAT or not (pack.root / "SKILL.md").is_file():
        return None
    from .lint import lint_skill, strictly

    findings = lint_skill(pack.root, display=str(pack.root / "SKILL.md"), report_unreadable=False)
    return strictly(findings) if strict else findings


@hookimpl
def agentpack_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec(
            name="dci",
            target="agentpack_dci.cli:group",
            help="Dependent Capability Contracts: parse, lint, resolve, explain, record.",
        )
    )


@hookimpl
def agentpack_register_run_views(register: Callable[[RunView], None]) -> None:
    def render(run: Run) -> str:
        from .runlog import view

        return view(run)

    register(RunView(name="dci-candidates", title="Candidates and scores", formats=("dci",), render=render))


@hookimpl
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    register_schema_folder(register, Path(__file__).parent / "schemas", "dci")


@hookimpl
def agentpack_register_scaffolds(register: Callable[[ScaffoldInfo], None]) -> None:
    register(ScaffoldInfo("dci", ("dci", "init"), "a DCI workspace: a consumer and a provider with contracts"))
