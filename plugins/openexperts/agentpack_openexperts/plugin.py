"""Hook implementations of the openexperts plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentpack import hookimpl
from agentpack.kernel.registry import (
    CommandSpec,
    FormatInfo,
    McpContent,
    McpContext,
    McpTool,
    RunView,
    ScaffoldInfo,
    SchemaInfo,
    register_schema_folder,
)

from .names import FORMAT, MANIFEST

if TYPE_CHECKING:  # annotations only: this module is imported by every command
    import pluggy

    from agentpack.kernel.host import Host
    from agentpack.kernel.models import Finding
    from agentpack.kernel.packtypes import Detection, Pack
    from agentpack.results.runs import Run

    from .registry import BinderSpec, BrokerSpec, ChannelSpec, DriverSpec, PresetSpec, QueueSpec


@hookimpl
def agentpack_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    register(
        FormatInfo(
            name=FORMAT,
            title="openexperts",
            description="an expert package: expert.yaml, orchestrator, persona, functions, processes",
            extra="openexperts",
        )
    )


@hookimpl
def agentpack_detect(path: Path) -> Detection | None:
    if (path.is_dir() and (path / MANIFEST).is_file()) or (path.is_file() and path.name == MANIFEST):
        from agentpack.kernel.packtypes import Detection

        return Detection(format=FORMAT, confidence=0.9, reason="has expert.yaml")
    return None


@hookimpl
def agentpack_load(path: Path) -> Pack:
    from agentpack.kernel.packtypes import Pack

    from .loader import load_package

    package = load_package(path)
    return Pack(path=path, root=package.root, format=FORMAT, name=package.name, version=package.version, data=package)


@hookimpl
def agentpack_validate(pack: Pack, strict: bool, host: Host) -> list[Finding] | None:
    from .validate import validate_package

    return validate_package(pack.data, host, strict=strict)


@hookimpl
def agentpack_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec(
            name="experts",
            target="agentpack_openexperts.cli:group",
            help="Run, explain, dry-run and export openexperts expert packages.",
        )
    )


@hookimpl
def agentpack_register_mcp_tools(register: Callable[[McpTool], None], context: McpContext, host: Host) -> None:
    from .mcp_tools import tools

    for tool in tools(host, context):
        register(tool)


@hookimpl
def agentpack_register_mcp_content(register: Callable[[McpContent], None], context: McpContext, host: Host) -> None:
    from .mcp_tools import content

    for item in content(host, context):
        register(item)


@hookimpl
def agentpack_register_run_views(register: Callable[[RunView], None]) -> None:
    def render(run: Run) -> str:
        from .runlog import view

        return view(run)

    register(RunView(name="experts-plan", title="Dry-run plan and approvals", formats=(FORMAT,), render=render))


# -- this plugin's own registrations (hooks defined in hookspecs.py) -------------------------------
@hookimpl
def agentpack_openexperts_register_drivers(register: Callable[[DriverSpec], None]) -> None:
    from . import builtins

    for spec in builtins.drivers():
        register(spec)


@hookimpl
def agentpack_openexperts_register_brokers(register: Callable[[BrokerSpec], None]) -> None:
    from . import builtins

    for spec in builtins.brokers():
        register(spec)


@hookimpl
def agentpack_openexperts_register_binders(register: Callable[[BinderSpec], None]) -> None:
    from . import builtins

    for spec in builtins.binders():
        register(spec)


@hookimpl
def agentpack_openexperts_register_queues(register: Callable[[QueueSpec], None]) -> None:
    from . import builtins

    for spec in builtins.queues():
        register(spec)


@hookimpl
def agentpack_openexperts_register_presets(register: Callable[[PresetSpec], None]) -> None:
    from . import builtins

    for spec in builtins.presets():
        register(spec)


@hookimpl
def agentpack_openexperts_register_channels(register: Callable[[ChannelSpec], None]) -> None:
    from . import builtins

    for spec in builtins.channels():
        register(spec)


@hookimpl
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    register_schema_folder(register, Path(__file__).parent / "schemas", "openexperts")


@hookimpl
def agentpack_register_scaffolds(register: Callable[[ScaffoldInfo], None]) -> None:
    register(ScaffoldInfo("expert", ("experts", "init"), "an openexperts package: expert.yaml, a process, a function"))
