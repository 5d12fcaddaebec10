"""Values plugins register through the ``agentpack_register_*`` hooks.

Named tuples (no pydantic, no dataclasses) so that building the CLI stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, cast

from agentpack.kernel.records import Record

if TYPE_CHECKING:
    from typing import TextIO

    import click

    from agentpack.kernel.models import Report
    from agentpack.kernel.runtypes import Run


class FormatInfo(NamedTuple):
    """A pack format a plugin owns."""

    name: str
    title: str
    description: str = ""
    extra: str | None = None
    """The ``agentpack-core`` extra that installs this format, for messages."""
    plugin: str | None = None
    """Filled in by the core: the plugin that registered it."""


class Reporter(NamedTuple):
    """Renders a ``Report`` (validation findings and/or evaluation results) as text."""

    name: str
    description: str
    render: Callable[[Report], str]
    suffix: str = ".txt"
    plugin: str | None = None
    lazy: bool = False
    """Whether ``render`` also takes a ``LazyReport`` as it is (no pydantic ``Report`` built for it)."""


class CommandSpec(NamedTuple):
    """A top-level CLI command or group, imported only when it runs."""

    name: str
    target: str | click.Command
    """``"package.module:attribute"`` or a ``click.Command``."""
    help: str = ""
    plugin: str | None = None

    def load(self) -> click.Command:
        if not isinstance(self.target, str):
            return self.target
        module, _, attr = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return cast("click.Command", obj)


class SchemaInfo(NamedTuple):
    """A bundled JSON Schema a plugin registers, so ``agentpack schema export`` can hand it to editors."""

    name: str
    """``<plugin or format>/<file stem>``, e.g. ``ecp/ecp-manifest``."""
    path: Path
    title: str = ""
    plugin: str | None = None


def register_schema_folder(register: Callable[[SchemaInfo], None], folder: Path, prefix: str) -> None:
    """Register every ``*.json`` schema of ``folder`` as ``<prefix>/<stem>`` (``.schema`` dropped), titled by its
    ``title``."""
    import json

    for path in sorted(folder.glob("*.json")):
        title = json.loads(path.read_text(encoding="utf-8")).get("title", "")
        register(
            SchemaInfo(
                name=f"{prefix}/{path.name.removesuffix('.json').removesuffix('.schema')}",
                path=path,
                title=title if isinstance(title, str) else "",
            )
        )


class ScaffoldInfo(NamedTuple):
    """A starting point a plugin offers: ``agentpack init NAME DIR [ARGS]`` runs ``agentpack COMMAND... DIR [ARGS]``."""

    name: str
    """What ``agentpack init`` lists, e.g. ``ecp``."""
    command: tuple[str, ...]
    """The words after ``agentpack`` of the command that scaffolds a new one in a folder, e.g. ``("ecp", "init")``."""
    description: str = ""
    plugin: str | None = None


def schema_modeline(schemas: Mapping[str, SchemaInfo], name: str, document: Path, root: Path) -> str:
    """The ``# yaml-language-server: $schema=`` line of ``document`` for schema ``name``, resolving offline:
    the schemas of ``name``'s plugin are exported to ``root/.schemas/<plugin>/`` (so a ``$ref`` between them
    resolves beside it) and the line names the file by its path relative to ``document``'s folder."""
    import os

    from agentpack.io.fsutil import SHARED, atomic_write_text

    prefix = name.split("/", 1)[0]
    folder = root / ".schemas" / prefix
    for info in schemas.values():
        if info.name.split("/", 1)[0] == prefix:
            atomic_write_text(folder / info.path.name, info.path.read_text(encoding="utf-8"), mode=SHARED)
    target = os.path.relpath(folder / schemas[name].path.name, document.parent)
    return f"# yaml-language-server: $schema={Path(target).as_posix()}"


class Recording(NamedTuple):
    """Where and whether a command records its run (``clikit.record_options``; ``results.runs.record_run``)."""

    store: Path | None = None
    """``--store``; ``None``: ``$AGENTPACK_RUNS`` or ``.agentpack/runs.sqlite`` in the project."""
    enabled: bool = True
    tags: tuple[str, ...] = ()


class McpContext(Record):
    """What ``agentpack mcp serve`` was started with."""

    __slots__ = ("packs", "options", "recording")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"packs": list, "options": dict, "recording": lambda: None}
    packs: list[Path]
    options: dict[str, Any]
    recording: Recording | None
    """``--store``/``--no-record``/``--tag`` (a ``Recording``) for tools that record runs
    (pass it to ``agentpack.results.runs.save_run``/``record_run``); ``None``: the default store."""


class ToolHints(NamedTuple):
    """What an MCP tool does to the world: sent as the MCP tool annotations a host decides by.

    ``read_only``: changes nothing; ``destructive``: may delete or overwrite (meaningful when not
    read-only); ``idempotent``: calling again with the same arguments changes nothing more;
    ``open_world``: reaches outside this machine's packs (a network, a model, an external system).
    """

    read_only: bool
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False


READ_ONLY = ToolHints(read_only=True)
"""The hints of a tool that only reads its packs."""


class McpTool(NamedTuple):
    """A tool served over MCP. ``handler(arguments)`` returns a JSON-able dict.

    A handler raises ``AgentpackError`` for a tool error (sent as an
    ``isError`` result with the message); other exceptions are internal errors.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[..., dict[str, Any]]
    """``handler(arguments)``; with ``progress``: ``handler(arguments, report)``."""
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    hints: ToolHints | None = None
    """MCP tool annotations; every built-in tool sets them (a conformance test checks)."""
    plugin: str | None = None
    aliases: tuple[str, ...] = ()
    """Former names still answered in ``tools/call`` (not listed), for one release after a rename."""
    fixed: bool = False
    """The result depends only on the arguments for the life of the process (said in cache hints)."""
    progress: bool = False
    """A long tool: ``handler(arguments, report)`` receives ``report(done, total, message)`` to send
    progress notifications to a client that asked for them."""


class McpResource(NamedTuple):
    """A resource ``agentpack mcp serve`` offers: knowledge a host would attach to a conversation.

    ``read()`` returns the raw bytes when a client reads it (sent as text when they are UTF-8).
    """

    uri: str
    name: str
    read: Callable[[], bytes]
    description: str | None = None
    mime_type: str | None = None


class McpPrompt(NamedTuple):
    """A prompt ``agentpack mcp serve`` offers; ``render(arguments)`` returns its text.

    ``arguments``: ``(name, description, required)`` of each argument the prompt takes.
    """

    name: str
    description: str
    render: Callable[[dict[str, str]], str]
    arguments: tuple[tuple[str, str, bool], ...] = ()
    title: str | None = None


class SkillTree(NamedTuple):
    """Agent Skills to publish over MCP: every skill (a folder holding ``SKILL.md``) in a tree.

    The tree is on disk under ``root`` or in memory as ``files`` (relative POSIX path to raw bytes).
    A skill's path is ``prefix``, then its folder relative to the tree (a ``SKILL.md`` at the root
    of an on-disk tree: the root's own name). ``exclude(relative_path)`` keeps files out that are
    not part of the skill (runtime state).
    """

    prefix: str = ""
    root: Path | None = None
    files: dict[str, bytes] | None = None
    exclude: Callable[[str], bool] | None = None


class McpContent(NamedTuple):
    """What a plugin publishes over MCP for the served packs besides tools.

    ``covers``: served pack paths whose skills ``skills`` describe (the core publishes every
    ``SKILL.md`` under any other served pack itself).
    """

    name: str
    covers: tuple[Path, ...] = ()
    skills: tuple[SkillTree, ...] = ()
    resources: tuple[McpResource, ...] = ()
    prompts: tuple[McpPrompt, ...] = ()
    plugin: str | None = None


class RunExporter(NamedTuple):
    """Writes recorded runs somewhere: ``agentpack runs export -o NAME``.

    ``export(runs, out, options)`` receives the ``agentpack.results.runs.Run`` values (with cases and
    report), the text stream to write to (stdout or ``--to FILE``), and ``--option KEY=VALUE``
    pairs. An exporter that sends runs elsewhere (an observability platform) may write only a
    summary line to ``out``.
    """

    name: str
    description: str
    export: Callable[[Iterable[Run], TextIO, dict[str, str]], None]
    suffix: str = ""
    """The file suffix ``--to FILE`` picks this exporter by (``.jsonl``, ``.csv``)."""
    plugin: str | None = None


class RunView(NamedTuple):
    """A section of the run page of ``agentpack view`` for runs of some formats.

    ``render(run)`` returns an HTML fragment (escape what you show; ``agentpack.results.viewer.html``
    has helpers) or ``""`` when it has nothing to add for this run.
    """

    name: str
    title: str
    formats: tuple[str, ...]
    """The formats (``Run.format``) the view is for; empty: every run."""
    render: Callable[[Run], str]
    plugin: str | None = None
