"""The host: a typed facade over ``pm.hook`` that spells out every hook call, and what it knows of plugins.

``agentpack.kernel.plugins`` builds the plugin manager a ``Host`` wraps; hook specs receive this ``Host``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from agentpack.io.console import debug
from agentpack.io.errors import AgentpackError, PackError, PluginError
from agentpack.kernel.entrypoints import entry_points
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

if TYPE_CHECKING:
    import pluggy

    from agentpack.kernel.invocation import InvokeRequest, InvokeResult
    from agentpack.kernel.models import EvalOptions, EvalReport, Finding
    from agentpack.kernel.packtypes import Detection, Pack, QueryRequest, QueryResponse

ENTRY_POINT_GROUP = "agentpack"
DEFAULT_PLUGINS = ("agentpack.results.reporters.plugin", "agentpack.skills.plugin", "agentpack.results.runs.plugin")
"""Core-internal plugins, registered before any entry point."""

T = TypeVar("T")


class PluginInfo(NamedTuple):
    name: str
    version: str | None
    distribution: str | None
    hooks: tuple[str, ...]
    builtin: bool = False


def collect_registrations(
    pm: pluggy.PluginManager, hook_name: str, kind: str, *, tolerant: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """Call a registration hook one implementation at a time and return the items by ``name``.

    Items are named tuples (or dataclasses) with ``name`` and ``plugin`` fields; ``plugin`` is filled
    in with the registering plugin. Two plugins registering one name is a ``PluginError`` naming both. Plugins
    that define registration hooks of their own (graders, drivers...) use this too. ``tolerant``: a
    plugin whose registration crashes is skipped with a warning on stderr. A hook nobody defined
    (its plugin is not installed) yields nothing.
    """
    found: dict[str, Any] = {}
    caller = getattr(pm.hook, hook_name, None)
    for impl in reversed(caller.get_hookimpls()) if caller is not None else ():
        plugin_name = impl.plugin_name

        def register(item: Any, _plugin: str = plugin_name) -> None:
            item = _with_plugin(item, _plugin)
            if item.name in found:
                raise PluginError(
                    f"{kind} '{item.name}' is registered by both plugin '{found[item.name].plugin}' "
                    f"and plugin '{_plugin}'",
                    hint="disable one of them with AGENTPACK_DISABLE_PLUGINS",
                )
            found[item.name] = item

        args = {"register": register, **kwargs}
        try:
            impl.function(**{name: args[name] for name in impl.argnames})
        except PluginError:
            raise
        except Exception as exc:
            if not tolerant or isinstance(exc, AgentpackError):
                raise
            print(f"warning: plugin '{plugin_name}' registered no {kind}s: {exc!r}", file=sys.stderr)
    return found


class Host:
    """Typed facade over ``pm.hook``: the one place that spells out hook arguments."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._cache: dict[str, Any] = {}
        self.cache: dict[str, Any] = {}
        """State for one command, shared by the core and the plugins (a module's entry is keyed by its name):
        a file parsed by one check is not parsed again by the next. ``new_command()`` empties it."""

    def new_command(self) -> None:
        """A new command starts from the files: forget what the last one parsed."""
        self.cache.clear()

    # -- registrations -------------------------------------------------
    def _collect(self, hook_name: str, kind: str, *, tolerant: bool = False, **kwargs: Any) -> dict[str, Any]:
        """Call a registration hook one implementation at a time, so duplicates name both plugins.

        ``tolerant``: a plugin whose registration crashes is skipped with a warning on stderr
        (used for MCP tools, so one broken plugin does not take the whole server down).
        """
        if hook_name not in self._cache:
            self._cache[hook_name] = collect_registrations(self.pm, hook_name, kind, tolerant=tolerant, **kwargs)
        found: dict[str, Any] = self._cache[hook_name]
        return found

    def formats(self) -> dict[str, FormatInfo]:
        return self._collect("agentpack_register_formats", "format")

    def reporters(self) -> dict[str, Reporter]:
        return self._collect("agentpack_register_reporters", "reporter")

    def commands(self) -> dict[str, CommandSpec]:
        return self._collect("agentpack_register_commands", "command")

    def mcp_tools(self, context: McpContext) -> dict[str, McpTool]:
        """The tools ``agentpack mcp serve`` offers for ``context``.

        With packs named, only the plugins that own one of their formats (or the core) offer tools: an
        expert-pack server lists no openexperts tools. Without packs, every plugin's tools are listed.
        """
        return self._mcp_registrations("agentpack_register_mcp_tools", "MCP tool", context)

    def mcp_content(self, context: McpContext) -> dict[str, McpContent]:
        """The skills, resources and prompts ``agentpack mcp serve`` publishes for ``context``, read now.

        From the same plugins as ``mcp_tools``; collected afresh on each call (the packs may have changed).
        """
        return self._mcp_registrations("agentpack_register_mcp_content", "MCP content", context)

    def _mcp_registrations(self, hook_name: str, kind: str, context: McpContext) -> dict[str, Any]:
        self._cache.pop(hook_name, None)
        found = self._collect(hook_name, kind, tolerant=True, context=context, host=self)
        if not context.packs:
            return found
        owners = set(DEFAULT_PLUGINS)
        for path in context.packs:
            detection = self.detect(Path(path))
            if detection is not None:
                owners.add(self.owner(detection.format) or "")
        return {name: item for name, item in found.items() if item.plugin in owners}

    def run_exporters(self) -> dict[str, RunExporter]:
        return self._collect("agentpack_register_run_exporters", "run exporter")

    def run_views(self) -> dict[str, RunView]:
        return self._collect("agentpack_register_run_views", "run view", tolerant=True)

    def schemas(self) -> dict[str, SchemaInfo]:
        return self._collect("agentpack_register_schemas", "schema")

    def scaffolds(self) -> dict[str, ScaffoldInfo]:
        return self._collect("agentpack_register_scaffolds", "scaffold")

    def reporter(self, name: str) -> Reporter:
        reporters = self.reporters()
        if name not in reporters:
            raise PluginError(f"unknown output format '{name}'; choose from: {', '.join(sorted(reporters))}")
        return reporters[name]

    # -- packs -----------------------------------------------------------
    def owner(self, format: str) -> str | None:
        """The name of the plugin that registered ``format`` (``None`` for an unknown format)."""
        info = self.formats().get(format)
        return info.plugin if info else None

    def owner_hook(self, hook_name: str, format: str) -> Any:
        """A caller of ``hook_name`` that reaches only the plugin owning ``format``.

        Owner dispatch: a plugin's ``agentpack_load``, ``agentpack_validate``, ``agentpack_query``
        and ``agentpack_evaluate`` see only packs of formats it registered, so they
        need no ``if pack.format != MINE`` guard. A format no plugin registered
        reaches every implementation (first result wins), as before.
        """
        key = f"owner:{hook_name}:{format}"
        if key not in self._cache:
            owner = self.owner(format)
            if owner is None:
                self._cache[key] = getattr(self.pm.hook, hook_name)
            else:
                others = [plugin for name, plugin in self.pm.list_name_plugin() if name != owner]
                self._cache[key] = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
        return self._cache[key]

    def detect_all(self, path: Path) -> list[Detection]:
        found = sorted(
            (d for d in self.pm.hook.agentpack_detect(path=path) if d is not None),
            key=lambda d: (-d.confidence, d.format),
        )
        debug(__name__, "detect %s: %s", path, ", ".join(f"{d.format} {d.confidence:g}" for d in found) or "none")
        return found

    def detect(self, path: Path) -> Detection | None:
        found = self.detect_all(path)
        return found[0] if found else None

    def load(self, path: str | Path, format: str | Detection | None = None) -> Pack:
        """Load ``path`` as a pack, detecting its format unless ``format`` names it or is the ``Detection``
        (from ``detect``) that chose it."""
        path = Path(path)
        if not path.exists():
            raise PackError(f"no such file or directory: {path}")
        detection = None
        if format is not None and not isinstance(format, str):
            detection, format = format, format.format
        elif format is None:
            detection = self.detect(path)
            if detection is None:
                from agentpack.kernel.known import not_a_pack

                formats = list(self.formats())
                loaded = {name for name, _ in self.pm.list_name_plugin()}
                installed = {ep.name for ep in entry_points(ENTRY_POINT_GROUP)}
                message, hint = not_a_pack(path, formats, loaded, installed)
                raise PackError(message, hint=hint)
            format = detection.format
        elif format not in self.formats():
            raise PackError(f"unknown format '{format}'; installed formats: {', '.join(sorted(self.formats()))}")
        pack = self.owner_hook("agentpack_load", format)(path=path, format=format, host=self, detection=detection)
        if pack is None:
            raise PackError(f"{path}: no installed plugin could load it as '{format}'")
        from agentpack.kernel.packtypes import Pack

        return _typed(pack, Pack, self.owner(format), "agentpack_load")

    def validate(self, pack: Pack, *, strict: bool = False) -> list[Finding]:
        """The owner's findings (``agentpack_validate``) and every plugin's cross-cutting ones (``agentpack_check``)."""
        owner = self.owner(pack.format) or pack.format
        own = self.owner_hook("agentpack_validate", pack.format)(pack=pack, strict=strict, host=self)
        findings = _findings(own, owner, "agentpack_validate")
        args = {"pack": pack, "strict": strict, "host": self}
        for impl in reversed(self.pm.hook.agentpack_check.get_hookimpls()):
            result = impl.function(**{name: args[name] for name in impl.argnames})
            findings += _findings(result, impl.plugin_name, "agentpack_check")
        return sorted(findings, key=lambda f: f.sort_key())

    def query(self, pack: Pack, request: QueryRequest | str) -> QueryResponse:
        """Ask the owner of ``pack``'s format; ``request`` may be the question alone."""
        from agentpack.kernel.packtypes import QueryRequest, QueryResponse

        if isinstance(request, str):
            request = QueryRequest(question=request)
        response = self.owner_hook("agentpack_query", pack.format)(pack=pack, request=request, host=self)
        if response is None:
            raise PackError(f"format '{pack.format}' does not support queries")
        return _typed(response, QueryResponse, self.owner(pack.format), "agentpack_query")

    def evaluate(self, pack: Pack, options: EvalOptions) -> EvalReport:
        from agentpack.kernel.models import EvalReport

        report = self.owner_hook("agentpack_evaluate", pack.format)(pack=pack, options=options, host=self)
        if report is None:
            raise PackError(f"format '{pack.format}' has no evaluations")
        return _typed(report, EvalReport, self.owner(pack.format), "agentpack_evaluate")

    def invoke(self, pack: Pack, request: InvokeRequest) -> InvokeResult:
        """Run ``pack`` once with ``request.input`` through its owner's ``agentpack_invoke``.

        A failed run is a result (its ``status`` and located ``errors``); a format that cannot be run
        is a ``PackError``.
        """
        from agentpack.kernel.invocation import InvokeResult

        result = self.owner_hook("agentpack_invoke", pack.format)(pack=pack, request=request, host=self)
        if result is None:
            raise PackError(f"format '{pack.format}' packs cannot be invoked", file=str(pack.path))
        return _typed(result, InvokeResult, self.owner(pack.format), "agentpack_invoke")

    # -- introspection -------------------------------------------------
    def plugin_infos(self) -> list[PluginInfo]:
        from agentpack.kernel.version import __version__

        dists = {ep.name: ep for ep in entry_points(ENTRY_POINT_GROUP)}
        infos = []
        for name, plugin in self.pm.list_name_plugin():
            hooks = tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()))
            dist = dists.get(name)
            builtin = name in DEFAULT_PLUGINS
            infos.append(
                PluginInfo(
                    name=name,
                    version=dist.version if dist else (__version__ if builtin else None),
                    distribution=dist.distribution if dist else ("agentpack-core" if builtin else None),
                    hooks=hooks,
                    builtin=builtin,
                )
            )
        return sorted(infos, key=lambda i: (not i.builtin, i.name))


class HookResultError(TypeError):
    """A plugin's hook implementation returned a value of the wrong type: a bug in that plugin."""


def _typed(value: Any, expected: type[T], plugin: str | None, hook: str) -> T:
    if not isinstance(value, expected):
        raise HookResultError(
            f"plugin '{plugin}' returned {type(value).__name__} from {hook}, expected {expected.__name__}"
        )
    return value


def _findings(result: Any, plugin: str, hook: str) -> list[Finding]:
    """``result`` as a list of findings, or a ``HookResultError`` naming ``plugin``."""
    if result is None or (isinstance(result, list | tuple) and not result):
        return []  # no finding: no pydantic (validating a valid pack imports none)
    from agentpack.kernel.models import Finding

    if not isinstance(result, list | tuple) or not all(isinstance(f, Finding) for f in result):
        shown = type(result).__name__ if not isinstance(result, list | tuple) else "a list with other items"
        raise HookResultError(f"plugin '{plugin}' returned {shown} from {hook}, expected a list of Finding or None")
    return list(result)


def _with_plugin(item: T, plugin: str) -> T:
    if getattr(item, "plugin", None):
        return item
    if hasattr(item, "_replace"):
        replaced: T = item._replace(plugin=plugin)
        return replaced
    from dataclasses import replace

    return replace(item, plugin=plugin)  # type: ignore[type-var]  # a dataclass here: T has no dataclass bound


__all__ = ["DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "HookResultError", "Host", "PluginInfo", "collect_registrations"]
