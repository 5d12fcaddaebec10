"""The loaded form of an expert package: the manifest and every component, with line maps kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.yamlio import YamlDocument
from agentpack.kernel.models import Finding

COMPONENT_KINDS = ("orchestrator", "persona", "functions", "processes", "tools", "knowledge", "state")


@dataclass
class Component:
    """One component file: its pack-relative path, parsed frontmatter (or tool YAML) and body."""

    kind: str
    path: str
    file: Path
    display: str
    doc: YamlDocument
    body: str = ""
    body_line: int = 1
    text: str = ""
    """The whole file as read (Markdown components), so nothing reads it again (state templates)."""

    @property
    def meta(self) -> dict[str, Any]:
        return self.doc.data if isinstance(self.doc.data, dict) else {}

    @property
    def name(self) -> str | None:
        value = self.meta.get("name")
        return value if isinstance(value, str) and value else None

    def where(self, pointer: str = "") -> dict[str, Any]:
        return {"file": self.display, "line": self.doc.line_of(pointer) or 1, "pointer": pointer or None}

    def list_of(self, key: str) -> list[Any]:
        value = self.meta.get(key)
        return value if isinstance(value, list) else []


@dataclass
class ExpertPackage:
    """An expert package as read from disk. ``findings`` hold what could not be read."""

    root: Path
    display_root: str
    manifest: YamlDocument
    components: dict[str, list[Component]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    _named: dict[str, dict[str, Component]] = field(default_factory=dict, repr=False)

    # -- manifest views ------------------------------------------------------------------
    @property
    def data(self) -> dict[str, Any]:
        return self.manifest.data if isinstance(self.manifest.data, dict) else {}

    @property
    def name(self) -> str | None:
        value = self.data.get("name")
        return value if isinstance(value, str) else None

    @property
    def version(self) -> str | None:
        value = self.data.get("version")
        return None if value is None else str(value)

    def section(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        return value if isinstance(value, dict) else {}

    @property
    def required_tools(self) -> list[str]:
        tools = self.section("requires").get("tools")
        return [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else []

    @property
    def triggers(self) -> list[dict[str, Any]]:
        value = self.data.get("triggers")
        return [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []

    def manifest_where(self, pointer: str = "") -> dict[str, Any]:
        return {"file": self.manifest.file, "line": self.manifest.line_of(pointer) or 1, "pointer": pointer or None}

    # -- components ---------------------------------------------------------------------
    def of(self, kind: str) -> list[Component]:
        return self.components.get(kind, [])

    @property
    def orchestrator(self) -> Component | None:
        found = self.of("orchestrator")
        return found[0] if found else None

    def by_name(self, kind: str) -> dict[str, Component]:
        """Components of ``kind`` by ``name`` (first wins; duplicates are a validation error).

        Memoised: a loaded package is not changed afterwards."""
        if kind not in self._named:
            named: dict[str, Component] = {}
            for component in self.of(kind):
                if component.name and component.name not in named:
                    named[component.name] = component
            self._named[kind] = named
        return self._named[kind]

    def functions(self) -> dict[str, Component]:
        return self.by_name("functions")

    def processes(self) -> dict[str, Component]:
        return self.by_name("processes")

    def tools(self) -> dict[str, Component]:
        return self.by_name("tools")

    def knowledge_paths(self) -> dict[str, Component]:
        return {c.path: c for c in self.of("knowledge")}

    def process(self, name: str) -> Component:
        processes = self.processes()
        if name not in processes:
            known = ", ".join(sorted(processes)) or "none"
            raise AgentpackError(f"no process named '{name}' in {self.display_root} (processes: {known})")
        return processes[name]

    def trigger(self, name: str) -> dict[str, Any]:
        for trigger in self.triggers:
            if trigger.get("name") == name:
                return trigger
        known = ", ".join(str(t.get("name")) for t in self.triggers) or "none"
        raise AgentpackError(f"no trigger named '{name}' in {self.display_root} (triggers: {known})")

    def operations(self, tool: str) -> dict[str, dict[str, Any]]:
        component = self.tools().get(tool)
        if component is None:
            return {}
        ops = component.meta.get("operations")
        return (
            {op["name"]: op for op in ops if isinstance(op, dict) and isinstance(op.get("name"), str)}
            if isinstance(ops, list)
            else {}
        )

    def knowledge_type(self, component: Component) -> str:
        value = component.meta.get("type")
        return value if value in ("static", "dynamic", "private") else "static"


def normalise_ref(ref: str) -> str:
    """``./knowledge/x.md`` -> ``knowledge/x.md`` (references are package-relative)."""
    while ref.startswith("./"):
        ref = ref[2:]
    return ref
