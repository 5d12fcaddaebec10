"""Every hook agentpack offers to plugins, in one place.

Read this file to know the system. Each hook is prefixed ``agentpack_`` and
documented in ``docs/plugin-hooks.md``. Result modes are chosen on purpose:

* registration hooks (formats, reporters, CLI commands, MCP tools, run
  exporters, run views) receive a ``register`` callback; a duplicate name is
  an error naming both plugins;
* ``agentpack_detect`` is gathered from every plugin and the most confident
  answer wins; ``agentpack_load`` is ``firstresult`` (the first plugin that
  recognises the path claims it);
* ``agentpack_load``, ``agentpack_validate``, ``agentpack_query``,
  ``agentpack_evaluate`` and ``agentpack_invoke`` go only to the plugin that
  registered the pack's format (owner dispatch, through pluggy's
  ``subset_hook_caller``): an implementation sees only its own packs;
* ``agentpack_check`` findings (cross-cutting checks such as the SKILL.md rules)
  are gathered from every plugin, for packs of every format.

The host checks what each implementation returns and names the plugin whose
answer has the wrong type.

Pack hooks also receive ``host``, the ``agentpack.kernel.host.Host`` that called
them: the services a plugin needs (reporters, other hooks, loading another
pack) come from it rather than from the process-wide ``get_host()``. pluggy
passes an argument only to implementations that name it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # imported for annotations only: keeps CLI start-up fast
    from pathlib import Path

    from agentpack.kernel.host import Host
    from agentpack.kernel.invocation import InvokeRequest, InvokeResult
    from agentpack.kernel.models import EvalOptions, EvalReport, Finding
    from agentpack.kernel.packtypes import Detection, Pack, QueryRequest, QueryResponse
    from agentpack.kernel.registry import (
        CommandSpec,
        FormatInfo,
        McpContent,
        McpContext,
        McpTool,
        Reporter,
        RunExporter,
        RunView,
        ScaffoldInfo,
        SchemaInfo,
    )

hookspec = pluggy.HookspecMarker("agentpack")
hookimpl = pluggy.HookimplMarker("agentpack")
"""Marks a hook implementation; plugins import it as ``agentpack.hookimpl``."""


@hookspec
def agentpack_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    """Add a plugin's own hook specifications (for example graders or drivers).

    Called once, after every plugin is registered and before
    ``check_pending``, so a plugin may implement hooks another plugin defines.
    """


@hookspec
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    """Register the pack formats this plugin owns, as ``FormatInfo`` values."""


@hookspec
def agentpack_detect(path: Path) -> Detection | None:
    """Say whether ``path`` (a file or directory) is a pack of one of your formats.

    Return a ``Detection`` with a confidence in (0, 1], or ``None``. Answers are
    gathered from every plugin; the highest confidence wins, ties broken by
    format name so detection is deterministic.
    """


@hookspec(firstresult=True)
def agentpack_load(path: Path, format: str, host: Host, detection: Detection | None) -> Pack | None:
    """Load ``path`` as a pack of ``format`` (one you registered) and return a ``Pack`` handle.

    ``detection`` is your own ``agentpack_detect`` answer that chose ``format`` (with the ``data`` you
    read to decide), or ``None`` when the format was named by the caller.

    The ``Pack.data`` you return is what ``agentpack_validate``,
    ``agentpack_query`` and ``agentpack_evaluate`` receive: parse each file
    once, here. Raise
    ``agentpack.io.errors.PackError`` (with file and line) for a pack that cannot
    be read at all; anything merely wrong belongs in ``agentpack_validate``.
    """


@hookspec(firstresult=True)
def agentpack_validate(pack: Pack, strict: bool, host: Host) -> list[Finding] | None:
    """Return the findings of ``pack`` (always of a format you registered) against its format's rules.

    ``strict`` turns on the optional, stricter rules a format defines. Checks that apply to packs of any
    format belong in ``agentpack_check``.
    """


@hookspec
def agentpack_check(pack: Pack, strict: bool, host: Host) -> list[Finding] | None:
    """Cross-cutting checks: findings for ``pack`` whatever its format. Gathered from every plugin.

    For rules that are not one format's own, for example the SKILL.md rules for any pack that has a
    SKILL.md, or capability-contract lint in any skill. Every pack of every format reaches every
    implementation: return ``None`` for a pack your check does not concern, and never assume its
    ``Pack.data`` has a shape you know (it belongs to the pack's owner).
    """


@hookspec(firstresult=True)
def agentpack_query(pack: Pack, request: QueryRequest, host: Host) -> QueryResponse | None:
    """Answer ``request`` against ``pack`` (always of a format you registered); ``None``: no queries."""


@hookspec(firstresult=True)
def agentpack_evaluate(pack: Pack, options: EvalOptions, host: Host) -> EvalReport | None:
    """Run the evaluations of ``pack`` (always of a format you registered); ``None``: none to run.

    ``options.jobs`` and ``options.options`` (``agentpack eval --option KEY=VALUE``) are for you to honour.
    """


@hookspec
def agentpack_register_reporters(register: Callable[[Reporter], None]) -> None:
    """Register report renderers (``Reporter``), looked up by name by ``-o NAME``."""


@hookspec
def agentpack_register_commands(register: Callable[[CommandSpec], None]) -> None:
    """Register top-level CLI commands or groups as ``CommandSpec`` values.

    A spec names an import path (``"pkg.module:attr"``) that is imported only
    when the command runs, so ``agentpack --help`` stays fast.
    """


@hookspec
def agentpack_register_mcp_tools(register: Callable[[McpTool], None], context: McpContext, host: Host) -> None:
    """Register MCP tools served by ``agentpack mcp serve``.

    ``context`` carries the packs and options the server was started with;
    ``host`` is the server's host, for handlers that need plugin services. Each
    tool maps one to one to a CLI command and returns the same JSON payload,
    describes every input property, and says what it does through ``hints``
    (the MCP tool annotations).
    """


@hookspec
def agentpack_register_mcp_content(register: Callable[[McpContent], None], context: McpContext, host: Host) -> None:
    """Register what ``agentpack mcp serve`` publishes for the served packs besides tools.

    An ``McpContent`` carries Agent Skills (``SkillTree``: a folder, or files made in memory such
    as an export), resources (knowledge a host would attach) and prompts. Called again whenever
    the served packs change on disk, so what it registers reflects the files at that moment.
    """


@hookspec
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    """Register the JSON Schemas your formats bundle (``SchemaInfo``), for ``agentpack schema list/export``.

    ``agentpack.kernel.schemas.register_schema_folder`` registers every ``*.json`` of a folder.
    """


@hookspec
def agentpack_register_scaffolds(register: Callable[[ScaffoldInfo], None]) -> None:
    """Register the scaffolds of your formats (``ScaffoldInfo``): ``agentpack init`` lists them and
    ``agentpack init NAME DIR`` runs the command one names, which writes a working starting point into DIR
    and prints the next steps (each of which must pass on what it wrote).
    """


@hookspec
def agentpack_register_run_exporters(register: Callable[[RunExporter], None]) -> None:
    """Register exporters of recorded runs (``RunExporter``), chosen by ``agentpack runs export -o NAME``.

    Built in: ``jsonl`` and ``csv``. An exporter may send runs to another system (an observability
    platform) instead of writing them out.
    """


@hookspec
def agentpack_register_run_views(register: Callable[[RunView], None]) -> None:
    """Register sections of the run page of ``agentpack view`` (``RunView``) for runs of your formats.

    Runs with no view of their own get the generic page (cases, assertions, details as JSON).
    """


@hookspec(firstresult=True)
def agentpack_invoke(pack: Pack, request: InvokeRequest, host: Host) -> InvokeResult | None:
    """Run ``pack`` (always of a format you registered) once with ``request.input``; ``None``: it cannot be run.

    Owner dispatch, through ``Host.invoke``: the seam by which one format runs a pack of another
    (openexperts runs skillctl skills) without importing its plugin or spawning the command line.
    A run that fails (bad input, timeout, a refused sandbox, an invalid contract) is an
    ``InvokeResult`` with the format's status and located ``InvokeError`` values, not an exception.
    """


__all__ = ["hookspec"]
