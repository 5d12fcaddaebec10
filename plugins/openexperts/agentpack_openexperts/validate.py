"""Validation of an expert package: the rules of spec section 13 plus what a careful user expects.

Each rule has a stable code (see ``docs/openexperts.md``); errors halt loading at
runtime, warnings are logged and the package still runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import PathEscapeError
from agentpack.io.paths import check_relative
from agentpack.io.yamldoc import escape_pointer
from agentpack.io.yamlio import YamlDocument
from agentpack.kernel.models import Finding, Severity
from agentpack.kernel.schemas import SchemaStore

from . import effective
from .dotpath import PathSyntaxError, parse_path
from .durations import DurationError, parse_duration
from .model import Component, ExpertPackage, normalise_ref
from .registry import registered

if TYPE_CHECKING:
    from agentpack.kernel.host import Host

SPEC_MAJOR, SPEC_MINOR = 1, 0
KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
CHECKBOX = re.compile(r"^\s*[-*] \[[ xX]\] ", re.MULTILINE)
SCHEMAS = {
    "functions": ("function", "OEX202"),
    "processes": ("process", "OEX202"),
    "tools": ("tool", "OEX221"),
    "knowledge": ("knowledge", "OEX231"),
    "state": ("state", "OEX241"),
}


UNKNOWN_KEY = re.compile(r": unknown key '[^']*'$")
"""The message ``SchemaStore.validate`` gives a key that ``additionalProperties: false`` rejects."""


@cache
def schema_store() -> SchemaStore:
    """The plugin's bundled schemas, loaded once."""
    return SchemaStore.from_package("agentpack_openexperts", "schemas")


def schema_id(name: str) -> str:
    return f"https://agentpack.dev/schemas/openexperts/{name}.schema.json"


def invalid_patterns(data: Any, doc: YamlDocument, pointer: str = "") -> list[Finding]:
    """OEX224: a ``pattern`` in a tool's input or output shape that is not a regular expression. The key is
    not part of spec 1.0 (OEX203 says so); a value no JSON Schema runtime could compile is an error."""
    out: list[Finding] = []
    if isinstance(data, list):
        for i, item in enumerate(data):
            out += invalid_patterns(item, doc, f"{pointer}/{i}")
    elif isinstance(data, dict):
        for key, value in data.items():
            here = f"{pointer}/{escape_pointer(str(key))}"
            if key == "pattern" and isinstance(value, str):
                try:
                    re.compile(value)
                except re.error as exc:
                    message = f"{here}: pattern {value!r} is not a regular expression ({exc})"
                    out.append(Finding.error("OEX224", message, **doc.where(here)))
            else:
                out += invalid_patterns(value, doc, here)
    return out


def schema_findings(instance: Any, name: str, doc: YamlDocument, *, code: str) -> list[Finding]:
    """Schema errors as findings; unknown keys (later spec versions) are ``OEX102``/``OEX203`` warnings."""
    unknown_code = "OEX102" if name == "expert" else "OEX203"
    out = []
    for finding in schema_store().validate(schema_id(name), instance, document=doc, code=code):
        if UNKNOWN_KEY.search(finding.message):
            finding = finding.model_copy(
                update={
                    "code": unknown_code,
                    "severity": "warning",
                    "message": finding.message + " (not part of openexperts spec 1.0; ignored)",
                }
            )
        out.append(finding)
    return out


class Validator:
    def __init__(self, package: ExpertPackage, host: Host, strict: bool = False) -> None:
        self.pkg = package
        self.host = host
        self.strict = strict
        self.out: list[Finding] = list(package.findings)

    # -- helpers -----------------------------------------------------------------------------
    def add(self, severity: Severity, code: str, message: str, where: dict[str, Any], hint: str | None = None) -> None:
        if self.strict and severity == "warning" and code in ("OEX102", "OEX203", "OEX130"):
            severity = "error"
        self.out.append(Finding(severity=severity, code=code, message=message, hint=hint, **where))

    def mw(self, pointer: str = "") -> dict[str, Any]:
        return self.pkg.manifest_where(pointer)

    # -- entry ---------------------------------------------------------------------------------
    def run(self) -> list[Finding]:
        data = self.pkg.manifest.data
        if not isinstance(data, dict):
            return self.out
        self.out.extend(schema_findings(data, "expert", self.pkg.manifest, code="OEX100"))
        if self.strict:
            self.out = [f.model_copy(update={"severity": "error"}) if f.code == "OEX102" else f for f in self.out]
        for check in (
            self.manifest_fields,
            self.structure,
            self.components,
            self.triggers,
            self.references,
            self.policy,
            self.execution_and_delivery,
        ):
            try:
                check()
            except (TypeError, AttributeError, KeyError, ValueError):
                # The checks read what the schemas describe; a value of another type that one trips on is
                # an error the schema findings already report, so the package is invalid either way.
                if not any(f.severity == "error" for f in self.out):
                    raise  # a bug in a check, not a bad package
        return self.out

    # -- manifest --------------------------------------------------------------------------
    def manifest_fields(self) -> None:
        data = self.pkg.data
        spec = data.get("spec")
        if spec is not None:
            if not isinstance(spec, str):
                self.add(
                    "warning",
                    "OEX133",
                    f'spec should be a quoted string ("{spec}"), not a {type(spec).__name__}',
                    self.mw("/spec"),
                    hint=f'write spec: "{spec}"',
                )
            match = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:\.\d+)?", str(spec).strip())
            if not match or int(match.group(1)) != SPEC_MAJOR:
                self.add(
                    "error",
                    "OEX132",
                    f"spec version '{spec}' is not supported; this runtime implements "
                    f"openexperts {SPEC_MAJOR}.{SPEC_MINOR}",
                    self.mw("/spec"),
                )
            elif int(match.group(2) or 0) > SPEC_MINOR:
                self.add(
                    "warning",
                    "OEX131",
                    f"spec version '{spec}' is newer than {SPEC_MAJOR}.{SPEC_MINOR}; fields added later are ignored",
                    self.mw("/spec"),
                )
        version = data.get("version")
        if version is not None and not re.fullmatch(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?", str(version)):
            self.add("info", "OEX134", f"version '{version}' is not SemVer (MAJOR.MINOR.PATCH)", self.mw("/version"))
        requires = data.get("requires")
        if isinstance(requires, dict):
            for key in requires:
                if key != "tools":
                    self.add(
                        "info",
                        "OEX104",
                        f"requires.{key} is not defined by spec 1.0; ignored",
                        self.mw(f"/requires/{key}"),
                    )
            tools = self.pkg.required_tools
            for index, tool in enumerate(tools):
                if tool in tools[:index]:
                    self.add(
                        "warning", "OEX105", f"requires.tools lists '{tool}' twice", self.mw(f"/requires/tools/{index}")
                    )

    def structure(self) -> None:
        pkg = self.pkg
        if not (pkg.root / "README.md").is_file():
            self.add(
                "warning",
                "OEX130",
                "README.md is missing (the spec lists it as required; loading continues)",
                {"file": pkg.display_root, "line": None, "pointer": None},
                hint="add a README.md for human readers",
            )
        components = pkg.data.get("components")
        if not isinstance(components, dict):
            return
        if "orchestrator" not in components:
            self.add(
                "error",
                "OEX110",
                "components.orchestrator is missing; every package needs an orchestrator.md",
                self.mw("/components"),
            )
        if not pkg.of("persona"):
            self.add(
                "error",
                "OEX111",
                "no persona file: components.persona must list at least one existing file",
                self.mw("/components/persona" if "persona" in components else "/components"),
            )
        if not pkg.of("functions"):
            self.add(
                "error",
                "OEX112",
                "no function file: components.functions must list at least one existing file",
                self.mw("/components/functions" if "functions" in components else "/components"),
            )

    # -- components ------------------------------------------------------------------------
    def components(self) -> None:
        for kind, (name, code) in SCHEMAS.items():
            seen: dict[str, Component] = {}
            for component in self.pkg.of(kind):
                self.out.extend(schema_findings(component.meta, name, component.doc, code=code))
                if kind == "tools":
                    self.out.extend(invalid_patterns(component.meta, component.doc))
                if kind in ("functions", "processes", "tools") and component.name:
                    first = seen.setdefault(component.name, component)
                    if first is not component:
                        code_dup = {"functions": "OEX204", "processes": "OEX205", "tools": "OEX207"}[kind]
                        self.add(
                            "error",
                            code_dup,
                            f"{name} name '{component.name}' is also used by {first.path}",
                            component.where("/name"),
                        )
                    if not KEBAB.match(component.name) and kind != "tools":
                        self.add(
                            "info",
                            "OEX212",
                            f"{name} name '{component.name}' is not kebab-case",
                            component.where("/name"),
                        )
        for fn in self.pkg.of("functions"):
            if not fn.body.strip():
                self.add(
                    "warning",
                    "OEX208",
                    "function body is empty; it should carry instructions and rules",
                    {"file": fn.display, "line": fn.body_line, "pointer": None},
                )
        for proc in self.pkg.of("processes"):
            resumable = "scratchpad" in proc.meta or (proc.meta.get("execution") or {}).get("resume_from_execution_log")
            if resumable and not CHECKBOX.search(proc.body):
                self.add(
                    "warning",
                    "OEX209",
                    "resumable process has no '- [ ]' checklist steps; the agent cannot "
                    "tell which steps are done when resuming",
                    {"file": proc.display, "line": proc.body_line, "pointer": None},
                )
        for tool in self.pkg.of("tools"):
            ops = tool.meta.get("operations")
            seen_ops: set[str] = set()
            for index, op in enumerate(ops if isinstance(ops, list) else []):
                op_name = op.get("name") if isinstance(op, dict) else None
                if isinstance(op_name, str):
                    if op_name in seen_ops:
                        self.add(
                            "error",
                            "OEX222",
                            f"operation '{op_name}' is declared twice in tool '{tool.name}'",
                            tool.where(f"/operations/{index}/name"),
                        )
                    seen_ops.add(op_name)
            if tool.name and tool.name not in self.pkg.required_tools:
                self.add(
                    "warning",
                    "OEX223",
                    f"tool '{tool.name}' is declared in {tool.path} but not in requires.tools",
                    tool.where("/name"),
                )
        declared = set(self.pkg.tools())
        for index, required in enumerate(self.pkg.required_tools):
            if required not in declared:
                self.add(
                    "info",
                    "OEX407",
                    f"requires.tools names '{required}' but no tools/*.yaml declares it; its "
                    "operations are unknown (every call resolves through the policy default)",
                    self.mw(f"/requires/tools/{index}"),
                )

    # -- triggers ----------------------------------------------------------------------------
    def triggers(self) -> None:
        pkg = self.pkg
        processes = pkg.processes()
        names: set[str] = set()
        concurrency = pkg.section("concurrency")
        if isinstance(concurrency.get("key"), str):
            self.path_syntax(concurrency["key"], "/concurrency/key")
        presets = None
        for index, trig in enumerate(pkg.triggers):
            base = f"/triggers/{index}"
            name = trig.get("name")
            if isinstance(name, str):
                if name in names:
                    self.add("error", "OEX206", f"trigger name '{name}' is used twice", self.mw(f"{base}/name"))
                names.add(name)
            target = trig.get("process")
            if isinstance(target, str) and target not in processes:
                self.add(
                    "error",
                    "OEX300",
                    f"trigger '{name}' invokes process '{target}', which is not the name of "
                    f"any process in components.processes (known: {', '.join(sorted(processes)) or 'none'})",
                    self.mw(f"{base}/process"),
                )
            kind = trig.get("type")
            if kind == "cron":
                self.cron(trig, base)
            else:
                for key in ("expr", "tz"):
                    if key in trig:
                        self.add(
                            "warning",
                            "OEX305",
                            f"'{key}' only applies to cron triggers; this one is '{kind}'",
                            self.mw(f"{base}/{key}"),
                        )
            eff = effective.trigger(pkg, index)
            if eff["concurrency"].value == "serial_per_key" and not eff["concurrency_key"].value:
                self.add(
                    "error",
                    "OEX306",
                    f"trigger '{name}' runs serial_per_key but has no concurrency_key and "
                    "the package sets no concurrency.key",
                    self.mw(base),
                    hint="add concurrency_key: <payload path> to the trigger or concurrency.key to the package",
                )
            for key in ("dedupe_key", "concurrency_key"):
                if isinstance(trig.get(key), str):
                    self.path_syntax(trig[key], f"{base}/{key}")
            mapping = trig.get("payload_mapping")
            if isinstance(mapping, dict):
                proc = processes.get(target) if isinstance(target, str) else None
                inputs = {i.get("name") for i in proc.list_of("inputs") if isinstance(i, dict)} if proc else None
                for input_name, path in mapping.items():
                    if isinstance(path, str):
                        self.path_syntax(path, f"{base}/payload_mapping/{input_name}")
                    if inputs is not None and input_name not in inputs:
                        self.add(
                            "warning",
                            "OEX307",
                            f"payload_mapping key '{input_name}' is not an input of process "
                            f"'{target}' (inputs: {', '.join(sorted(map(str, inputs))) or 'none'})",
                            self.mw(f"{base}/payload_mapping/{input_name}"),
                        )
            required = trig.get("requires_tool")
            if isinstance(required, str) and required not in pkg.required_tools:
                self.add(
                    "warning",
                    "OEX309",
                    f"trigger '{name}' requires tool '{required}', which is not in requires.tools",
                    self.mw(f"{base}/requires_tool"),
                )
            if isinstance(trig.get("preset"), str):
                presets = set(registered(self.host, "preset")) if presets is None else presets
                if trig["preset"] not in presets:
                    self.add(
                        "warning",
                        "OEX311",
                        f"preset '{trig['preset']}' is not supported by this runtime "
                        f"(supported: {', '.join(sorted(presets)) or 'none'}); the raw payload is used",
                        self.mw(f"{base}/preset"),
                    )
        for proc in pkg.of("processes"):
            trig_name = proc.meta.get("trigger")
            if not isinstance(trig_name, str):
                continue
            if trig_name not in names:
                self.add(
                    "warning",
                    "OEX301",
                    f"process trigger '{trig_name}' does not match any triggers[].name in expert.yaml",
                    proc.where("/trigger"),
                )
                continue
            owner = next(t for t in pkg.triggers if t.get("name") == trig_name)
            if owner.get("process") != proc.name:
                self.add(
                    "warning",
                    "OEX310",
                    f"process '{proc.name}' names trigger '{trig_name}', but that trigger "
                    f"invokes '{owner.get('process')}'",
                    proc.where("/trigger"),
                )

    def cron(self, trig: dict[str, Any], base: str) -> None:
        from croniter import croniter

        expr = trig.get("expr")
        if expr is None:
            self.add("error", "OEX303", f"cron trigger '{trig.get('name')}' has no 'expr'", self.mw(base))
        elif isinstance(expr, str):
            fields = expr.split()
            valid = len(fields) in (5, 6) and croniter.is_valid(expr, second_at_beginning=len(fields) == 6)
            if not valid:
                self.add(
                    "error",
                    "OEX302",
                    f"'{expr}' is not a valid cron expression (5 fields, or 6 with seconds first)",
                    self.mw(f"{base}/expr"),
                )
        tz = trig.get("tz")
        if isinstance(tz, str) and not valid_timezone(tz):
            self.add(
                "error",
                "OEX304",
                f"'{tz}' is not an IANA time zone (e.g. 'Australia/Sydney', 'UTC')",
                self.mw(f"{base}/tz"),
            )

    def path_syntax(self, path: str, pointer: str) -> None:
        try:
            parse_path(path)
        except PathSyntaxError as exc:
            self.add("error", "OEX308", str(exc), self.mw(pointer))

    # -- cross references --------------------------------------------------------------------
    def references(self) -> None:
        pkg = self.pkg
        required = set(pkg.required_tools)
        functions = pkg.functions()
        knowledge = set(pkg.knowledge_paths())
        context_files = knowledge | {c.path for c in pkg.of("state")}
        for component in pkg.of("functions") + pkg.of("processes"):
            for index, tool in enumerate(component.list_of("tools")):
                if isinstance(tool, str) and tool not in required:
                    self.add(
                        "error",
                        "OEX401",
                        f"tool '{tool}' is used by {component.path} but not declared in requires.tools",
                        component.where(f"/tools/{index}"),
                        hint=f"add '{tool}' to requires.tools in expert.yaml",
                    )
        for fn in pkg.of("functions"):
            for index, ref in enumerate(fn.list_of("knowledge")):
                path = self.pack_path(ref, fn, f"/knowledge/{index}")
                if path is not None and path not in knowledge:
                    self.add(
                        "warning",
                        "OEX402",
                        f"knowledge '{ref}' is not listed in components.knowledge",
                        fn.where(f"/knowledge/{index}"),
                    )
        for proc in pkg.of("processes"):
            for index, name in enumerate(proc.list_of("functions")):
                if isinstance(name, str) and name not in functions:
                    self.add(
                        "warning",
                        "OEX400",
                        f"function '{name}' is not the name of any function in components.functions",
                        proc.where(f"/functions/{index}"),
                    )
            for index, ref in enumerate(proc.list_of("context")):
                path = self.pack_path(ref, proc, f"/context/{index}")
                if path is not None and path not in context_files:
                    self.add(
                        "warning",
                        "OEX406",
                        f"context file '{ref}' is not a knowledge or state file listed in components",
                        proc.where(f"/context/{index}"),
                    )
            pad = proc.meta.get("scratchpad")
            if isinstance(pad, str):
                path = self.pack_path(pad, proc, "/scratchpad")
                if path is not None and not path.startswith("scratch/"):
                    self.add("warning", "OEX409", f"scratchpad '{pad}' is outside scratch/", proc.where("/scratchpad"))
                inputs = {i.get("name") for i in proc.list_of("inputs") if isinstance(i, dict)}
                for placeholder in PLACEHOLDER.findall(pad):
                    if placeholder not in inputs:
                        self.add(
                            "warning",
                            "OEX410",
                            f"scratchpad placeholder '{{{placeholder}}}' is not a process input; it will be left as is",
                            proc.where("/scratchpad"),
                        )

    def pack_path(self, ref: Any, component: Component, pointer: str) -> str | None:
        if not isinstance(ref, str):
            return None
        try:
            return check_relative(normalise_ref(ref)).as_posix()
        except PathEscapeError as exc:
            self.add("error", "OEX408", f"{exc.message}", component.where(pointer))
            return None

    # -- policy --------------------------------------------------------------------------------
    def policy(self) -> None:
        pkg = self.pkg
        policy = pkg.data.get("policy")
        if policy is None:
            self.add("info", "OEX600", "no policy block: every tool operation defaults to 'confirm'", self.mw())
            return
        approval = policy.get("approval") if isinstance(policy, dict) else None
        overrides = approval.get("overrides") if isinstance(approval, dict) else None
        if not isinstance(overrides, dict):
            return
        for key in overrides:
            pointer = f"/policy/approval/overrides/{key}"
            tool, dot, op = str(key).partition(".")
            if not dot or not tool or not op or "." in op:
                self.add(
                    "warning",
                    "OEX403",
                    f"override key '{key}' is not of the form tool_name.operation_name",
                    self.mw(pointer),
                )
            elif tool not in pkg.required_tools:
                self.add(
                    "warning",
                    "OEX404",
                    f"override '{key}' names tool '{tool}', which is not in requires.tools",
                    self.mw(pointer),
                )
            elif op not in pkg.operations(tool):
                declared = ", ".join(sorted(pkg.operations(tool))) or "none (no tools/*.yaml declares it)"
                self.add(
                    "warning",
                    "OEX405",
                    f"override '{key}': tool '{tool}' declares no operation '{op}' (operations: {declared})",
                    self.mw(pointer),
                )

    # -- execution, delivery, durations ---------------------------------------------------------
    def execution_and_delivery(self) -> None:
        pkg = self.pkg
        layers: list[tuple[dict[str, Any], Callable[[str], dict[str, Any]], str]] = [(pkg.data, self.mw, "expert.yaml")]
        layers += [(p.meta, p.where, p.path) for p in pkg.of("processes")]
        for data, where, _ in layers:
            for pointer in (
                "/execution/timeout",
                "/execution/retry/delay",
                "/delivery/sla",
                "/policy/approval/timeout",
            ):
                found, value = _at(data, pointer)
                if found and isinstance(value, str):
                    try:
                        parse_duration(value)
                    except DurationError as exc:
                        self.add("error", "OEX500", str(exc), where(pointer))
        channels = {"main"} | set(registered(self.host, "channel"))
        for data, where, _ in layers:
            for pointer in ("/delivery/channel", "/policy/escalation/channel"):
                found, value = _at(data, pointer)
                if found and isinstance(value, str) and value not in channels:
                    self.add(
                        "error",
                        "OEX510",
                        f"unknown delivery channel '{value}' (known: {', '.join(sorted(channels))})",
                        where(pointer),
                    )
        self.execution_rules(None, self.mw)
        for proc in pkg.of("processes"):
            self.execution_rules(proc, proc.where)
            de = proc.meta.get("delivery")
            if isinstance(de, dict) and "sla_breach" in de and "sla" not in de:
                self.add(
                    "info",
                    "OEX511",
                    "sla_breach is set but the process has no sla; it has no effect",
                    proc.where("/delivery/sla_breach"),
                )
        if "execution" not in pkg.data and not any("execution" in p.meta for p in pkg.of("processes")):
            self.add(
                "info",
                "OEX503",
                "no execution policy is declared; failures escalate by default but authors should state one",
                self.mw(),
            )

    def execution_rules(self, proc: Component | None, where: Callable[[str], dict[str, Any]]) -> None:
        ex = effective.execution(self.pkg, proc)
        own = (proc.meta if proc else self.pkg.data).get("execution")
        if proc is not None and not isinstance(own, dict):
            return  # nothing of its own: the package-level check covers it
        who = f"process '{proc.name}'" if proc else "the package"
        if ex["resume_from_execution_log"].value is True and ex["idempotent"].value is True:
            self.add(
                "error",
                "OEX501",
                f"{who}: resume_from_execution_log requires idempotent: false",
                where(
                    "/execution/resume_from_execution_log"
                    if isinstance(own, dict) and "resume_from_execution_log" in own
                    else "/execution/idempotent"
                ),
            )
        attempts = ex["retry.max_attempts"].value
        if (
            isinstance(attempts, int)
            and attempts > 1
            and ex["idempotent"].value is False
            and not ex["resume_from_execution_log"].value
        ):
            self.add(
                "warning",
                "OEX502",
                f"{who} retries up to {attempts} times but is neither idempotent nor "
                "resumed from the execution log; completed side effects are protected only by the runtime's "
                "tool-call journal",
                where("/execution/retry/max_attempts" if isinstance(own, dict) else ""),
            )


def _at(data: Any, pointer: str) -> tuple[bool, Any]:
    for part in pointer.strip("/").split("/"):
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def valid_timezone(name: str) -> bool:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
        return True
    except (ZoneInfoNotFoundError, ValueError):
        return False


def validate_package(package: ExpertPackage, host: Host, *, strict: bool = False) -> list[Finding]:
    """Findings for ``package``; ``host`` supplies the channels and presets plugins registered."""
    return Validator(package, host, strict).run()
