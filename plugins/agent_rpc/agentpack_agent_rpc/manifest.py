"""Load and validate a manifest: YAML with lines, the bundled schema, then the checks a schema cannot do.

``load_manifest`` never raises for a user mistake: it returns the findings
(with file, line and JSON pointer) and a ``Manifest`` only when there are no
errors. Regexes are compiled, datasets read and paths resolved here, once.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlparse

from agentpack.io.errors import PathEscapeError, YamlError, reading
from agentpack.io.jsonio import JsonError, loads
from agentpack.io.paths import resolve_under
from agentpack.io.userfiles import read_bytes
from agentpack.io.yamlio import YamlDocument, join_pointer, parse_yaml
from agentpack.kernel.records import Record, constant

from . import schema_store
from .env import PID_NAMESPACE, TIMEOUT, described, getenv

if TYPE_CHECKING:  # the rest loads after ``rpc run`` has started the agent (see ``early_target``)
    from agentpack.kernel.models import Finding, Severity
    from agentpack.kernel.schemas import SchemaStore

    from .containment import Containment
    from .graders.base import GraderType

DEFAULT_STEP_TIMEOUT = 30.0
MAX_SECONDS = 604_800
"""The longest timeout or budget accepted anywhere (a week; the manifest schema's ``seconds`` says the same)."""
MANIFEST_NAMES = ("manifest.yaml", "manifest.yml")


class GraderSpec(Record):
    """One grader entry of a step, with its configured grader object."""

    __slots__ = ("type", "config", "pointer", "grader")
    type: str
    config: dict[str, Any]
    pointer: str
    grader: Any


class Step(Record):
    """One input sent to the agent, and the graders of its result."""

    __slots__ = ("index", "input", "graders", "timeout", "expect_status", "name", "line")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "timeout": constant(None),
        "expect_status": constant(None),
        "name": constant(None),
        "line": constant(None),
    }
    index: int
    input: str
    graders: list[GraderSpec]
    timeout: float | None
    expect_status: str | None
    name: str | None
    line: int | None


class Scenario(Record):
    """One conversation: steps run in order on one agent session."""

    __slots__ = (
        "index",
        "id",
        "name",
        "steps",
        "tags",
        "description",
        "skip",
        "timeout",
        "step_timeout",
        "retries",
        "repeat",
        "pass_threshold",
        "line",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "tags": list,
        "description": constant(""),
        "skip": constant(None),
        "timeout": constant(None),
        "step_timeout": constant(DEFAULT_STEP_TIMEOUT),
        "retries": constant(0),
        "repeat": constant(1),
        "pass_threshold": constant(1.0),
        "line": constant(None),
    }
    index: int
    id: str
    name: str
    steps: list[Step]
    tags: list[str]
    description: str
    skip: str | None
    timeout: float | None
    step_timeout: float
    retries: int
    repeat: int
    pass_threshold: float
    line: int | None


class Target(Record):
    """How to reach the agent: a command (stdio) or a URL (Streamable HTTP)."""

    __slots__ = ("command", "url", "shell", "cwd", "env", "stderr_limit", "max_message", "pid_namespace")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "command": constant(None),
        "url": constant(None),
        "shell": constant(False),
        "cwd": constant(None),
        "env": dict,
        "stderr_limit": constant(64 * 1024),
        "max_message": constant(64 * 1024 * 1024),
        "pid_namespace": constant(False),
    }
    command: list[str] | str | None
    url: str | None
    shell: bool
    cwd: str | None
    """The agent's working directory; None: the caller's (``cwd:`` unset, as ecp-runtime does)."""
    env: dict[str, str]
    stderr_limit: int
    max_message: int
    pid_namespace: bool

    @property
    def kind(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        if self.url:
            return self.url
        return self.command if isinstance(self.command, str) else shlex.join(self.command or [])

    def open(self, scope: Containment | None = None):
        """A connected transport (spawns the agent for stdio, within ``scope`` when given)."""
        if self.url:
            from .http_transport import HttpTransport

            return HttpTransport(self.url, max_message=self.max_message)
        from .stdio import StdioTransport

        assert self.command is not None  # a target is a URL or a command
        return StdioTransport(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stderr_limit=self.stderr_limit,
            max_message=self.max_message,
            scope=scope,
            pid_namespace=self.pid_namespace,
        )


class Manifest(Record):
    """A validated manifest, with paths resolved and graders built."""

    __slots__ = (
        "path",
        "root",
        "name",
        "target",
        "scenarios",
        "config",
        "description",
        "isolation",
        "require_capabilities",
        "judge",
        "report_text_chars",
        "digest",
        "raw",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "config": dict,
        "description": constant(""),
        "isolation": constant("reset"),
        "require_capabilities": constant(False),
        "judge": dict,
        "report_text_chars": constant(20_000),
        "digest": constant(""),
        "raw": dict,
    }
    path: Path
    root: Path
    name: str
    target: Target
    scenarios: list[Scenario]
    config: dict[str, Any]
    description: str
    isolation: str
    require_capabilities: bool
    judge: dict[str, Any]
    report_text_chars: int
    digest: str
    raw: dict[str, Any]


def is_url(target: str) -> bool:
    parsed = urlparse(target)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


def manifest_file(path: Path) -> Path | None:
    """The manifest a path names: the file itself, or ``manifest.yaml`` in a directory."""
    if path.is_dir():
        for name in MANIFEST_NAMES:
            if (path / name).is_file():
                return path / name
        return None
    return path if path.suffix.lower() in (".yaml", ".yml") and path.is_file() else None


SECONDS_RULE = "a positive number of seconds"
SECONDS_LIMIT = f"at most {MAX_SECONDS}, a week; not NaN or infinity"


def parse_seconds(value: Any) -> float | None:
    """``value`` as seconds (a number or its text); None when not within ``SECONDS_RULE`` and ``SECONDS_LIMIT``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS else None


def display_path(path: str | Path) -> str:
    """``path`` as seen from the working directory when it lies below it, else as it is.

    Findings and report locations use it, so SARIF and GitHub annotations can
    place them (GitHub resolves them against the checkout, the usual working
    directory).
    """
    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return str(Path(text).relative_to(Path.cwd()))
    except (ValueError, OSError):  # elsewhere, or the working directory is gone
        return text


def looks_like_manifest(data: Any) -> bool:
    return isinstance(data, dict) and "scenarios" in data and ("target" in data or "manifest_version" in data)


def _finding(severity: Severity, code: str, message: str, **where: Any) -> Finding:
    """A ``Finding`` (pydantic is imported only when there is something to report)."""
    from agentpack.kernel.models import Finding

    return Finding(severity=severity, code=code, message=message, **where)


class _Builder:
    def __init__(self, doc: YamlDocument, root: Path, graders: dict[str, GraderType]) -> None:
        self.doc = doc
        self.root = root
        self.graders = graders
        self.findings: list[Finding] = []
        self.entry_stores: dict[str, tuple[SchemaStore, str]] = {}

    def error(self, code: str, message: str, pointer: str, **extra: Any) -> None:
        self.findings.append(_finding("error", code, message, **self.doc.where(pointer), **extra))

    def warning(self, code: str, message: str, pointer: str, **extra: Any) -> None:
        self.findings.append(_finding("warning", code, message, **self.doc.where(pointer), **extra))

    def json_values(self, value: Any, pointer: str) -> bool:
        """Whether ``value`` holds only what JSON can carry; each YAML timestamp or binary is an error (``ARP108``)."""
        ok = True
        for where, kind in _non_json(value, pointer):
            ok = False
            self.error("ARP108", f"a YAML {kind} is not a JSON value; quote it to send it as text", where)
        return ok

    # -- pieces ------------------------------------------------------------------------
    def grader(self, spec: dict[str, Any], pointer: str) -> GraderSpec | None:
        from .graders.base import GraderConfigError

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
                                _finding("error", "ARP102", f"invalid JSON line: {detail}", file=shown, line=number)
                            )
                            continue
                        if not isinstance(row, dict):
                            self.findings.append(
                                _finding(
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
                    _finding("error", "ARP102", f"row has no string '{in_col}' value", file=shown, line=number)
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
                _finding(
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


def _fast_valid(data: Any) -> bool:
    """The yes/no check against the full manifest schema (no jsonschema import on the happy path)."""
    from agentpack.io.quickschema import is_valid

    skeleton, by_type = schema_store.quick_schemas()
    verdict = is_valid(skeleton, data)
    if verdict:  # the skeleton holds: every grader entry is an object with a string type
        for scenario in data["scenarios"]:
            for step in scenario.get("steps") or ():
                for grader in step.get("graders") or ():
                    schema = by_type.get(grader["type"])
                    if schema is not None and not (verdict := is_valid(schema, grader)):
                        break
                if not verdict:
                    break
            if not verdict:
                break
    return schema_store.store().is_valid(schema_store.MANIFEST, data) if verdict is None else verdict


def _schema_findings(doc: YamlDocument) -> list[Finding]:
    """Schema errors as findings (file, line, pointer), in document order."""
    return schema_store.store().validate(schema_store.MANIFEST, doc.data, document=doc, code="ARP100")


def _friendlier(finding: Finding) -> Finding:
    """Schema messages a person can act on, where jsonschema's wording is cryptic."""
    if finding.message.endswith(" does not match '\\\\S'"):
        where = finding.message.split(": ", 1)[0]
        return finding.model_copy(update={"message": f"{where}: must not be empty or blank"})
    return finding


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


Document = tuple[YamlDocument, bytes]
"""A manifest read and parsed: the YAML document and the file's bytes (for the digest). ``Pack.data`` is one."""

Sniffed = tuple[tuple[str, int, int, int], str, bytes, YamlDocument | None]
"""What ``sniff`` read of a manifest: the file's identity and stat, its text, bytes and (when it had to parse) the
document. Detection hands it to the load that follows (``Detection.data``)."""


def _file_key(path: Path) -> tuple[str, int, int, int]:
    stat = path.stat()
    return str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns


def _read(path: Path, sniffed: Sniffed | None = None) -> tuple[str, bytes, YamlDocument | None]:
    """Text, bytes and (when ``sniff`` parsed it) the document: what ``sniffed`` holds of the unchanged file, else
    read."""
    with reading(display_path(path), YamlError):
        if sniffed is not None and sniffed[0] == _file_key(path):
            return sniffed[1:]
        raw = read_bytes(path, display=display_path(path), error=YamlError, expected="a YAML file")
        return raw.decode("utf-8-sig"), raw, None


def read_text(path: Path) -> tuple[str, bytes]:
    """The manifest's text and bytes; raises ``YamlError`` for an unreadable or non-UTF-8 file."""
    text, raw, _ = _read(path)
    return text, raw


def parse_document(text: str, raw: bytes, path: Path) -> Document:
    """The manifest's text parsed; raises ``YamlError`` (file:line:col) for broken YAML."""
    return parse_yaml(text, file=display_path(path)), raw


def read_document(path: Path, sniffed: Sniffed | None = None) -> Document:
    """The parsed YAML and its bytes (from ``sniffed`` when the file is unchanged since); raises ``YamlError``
    (file:line:col) for unreadable YAML."""
    text, raw, doc = _read(path, sniffed)
    return (doc, raw) if doc is not None else parse_document(text, raw, path)


_TOP_KEY = re.compile(r"""^["']?(scenarios|target|manifest_version)["']?[ \t]*:""", re.M)
_FLOW_START = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*(?:---[ \t]+)?\{")


def sniff(path: Path) -> Sniffed | None:
    """Whether the YAML file ``path`` looks like a manifest: top-level ``scenarios``, and ``target`` or
    ``manifest_version``.

    Block-style YAML (what people write) is recognised from its lines, with no
    parse; only a flow-style document (``{...}``, JSON) is parsed. A manifest's
    ``Sniffed`` content (else ``None``) goes to the ``read_document`` of the load
    that follows, so ``agentpack eval manifest.yaml`` reads and parses the file
    once.
    """
    try:
        with reading(display_path(path), YamlError):
            key = _file_key(path)
            raw = read_bytes(path, display=display_path(path), error=YamlError, expected="a YAML file")
            text = raw.decode("utf-8-sig")
    except YamlError:
        return None
    doc = None
    keys = set(_TOP_KEY.findall(text))
    if "scenarios" in keys:
        found = bool(keys & {"target", "manifest_version"})
    elif "scenarios" in text and _FLOW_START.match(text):
        try:
            doc = parse_yaml(text, file=display_path(path))
        except YamlError:
            return None
        found = looks_like_manifest(doc.data)
    else:
        found = False
    return (key, text, raw, doc) if found else None


_SCENARIOS_LINE = re.compile(r"^scenarios[ \t]*:", re.M)
_TARGET_KEY_LINE = re.compile(r"^(?:target|shell|cwd|env|limits|pid_namespace)[ \t]*:", re.M)


def document_head(text: str, path: Path) -> YamlDocument | None:
    """The top-level keys written above ``scenarios:``, parsed alone, for ``early_target``.

    People write the target before the scenarios; reading only that part lets
    the agent start before the long part of the manifest is parsed. None when
    there is no block-style ``scenarios:`` line, when a target key also
    appears below it, or when the part above is not a mapping on its own.
    """
    match = _SCENARIOS_LINE.search(text)
    if match is None or _TARGET_KEY_LINE.search(text, match.end()):
        return None
    try:
        head = parse_yaml(text[: match.start()], file=display_path(path))
    except YamlError:
        return None
    return head if isinstance(head.data, dict) else None


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
    builder = _Builder(doc, path.parent.resolve(), {})
    target = builder.target(data)
    return None if any(f.severity == "error" for f in builder.findings) else target


def yaml_error_finding(exc: YamlError, path: Path) -> Finding:
    """The finding (``ARP001``) for a manifest that cannot be read or parsed."""
    return _finding(
        "error", "ARP001", exc.message, file=display_path(exc.file or path), line=exc.line, column=exc.column
    )


def load_manifest(
    path: Path,
    graders: dict[str, GraderType],
    *,
    strict: bool = False,
    portable: bool = False,
    document: Document | None = None,
) -> tuple[Manifest | None, list[Finding]]:
    """Validate the manifest at ``path`` (or its already read ``document``): ``(manifest or None, findings)``.

    ``strict`` adds the rules of ``rpc validate --strict``; ``portable`` the
    features ecp-runtime would reject or ignore (``portable``), which do not
    make the manifest invalid here.
    """
    path = Path(path)
    try:
        doc, raw = document or read_document(path)
    except YamlError as exc:
        return None, [yaml_error_finding(exc, path)]
    if not isinstance(doc.data, dict):
        return None, [
            _finding(
                "error",
                "ARP002",
                "a manifest must be a YAML mapping with name, target and scenarios",
                file=display_path(path),
                line=1,
            )
        ]
    findings = [] if _fast_valid(doc.data) else [_friendlier(f) for f in _schema_findings(doc)]
    if any(f.severity == "error" for f in findings):
        return None, findings
    builder = _Builder(doc, path.parent.resolve(), graders)
    from agentpack.io.hashing import sha256_small

    manifest = builder.build(path, "sha256:" + sha256_small(raw))
    findings += builder.findings
    if strict:
        findings += _strict_findings(doc, manifest)
    if any(f.severity == "error" for f in findings):
        manifest = None
    if portable:  # errors, but about another runtime: the manifest still runs here
        from .portable import portable_findings

        findings += portable_findings(doc)
    return manifest, findings


def _strict_findings(doc: YamlDocument, manifest: Manifest | None) -> list[Finding]:
    """Rules ``--strict`` adds: explicit version, graded steps, current field names, a runnable command."""
    import shutil

    found: list[Finding] = []
    data = doc.data
    if "manifest_version" not in data:
        found.append(_finding("error", "ARP201", "strict: set manifest_version: v1", **doc.where("")))
    for s_index, scenario in enumerate(data["scenarios"]):
        for i, step in enumerate(scenario.get("steps") or []):
            pointer = f"/scenarios/{s_index}/steps/{i}"
            if not step.get("graders"):
                found.append(_finding("error", "ARP202", "strict: step has no graders", **doc.where(pointer)))
            for g_index, grader in enumerate(step.get("graders") or []):
                if grader.get("field") == "private_thought":
                    found.append(
                        _finding(
                            "error",
                            "ARP203",
                            "strict: 'private_thought' is deprecated; use 'evaluation_context'",
                            **doc.where(f"{pointer}/graders/{g_index}/field"),
                        )
                    )
    command = manifest.target.command if manifest is not None else None
    if manifest is not None and isinstance(command, list) and not manifest.target.shell:
        program = command[0]
        cwd = manifest.target.cwd or "."
        if shutil.which(program) is None and not (Path(cwd) / program).exists():
            found.append(
                _finding("error", "ARP204", f"strict: program '{program}' not found on PATH", **doc.where("/target"))
            )
    return found


def start_hint(manifest: Manifest) -> str:
    """A hint for an agent that did not start, when a file its command names is found from another folder.

    Without ``cwd:`` the agent starts in the caller's working directory (as
    with ecp-runtime): a manifest written for its own folder, or one that
    ``ecp init`` wrote to be run from its parent, then names files that are
    not there. Looks in the manifest's folder and the two above it; empty
    when the file is in none of them (or the manifest sets ``cwd:``).
    """
    target = manifest.target
    if target.cwd is not None or target.command is None:
        return ""
    try:
        words = shlex.split(target.command) if isinstance(target.command, str) else target.command
    except ValueError:
        return ""
    here = Path.cwd()
    for word in words:
        if word.startswith("-") or os.path.isabs(word) or (here / word).exists():
            continue
        for folder in (manifest.root, *manifest.root.parents[:2]):
            if (folder / word).exists():
                fix = f"add 'cwd: {os.path.relpath(folder, manifest.root)}' to the manifest"
                if folder != manifest.root:
                    fix = f"run from {folder}, or {fix}"
                return (
                    f"\nhint: without 'cwd:' the agent starts in the current directory ({here}), as with "
                    f"ecp-runtime; '{word}' is found from {folder}: {fix}"
                )
    return ""


def make_target(raw: str | list[str], *, shell: bool = False, cwd: str | None = None) -> Target:
    """A ``Target`` from a command line, an argv list or a URL (for ``conformance`` and the pytest fixture)."""
    if isinstance(raw, str) and is_url(raw.strip()):
        return Target(url=raw.strip())
    if isinstance(raw, str) and not shell:
        try:
            command: list[str] | str = shlex.split(raw)
        except ValueError as exc:
            raise ValueError(f"not a valid command line: {exc}") from None
    else:
        command = raw if isinstance(raw, str) else list(raw)
    if not command:
        raise ValueError("empty agent command")
    return Target(command=command, shell=shell, cwd=cwd)
