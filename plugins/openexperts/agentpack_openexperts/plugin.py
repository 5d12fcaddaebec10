"""Hook implementations of the openexperts plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from pathlib import Path

from agentpack import hookimpl
from agentpack.registry import CommandSpec, FormatInfo

FORMAT = "openexperts"
MANIFEST = "expert.yaml"


@hookimpl
def agentpack_add_hookspecs(pluginmanager):
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentpack_register_formats(register):
    register(
        FormatInfo(
            name=FORMAT,
            title="openexperts",
            description="an expert package: expert.yaml, orchestrator, persona, functions, processes",
            extra="openexperts",
        )
    )


@hookimpl
def agentpack_detect(path: Path):
    if (path.is_dir() and (path / MANIFEST).is_file()) or (path.is_file() and path.name == MANIFEST):
        from agentpack.models import Detection

        return Detection(format=FORMAT, confidence=0.9, reason="has expert.yaml")
    return None


@hookimpl
def agentpack_load(path: Path, format: str):
    if format != FORMAT:
        return None
    from agentpack.models import Pack

    from .loader import load_package

    package = load_package(path)
    return Pack(path=path, root=package.root, format=FORMAT, name=package.name, version=package.version, data=package)


@hookimpl
def agentpack_validate(pack, strict):
    if pack.format != FORMAT:
        return None
    from .validate import validate_package

    return validate_package(pack.data, strict)


@hookimpl
def agentpack_register_commands(register):
    register(
        CommandSpec(
            name="experts",
            target="agentpack_openexperts.cli:group",
            help="Run, explain, dry-run and export openexperts expert packages.",
        )
    )


# -- this plugin's own registrations (hooks defined in hookspecs.py) -------------------------------
@hookimpl
def agentpack_openexperts_register_drivers(register):
    from . import builtins

    for spec in builtins.drivers():
        register(spec)


@hookimpl
def agentpack_openexperts_register_brokers(register):
    from . import builtins

    for spec in builtins.brokers():
        register(spec)


@hookimpl
def agentpack_openexperts_register_binders(register):
    from . import builtins

    for spec in builtins.binders():
        register(spec)


@hookimpl
def agentpack_openexperts_register_queues(register):
    from . import builtins

    for spec in builtins.queues():
        register(spec)


@hookimpl
def agentpack_openexperts_register_presets(register):
    from . import builtins

    for spec in builtins.presets():
        register(spec)


@hookimpl
def agentpack_openexperts_register_channels(register):
    from . import builtins

    for spec in builtins.channels():
        register(spec)


@hookimpl
def agentpack_register_mcp_tools(register, context):
    from .mcp_tools import tools

    for tool in tools(context):
        register(tool)
