"""From a schema-valid YAML document to a ``Manifest``: graders configured, datasets read, paths resolved, the
checks a schema cannot do as findings (``ARP1xx``); ``early_target`` reads the target alone."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import PathEscapeError
from agentpack.io.jsonio import JsonError, loads
from agentpack.io.paths import resolve_under
from agentpack.io.yamlio import YamlDocument, join_pointer

from .. import schema_store
from ..env import PID_NAMESPACE, TIMEOUT, described, getenv
from .model import (
    DEFAULT_STEP_TIMEOUT,
    SECONDS_LIMIT,
    SECONDS_RULE,
    GraderSpec,
    Manifest,
    Scenario,
    Step,
    Target,
    display_path,
    is_url,
    new_finding,
    parse_seconds,
)

if TYPE_CHECKING:  # the rest loads after ``rpc run`` has started the agent (see ``early_target``)
    from agentpack.kernel.models import Finding
    from agentpack.kernel.schemas import SchemaStore

    from ..graders.base import GraderType


class Builder:
    def __init__(self, doc: YamlDocument, root: Path, graders: dict[str, GraderType]) -> None:
        self.doc = doc
        self.root = root
        self.graders = graders
        self.findings: list[Finding] = []
        self.entry_stores: dict[str, tuple[SchemaStore, str]] = {}

    def error(self, code: str, message: str, pointer: str, **extra: Any) -> None:
        self.findings.append(new_finding("error", code, message, **self.doc.where(pointer), **extra))

    def warning(self, code: str, message: str, pointer: str, **extra: Any) -> None:
        self.findings.append(new_finding("warning", code, message, **self.doc.where(pointer), **extra))

    def json_values(self, value: Any, pointer: str) -> bool:
        """Whether ``value`` holds only what JSON can carry; each YAML timestamp or binary is an error (``ARP108``)."""
        ok = True
        for where, kind in _non_json(value, pointer):
            ok = False
            self.error("ARP108", f"a YAML {kind} is not a JSON value; quote it to send it as text", where)
        return ok

    # -- pieces ------------------------------------------------------------------------
    def grader(self, spec: dict[str, Any], pointer: str) -> GraderSpec | None:
        from ..graders.base import GraderConfigError

        if not self.json_values(spec, pointer):  # the entry goes into reports, which are JSON
            return None
        kind = spec["type"]
        gtype = self.graders.get(kind)
        if gtype is None:
            self.error(
                "ARP103",
                f"unknown grader type '{kind}'; available: {', '.join(sorted(self.graders))}",
                join_pointer(pointer, "type"),
            )
            return None
        if gtype.schema is not None:
            entry = self.entry_stores.get(kind)
            if entry is None:
                entry = self.entry_stores[kind] = schema_store.entry_store(kind, gtype.schema)
            store, schema_id = entry
            found = store.validate(schema_id, spec, code="ARP104")
            for finding in found:  # relative to the entry: say which grader, point into the manifest
                relative = finding.pointer or ""
                message = finding.message.removeprefix(f"{relative or '/'}: ")
                self.error("ARP104", f"{kind} grader: {message}", pointer + relative)
            if found:
                return None
        try:
            instance = gtype.factory(spec)
        except GraderConfigError as exc:
            self.error("ARP104", f"{kind} grader: {exc}", join_pointer(pointer, exc.key) if exc.key else pointer)
            return None
        return GraderSpec(type=kind, config=spec, pointer=pointer, grader=instance)

    def step(self, data: dict[str, Any], pointer: str, index: int) -> Step:
        graders = []
        for g_index, spec in enumerate(data.get("graders") or []):
            built = self.grader(spec, join_pointer(join_pointer(pointer, "graders"), g_index))
            if built is not None:
                graders.append(built)
        return Step(
            index=index,
            input=data["input"],
            graders=graders,
            timeout=data.get("timeout"),
            expect_status=data.get("expect_status"),
            name=data.get("name"),
            line=self.doc.line_of(pointer),
        )

    def dataset(self, spec: dict[str, Any], pointer: str, first: int) -> list[Step]:
        import csv

        where = join_pointer(pointer, "source")
        try:
            path = resolve_under(self.root, spec["source"])
        except PathEscapeError as exc:
            self.error("ARP105", f"dataset source {exc.message}", where)
            return []
        if not path.is_file():
            self.error("ARP102", f"dataset file not found: {spec['source']} (looked in {path.parent})", where)
            return []
        shown = display_path(path)
        in_col, out_col = spec.get("input_column", "input"), spec.get("output_column", "output")
        condition = spec.get("condition", "equals")
        rows: list[tuple[int, dict[str, Any]]] = []
        try:
            with path.open(encoding="utf-8-sig", newline="") as handle:
                if spec["type"] == "csv":
                    reader = csv.DictReader(handle)
                    if reader.fieldnames is None or in_col not in reader.fieldnames:
                        self.error(
                            "ARP102",
                            f"dataset {spec['source']} has no column '{in_col}' "
                            f"(columns: {', '.join(reader.fieldnames or []) or 'none'})",
                            join_pointer(pointer, "input_column"),
                        )
                        return []
                    rows = [(reader.line_num, row) for row in reader]
                else:
                    for number, line in enumerate(handle, 1):
                        if not line.strip():
                            continue
                        try:
                            row = loads(line)
                        except JsonError as exc:
                            detail = exc.message.removeprefix("not valid JSON: ")
                            detail += f" at column {exc.column}" if exc.column else ""
                            self.findings.append(
                                new_finding("error", "ARP102", f"invalid JSON line: {detail}", file=shown, line=number)
                            )
                            continue
                        if not isinstance(row, dict):
                            self.findings.append(
                                new_finding(
                                    "error", "ARP102", "each JSONL line must be an object", file=shown, line=number
                                )
                            )
                            continue
                        rows.append((number, row))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            self.error("ARP102", f"cannot read dataset {spec['source']}: {exc}", where)
            return []
        steps = []
        for offset, (number, row) in enumerate(rows):
            text = row.get(in_col)
            if not isinstance(text, str):
                self.findings.append(
                    new_finding("error", "ARP102", f"row has no string '{in_col}' value", file=shown, line=number)
                )
                continue
            expected = row.get(out_col)
            graders = []
            if expected not in (None, ""):
                spec_g = {
                    "type": "text_match",
                    "field": "public_output",
                    "condition": condition,
                    "value": str(expected),
                }
                graders.append(GraderSpec("text_match", spec_g, pointer, self.graders["text_match"].factory(spec_g)))
            steps.append(
                Step(index=first + offset, input=text, graders=graders, name=f"{path.name}:{number}", line=number)
            )
        return steps

    def target(self, data: dict[str, Any]) -> Target | None:
        raw = data["target"]
        shell = bool(data.get("shell", False))
        target = Target(shell=shell)
        if isinstance(raw, str) and is_url(raw.strip()):
            target.url = raw.strip()
        elif isinstance(raw, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", raw.strip()):
            scheme = raw.strip().split(":", 1)[0]
            self.error(
                "ARP106",
                f"target '{raw.strip()}' is a {scheme}:// URL: an agent is reached over http:// or https:// "
                "(Streamable HTTP), or started as a command",
                "/target",
            )
            return None
        elif isinstance(raw, str):
            if shell:
                target.command = raw
            else:
                try:
                    target.command = shlex.split(raw)
                except ValueError as exc:
                    self.error("ARP106", f"target is not a valid command line: {exc}", "/target")
                    return None
                syntax = _shell_syntax(target.command)
                if syntax:
                    self.warning(
                        "ARP109",
                        f"the target uses shell syntax ({syntax!r}) but runs without a shell (ecp-runtime always "
                        "uses one); set 'shell: true' to run it through /bin/sh",
                        "/target",
                    )
        else:
            if shell:
                self.error("ARP106", "'shell: true' needs a string target, not an argv list", "/shell")
                return None
            target.command = list(raw)
        if "cwd" in data:  # the manifest's own file: the folder may lie outside the manifest's
            cwd = (self.root / data["cwd"]).resolve()
            if not cwd.is_dir():
                self.error("ARP106", f"cwd is not a directory: {data['cwd']} (resolved to {cwd})", "/cwd")
                return None
            target.cwd = str(cwd)
        target.env = {key: _env_text(value) for key, value in (data.get("env") or {}).items()}
        limits = data.get("limits") or {}
        target.stderr_limit = limits.get("stderr_bytes", target.stderr_limit)
        target.max_message = limits.get("max_message_bytes", target.max_message)
        target.pid_namespace = bool(data.get("pid_namespace", False)) or getenv(PID_NAMESPACE) not in (None, "0")
        return target

    def env_timeout(self, path: Path) -> float | None:
        """The per-call timeout set in the environment (``env.TIMEOUT`` or its alias), if any."""
        value = getenv(TIMEOUT)
        if value is None:
            return None
        seconds = parse_seconds(value)
        if seconds is None:
            self.findings.append(
                new_finding(
                    "error",
                    "ARP107",
                    f"{described(TIMEOUT)} must be {SECONDS_RULE}, got {value!r} ({SECONDS_LIMIT})",
                    file=display_path(path),
                )
            )
        return seconds

    def build(self, path: Path, digest: str) -> Manifest | None:
        data = self.doc.data
        target = self.target(data)
        self.json_values(data.get("config"), "/config")  # sent to the agent as JSON
        step_timeout = float(data.get("timeout") or self.env_timeout(path) or DEFAULT_STEP_TIMEOUT)
        scenarios: list[Scenario] = []
        seen: dict[str, int] = {}
        for s_index, sdata in enumerate(data["scenarios"]):
            pointer = f"/scenarios/{s_index}"
            steps = [
                self.step(step, join_pointer(join_pointer(pointer, "steps"), i), i + 1)
                for i, step in enumerate(sdata.get("steps") or [])
            ]
            if "dataset" in sdata:
                if steps:
                    self.warning(
                        "ARP110",
                        "dataset ignored: the scenario also has steps (as ecp-runtime does)",
                        join_pointer(pointer, "dataset"),
                    )
                else:
                    steps = self.dataset(sdata["dataset"], join_pointer(pointer, "dataset"), 1)
            if not steps and not any(f.severity == "error" for f in self.findings):
                self.warning("ARP111", "scenario has no steps", pointer)
            name = sdata["name"]
            scenario_id = name
            if name in seen:
                seen[name] += 1
                scenario_id = f"{name} ({seen[name]})"
                self.warning(
                    "ARP112",
                    f"duplicate scenario name '{name}'; reported as '{scenario_id}'",
                    join_pointer(pointer, "name"),
                )
            else:
                seen[name] = 1
            skip = sdata.get("skip")
            scenarios.append(
                Scenario(
                    index=s_index,
                    id=scenario_id,
                    name=name,
                    steps=steps,
                    tags=list(sdata.get("tags") or []),
                    description=sdata.get("description", ""),
                    skip=(skip if isinstance(skip, str) else "skipped by the manifest") if skip else None,
                    timeout=sdata.get("timeout", data.get("scenario_timeout")),
                    step_timeout=float(sdata.get("step_timeout", step_timeout)),
                    retries=sdata.get("retries", data.get("retries", 0)),
                    repeat=sdata.get("repeat", data.get("repeat", 1)),
                    pass_threshold=sdata.get("pass_threshold", data.get("pass_threshold", 1.0)),
                    line=self.doc.line_of(pointer),
                )
            )
        if target is None or any(f.severity == "error" for f in self.findings):
            return None
        return Manifest(
            path=path,
            root=self.root,
            name=data["name"],
            target=target,
            scenarios=scenarios,
            config=data.get("config") or {},
            description=data.get("description", ""),
            isolation=data.get("isolation", "reset"),
            require_capabilities=bool(data.get("require_capabilities", False)),
            judge=dict(data.get("judge") or {}),
            report_text_chars=(data.get("limits") or {}).get("report_text_chars", 20_000),
            digest=digest,
            raw=data,
        )


def _non_json(value: Any, pointer: str) -> Iterator[tuple[str, str]]:
    """``(pointer, kind)`` of every value below ``value`` that JSON cannot carry (YAML timestamps and binary)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _non_json(item, join_pointer(pointer, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_json(item, join_pointer(pointer, index))
    elif isinstance(value, (bytes, bytearray)):
        yield pointer, "binary value"
    elif not isinstance(value, (str, int, float)) and value is not None:  # bool is an int
        yield pointer, "timestamp" if hasattr(value, "isoformat") else type(value).__name__


_SHELL_WORDS = frozenset({"&&", "||", "|", ";", "&", ">", ">>", "<", "2>", "2>&1", "&>"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _shell_syntax(words: list[str]) -> str | None:
    """The first word of a split command line that only a shell understands, if any."""
    for index, word in enumerate(words):
        if word in _SHELL_WORDS or "$" in word or "`" in word or (index == 0 and _ASSIGNMENT.match(word)):
            return word
    return None


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def early_target(doc: YamlDocument, path: Path) -> Target | None:
    """The stdio target of a parsed, not yet validated manifest, or None when its target keys look wrong.

    Lets ``rpc run`` start the agent while the rest of the manifest is
    validated; the caller keeps the agent only when the validated manifest's
    target equals this one.
    """
    data = doc.data
    if not isinstance(data, dict):
        return None
    raw, env, limits = data.get("target"), data.get("env") or {}, data.get("limits") or {}
    if isinstance(raw, str):
        if not raw.strip() or is_url(raw.strip()):
            return None
    elif not (isinstance(raw, list) and raw and all(isinstance(arg, str) and arg for arg in raw)):
        return None
    if (
        not isinstance(data.get("shell", False), bool)
        or not isinstance(data.get("pid_namespace", False), bool)
        or not isinstance(data.get("cwd", "."), str)
        or not data.get("cwd", ".")
        or not isinstance(env, dict)
        or not isinstance(limits, dict)
        or not all(isinstance(value, (str, int, float, bool)) for value in env.values())
        or not all(
            type(limits.get(key, 1)) is int and limits.get(key, 1) > 0 for key in ("stderr_bytes", "max_message_bytes")
        )
    ):
        return None
    builder = Builder(doc, path.parent.resolve(), {})
    target = builder.target(data)
    return None if any(f.severity == "error" for f in builder.findings) else target
