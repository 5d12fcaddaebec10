"""The ECP-MCP tools (spec sections 10 and 11.3): expert_query, expert_refresh, expert_run_evals, expert_status.

The spec's dotted names (``expert.query`` ...) still answer in ``tools/call`` for one release: hosts
refuse tool names outside ``^[a-zA-Z0-9_-]{1,64}$``.

Registered when ``agentpack mcp serve --pack P`` names at least one Expert
Context Pack; only those packs are served. With several packs, each tool takes
a ``pack`` argument (the skill name or the path as given). Each tool returns
the JSON of its CLI twin, built by the same function: ``expert_query`` the
spec 6.3 response (the ``response`` of ``agentpack query --json``, from
``query.answer``), ``expert_refresh`` and ``expert_status`` the envelopes of
``agentpack ecp refresh/status --json``, ``expert_run_evals`` the report of
``agentpack eval --json`` (``payloads.py``). ``expert_run_evals`` and the eval gate of
``expert_refresh`` are recorded in the run store, as their CLI twins are (``runlog.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import READ_ONLY, McpContent, McpContext, McpResource, McpTool, SkillTree, ToolHints
from agentpack.results.runs import StoreError

from .pack.cache import PackCache
from .pack.layout import find_pack_root
from .pack.manifest import ExpertPack, load_pack
from .pack.revisions import current_revisions
from .pack.spec import REVISION_IDENTITY
from .payloads import eval_payload, refresh_payload, status_payload
from .query.answer import answer
from .runlog import record_evals, record_gate

log = logging.getLogger(__name__)
Progress = Callable[..., None]
"""``report(done, total, message)``: progress notifications for a client that asked for them."""

STRINGS = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
ENVELOPE = {
    "type": "object",
    "required": ["schema_version", "command", "ok"],
    "properties": {"schema_version": {"const": 1}, "command": {"type": "string"}, "ok": {"type": "boolean"}},
}
CITATION = {
    "type": "object",
    "required": ["source_id", "source_type", "uri", "revision", "retrieved_at"],
    "properties": {
        "source_id": {"type": "string"},
        "source_type": {"type": "string"},
        "uri": {"type": "string"},
        "revision": {"type": "object"},
        "artifact_path": {"type": "string"},
        "chunk_id": {"type": "string"},
        "retrieved_at": {"type": "string"},
        "loc": {"type": "object"},
        "chunk_hash": {"type": "string"},
    },
}
QUERY_OUTPUT = {
    "type": "object",
    "required": ["answer", "as_of", "citations"],
    "properties": {
        "answer": {"type": "string"},
        "as_of": {"type": "object"},
        "citations": {"type": "array", "items": CITATION},
        "chunks": {"type": "array", "items": {"type": "object", "required": ["snippet", "citation"]}},
        "synthesis": {"type": "object"},
    },
}
EVAL_OUTPUT = {
    "type": "object",
    "required": ["schema_version", "command", "ok", "evaluations"],
    "properties": {"ok": {"type": "boolean"}, "evaluations": {"type": "array"}},
}


def pack_roots(packs: list[Path]) -> list[Path]:
    """The distinct Expert Context Packs among ``packs`` (paths given to ``mcp serve --pack``)."""
    roots: list[Path] = []
    for path in packs:
        root = find_pack_root(path)
        if root is not None and root.resolve() not in roots:
            roots.append(root.resolve())
    return roots


def _schema(properties: dict[str, Any], required: list[str], multi: bool) -> dict[str, Any]:
    props = dict(properties)
    if multi:
        props["pack"] = {"type": "string", "description": "Which served pack: its skill name or path."}
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


class Tools:
    """The handlers, bound to the packs the server was started with."""

    def __init__(self, roots: list[Path], recording: Any = None) -> None:
        self.roots = roots
        self.packs = PackCache()
        self.recording = recording
        """``mcp serve --store/--no-record/--tag`` for the runs these tools record."""

    def root(self, arguments: dict[str, Any]) -> Path:
        wanted = arguments.get("pack")
        if wanted is None:
            if len(self.roots) == 1:
                return self.roots[0]
            raise AgentpackError(
                "several packs are served: name one with the 'pack' argument ("
                + ", ".join(r.name for r in self.roots)
                + ")"
            )
        for root in self.roots:
            if wanted in (root.name, str(root)) or Path(wanted).resolve() == root:
                return root
        raise AgentpackError(f"pack '{wanted}' is not served here; served: " + ", ".join(r.name for r in self.roots))

    def query(self, arguments: dict[str, Any]) -> dict[str, Any]:
        pack = self.packs.load(self.root(arguments))
        if arguments.get("as_of"):
            _check_as_of(pack, arguments["as_of"])
        request = {
            "question": arguments["question"],
            "top_k": arguments.get("top_k", 5),
            "mode": arguments.get("mode") or "ephemeral",
            "filters": arguments.get("filters") or {},
        }
        for key in ("query_vector", "query_embedding", "explain"):
            if key in arguments:
                request[key] = arguments[key]
        return answer(pack, request, {"actor": "service:mcp", "synthesis": arguments.get("synthesis")})

    def refresh(self, arguments: dict[str, Any], report: Progress = lambda *_: None) -> dict[str, Any]:
        root = self.root(arguments)
        report(0, 2, f"refreshing {root.name}")
        gate: list[Any] = []
        payload = refresh_payload(
            root,
            dry_run=bool(arguments.get("dry_run")),
            rebuild=bool(arguments.get("rebuild")),
            no_evals=bool(arguments.get("no_evals")),
            who="service:mcp",
            on_evals=gate.append,
        )
        if gate:
            try:
                record_gate(gate[0], root, payload, self.recording)
            except StoreError as exc:
                log.warning("expert_refresh: the eval gate was not recorded: %s", exc.message)
        report(2, 2, "refreshed" if payload.get("ok") else "refresh failed")
        return payload

    def run_evals(self, arguments: dict[str, Any], report: Progress = lambda *_: None) -> dict[str, Any]:
        suites = arguments.get("suite_id")
        suite_ids = [suites] if isinstance(suites, str) else list(suites or [])
        root = self.root(arguments)
        report(0, 2, f"running the evals of {root.name}")
        payload = eval_payload(root, suite_ids or None)
        report(1, 2, "recording the run")
        record_evals(payload, root, suite_ids or None, self.recording)
        report(2, 2, "evaluated")
        return payload

    def status(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return status_payload(self.root(arguments))


def _check_as_of(pack: ExpertPack, as_of: dict[str, Any]) -> None:
    """Only the published state is served: a requested ``as_of`` must name it."""
    sources = as_of.get("sources")
    wanted = sources if isinstance(sources, list) else [as_of]
    current = current_revisions(pack.manifest)
    for item in wanted:
        if not isinstance(item, dict) or "source_id" not in item:
            continue
        sid = item["source_id"]
        have = current.get(sid)
        if have is None:
            raise AgentpackError(f"as_of names source '{sid}', which this pack does not have")
        asked = {k: v for k, v in (item.get("revision") or {}).items() if k in REVISION_IDENTITY}
        mismatch = {k: v for k, v in asked.items() if have.get(k) != v}
        if mismatch:
            raise AgentpackError(
                f"as_of asks for source '{sid}' at {mismatch}, but the pack serves "
                f"{ {k: have.get(k) for k in mismatch} }; only the published state is served"
            )


def register_tools(register: Callable[[McpTool], None], context: McpContext) -> None:
    """Register the ECP tools for the ECP packs in ``context.packs`` (none when there is none)."""
    roots = pack_roots(list(context.packs))
    if not roots:
        return
    tools = Tools(roots, context.recording)
    multi = len(roots) > 1
    names = ", ".join(r.name for r in roots)
    query_props = {
        "question": {"type": "string", "minLength": 1, "description": "The question to answer."},
        "mode": {"type": "string", "description": "ephemeral, persistent, summarized; or keyword, fts, vector, hybrid"},
        "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many chunks to retrieve."},
        "filters": {
            "type": "object",
            "properties": {"source_id": STRINGS, "path_prefix": STRINGS},
            "description": "Only material from these sources (source_id) or under these paths (path_prefix).",
        },
        "as_of": {"type": "object", "description": "Must name the published revisions (the only state served)."},
        "explain": {"type": "boolean", "description": "Give each chunk the features that ranked it."},
        "query_vector": {"type": ["array", "object"], "description": "A query vector for a vector index."},
        "query_embedding": {
            "type": "object",
            "properties": {"model": {"type": "string"}, "dimensions": {"type": "integer"}},
            "description": "The model and dimensions that produced query_vector.",
        },
        "synthesis": {
            "enum": ["auto", "local", "llm"],
            "description": "How the answer is written: from the chunks (local), by a model (llm), or as the pack says.",
        },
    }
    flag_help = {
        "dry_run": "Report what would change; publish nothing.",
        "rebuild": "Rebuild every index from scratch instead of applying the changes.",
        "no_evals": "Skip the eval gate before publishing.",
    }
    flags = {k: {"type": "boolean", "description": text} for k, text in flag_help.items()}
    register(
        McpTool(
            name="expert_query",
            aliases=("expert.query",),
            title="Ask the expert",
            description=f"Answer a question from the expert context ({names}) with citations and as_of.",
            input_schema=_schema(query_props, ["question"], multi),
            output_schema=QUERY_OUTPUT,
            handler=tools.query,
            hints=READ_ONLY,
        )
    )
    register(
        McpTool(
            name="expert_refresh",
            aliases=("expert.refresh",),
            title="Refresh the expert",
            description="Refresh the indexes from the sources, gated by the evals and the maintenance "
            "policy (same JSON as 'agentpack ecp refresh --json').",
            input_schema=_schema(flags, [], multi),
            output_schema=ENVELOPE,
            handler=tools.refresh,
            progress=True,
            # publishes new index revisions (the old ones stay as backups) from sources that may be remote
            hints=ToolHints(read_only=False, destructive=False, idempotent=True, open_world=True),
        )
    )
    register(
        McpTool(
            name="expert_run_evals",
            aliases=("expert.run_evals",),
            title="Run the expert's evals",
            description="Run the pack's eval suites (same JSON as 'agentpack eval --json').",
            input_schema=_schema({"suite_id": {**STRINGS, "description": "Only these suites."}}, [], multi),
            output_schema=EVAL_OUTPUT,
            handler=tools.run_evals,
            progress=True,
            hints=READ_ONLY,
        )
    )
    register(
        McpTool(
            name="expert_status",
            aliases=("expert.status",),
            title="Expert status",
            description="Sources and revisions, index age and staleness, last refresh and last eval "
            "results (same JSON as 'agentpack ecp status --json').",
            input_schema=_schema({}, [], multi),
            output_schema=ENVELOPE,
            handler=tools.status,
            hints=READ_ONLY,
        )
    )


def content(context: McpContext) -> list[McpContent]:
    """For each served pack: its skill (the pack root, less what a package of it leaves out and what
    its ``.gitignore`` names: runtime state such as logs), and its summaries and filesystem sources'
    files as resources."""
    found = []
    for root in pack_roots(list(context.packs)):
        covers = tuple(Path(p) for p in context.packs if (find_pack_root(Path(p)) or Path()).resolve() == root)
        found.append(
            McpContent(
                name=f"ecp {root}",
                covers=covers,
                skills=(SkillTree(root=root, exclude=_ignored(root)),),
                resources=tuple(_resources(root)),
            )
        )
    return found


def _ignored(root: Path) -> Callable[[str], bool]:
    """What a package of the pack leaves out (``ecp pack``: logs, staging, backups, secrets files) and
    what the pack's ``.gitignore`` names, as a matcher of pack-relative paths: not part of the skill."""
    from .packaging.package import DEFAULT_EXCLUDES, exclude_spec

    ignore = root / ".gitignore"
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.is_file() else []
    spec = exclude_spec([*DEFAULT_EXCLUDES, *lines])
    return spec.match_file


def _resources(root: Path) -> list[McpResource]:
    """The summaries and the files of the filesystem sources in scope, as ``ecp://<pack>/<path>``."""
    from agentpack.io.paths import resolve_under

    from .sources.scope import Scope

    try:
        manifest = load_pack(root).manifest
    except AgentpackError as exc:
        log.warning("pack %s offers no resources over MCP: %s", root, exc)
        return []
    found: list[McpResource] = []

    def offer(relative: str, description: str) -> None:
        try:
            path = resolve_under(root, relative, must_exist=True)
        except AgentpackError:
            return
        if path.is_file():
            read = path.read_bytes
            found.append(McpResource(f"ecp://{root.name}/{relative}", relative, read, description))

    context = manifest.get("context") if isinstance(manifest.get("context"), dict) else None
    artifacts = (context or {}).get("artifacts")
    for summary in (artifacts.get("summaries") if isinstance(artifacts, dict) else None) or []:
        if isinstance(summary, dict) and isinstance(summary.get("path"), str):
            offer(summary["path"], f"summary {summary.get('id', '')} of the expert {root.name}".replace("  ", " "))
    for source in manifest.get("sources") or []:
        if not isinstance(source, dict) or source.get("type") != "filesystem" or not isinstance(source.get("uri"), str):
            continue
        scope_data = (source.get("scope") if isinstance(source.get("scope"), dict) else None) or {}
        scope = Scope(scope_data.get("include"), scope_data.get("exclude"))
        try:
            base = resolve_under(root, source["uri"], must_exist=True)
        except AgentpackError:
            continue
        for path in sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink()):
            relative = path.relative_to(base).as_posix()
            if scope.matches(relative):
                offer(f"{source['uri'].rstrip('/')}/{relative}", f"source {source.get('source_id')}: {relative}")
    return found
