"""Running a pack's eval suites (spec section 8) against its query runtime.

``run_suites(pack, suite=None, *, case_filter=None, clock=SYSTEM_CLOCK,
synthesize=None, suite_ids=None, cache=SHARED) -> EvalReport`` (``pack`` is the
loaded ``ExpertPack``), ``evaluate(...)`` (same arguments) -> ``Outcome``: the
same results as plain dataclasses, so the refresh's eval gate does not import
pydantic, and ``check_assertions(pack, case, response) -> list[Check]``.

Semantics (8.3), with the decisions documented in docs/ecp.md: ``must_cite``
needles are substrings of a cited ``artifact_path`` (or ``uri``); answer
substring checks ignore case; the three citation-integrity assertions fail when
there is no evidence to check; a missing ``chunk_hash`` fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.console import progress
from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import normalize_newlines, sha256_text
from agentpack.io.paths import check_relative, resolve_under

from .index.chunking import split_lines
from .pack.files import read_regular
from .pack.manifest import ExpertPack, Source, SuiteRef, as_dict, as_list
from .pack.schemas import SUITE_SCHEMA, schema_store
from .pack.spec import ARTIFACT_SOURCE_ID, COMMIT_RE, KNOWN_ASSERTIONS
from .query.adapter import index_findings, missed_indexes
from .query.response import query_pack
from .query.retrieve import SHARED, IndexCache
from .sources.recipes import decode_text
from .sources.scope import Scope
from .sources.snapshot import open_source_text

if TYPE_CHECKING:
    from agentpack.kernel.models import EvalReport


@dataclass
class Check:
    """One assertion's result (an ``AssertionResult`` in the report)."""

    name: str
    passed: bool
    expected: Any = None
    actual: Any = None
    message: str = ""


@dataclass
class CaseOutcome:
    id: str
    status: Literal["passed", "failed", "error", "skipped"]
    name: str | None = None
    message: str = ""
    file: str | None = None
    line: int | None = None
    duration_s: float = 0.0
    assertions: list[Check] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class SuiteOutcome:
    id: str
    file: str | None
    cases: list[CaseOutcome]
    name: str | None = None
    duration_s: float = 0.0


@dataclass
class Outcome:
    """What ``evaluate`` found; ``report()`` makes the core's ``EvalReport`` of it."""

    name: str
    path: str
    started_at: datetime
    duration_s: float
    suites: list[SuiteOutcome]
    findings: list[tuple[str, str, str, dict[str, Any]]]
    """``(severity, code, message, where)``"""
    metadata: dict[str, Any]

    @property
    def totals(self) -> SimpleNamespace:
        cases = [c for s in self.suites for c in s.cases]
        count = {k: sum(1 for c in cases if c.status == k) for k in ("passed", "failed", "error", "skipped")}
        return SimpleNamespace(
            total=len(cases),
            passed=count["passed"],
            failed=count["failed"],
            errors=count["error"],
            skipped=count["skipped"],
        )

    @property
    def ok(self) -> bool:
        totals = self.totals
        return totals.failed == 0 and totals.errors == 0 and not any(f[0] == "error" for f in self.findings)

    def report(self) -> EvalReport:
        from agentpack.kernel.models import AssertionResult, CaseResult, EvalReport, Finding, SuiteResult

        def case(c: CaseOutcome) -> CaseResult:
            return CaseResult(
                id=c.id,
                name=c.name,
                status=c.status,
                duration_s=c.duration_s,
                message=c.message,
                file=c.file,
                line=c.line,
                details=c.details,
                assertions=[
                    AssertionResult(
                        name=a.name, passed=a.passed, expected=a.expected, actual=a.actual, message=a.message
                    )
                    for a in c.assertions
                ],
            )

        suites = [
            SuiteResult(id=s.id, name=s.name, file=s.file, duration_s=s.duration_s, cases=[case(c) for c in s.cases])
            for s in self.suites
        ]
        findings = [
            getattr(Finding, severity)(code, message, **where) for severity, code, message, where in self.findings
        ]
        return EvalReport(
            name=self.name,
            format="ecp",
            path=self.path,
            started_at=self.started_at,
            duration_s=self.duration_s,
            suites=suites,
            findings=findings,
            metadata=self.metadata,
        )


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


class CitationChecker:
    """Resolves citations against their sources, reading each cited file once per run."""

    def __init__(self, pack: ExpertPack) -> None:
        self.pack = pack
        self._texts: dict[tuple, list[str] | AgentpackError] = {}
        self._scopes: dict[str, Scope] = {}

    def _scope(self, source: Source) -> Scope:
        if source.source_id not in self._scopes:
            self._scopes[source.source_id] = Scope(source.include, source.exclude)
        return self._scopes[source.source_id]

    def lines(self, citation: dict[str, Any]) -> list[str]:
        """The cited file's lines; raises ``AgentpackError`` saying why it does not resolve."""
        sid = str(citation.get("source_id") or "")
        path = citation.get("artifact_path")
        if not isinstance(path, str) or not path:
            raise AgentpackError("citation has no artifact_path")
        check_relative(path)
        revision = as_dict(citation.get("revision"))
        key = (sid, path, str(revision.get("commit") or ""), str(revision.get("query_hash") or ""))
        if key in self._texts:
            cached = self._texts[key]
            if isinstance(cached, AgentpackError):
                raise cached
            return cached
        try:
            if sid == ARTIFACT_SOURCE_ID and self.pack.source(sid) is None:
                if path not in {s.path for s in self.pack.summaries}:
                    raise AgentpackError(f"'{path}' is not a declared derived artifact")
                text = decode_text(read_regular(resolve_under(self.pack.root, path)))
            else:
                source = self.pack.source(sid)
                if source is None:
                    raise AgentpackError(f"source_id '{sid}' is not declared in EXPERT.yaml")
                if source.type != "database" and not self._scope(source).matches(path):
                    raise AgentpackError(f"'{path}' is outside the scope of source '{sid}'")
                if source.type == "git":
                    commit = str(revision.get("commit") or "")
                    if not COMMIT_RE.fullmatch(commit):
                        raise AgentpackError(f"git citation needs a concrete revision.commit (got '{commit}')")
                text = open_source_text(self.pack, source, path, revision)
            result: list[str] | AgentpackError = split_lines(text)
        except AgentpackError as exc:
            result = exc
        except OSError as exc:
            result = AgentpackError(f"cannot read '{path}': {exc.strerror or exc}")
        self._texts[key] = result
        if isinstance(result, AgentpackError):
            raise result
        return result

    def check(
        self, item: dict[str, Any], snippet: str | None, *, resolve: bool, snippets: bool, hashes: bool
    ) -> list[str]:
        """Problems of one evidence item (a citation, with its chunk's snippet when there is one)."""
        problems = []
        label = item.get("chunk_id") or item.get("artifact_path") or "?"
        if hashes:
            digest = item.get("chunk_hash")
            if snippet is None:
                problems.append(f"{label}: no chunk snippet to hash")
            elif not isinstance(digest, str) or not digest:
                problems.append(f"{label}: citation has no chunk_hash")
            elif sha256_text(normalize_newlines(snippet)) != digest.removeprefix("sha256:"):
                problems.append(f"{label}: chunk_hash does not match the snippet")
        if not (resolve or snippets):
            return problems
        try:
            lines = self.lines(item)
        except AgentpackError as exc:
            return [*problems, f"{label}: {exc.message}"]
        loc = as_dict(item.get("loc"))
        start, end = loc.get("start_line"), loc.get("end_line")
        if not loc:
            if snippets:
                problems.append(f"{label}: citation has no loc")
            return problems
        if not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end <= max(len(lines), 1)):
            return [*problems, f"{label}: loc {start}-{end} is not a valid range of a {len(lines)}-line file"]
        if snippets:
            if snippet is None:
                problems.append(f"{label}: no chunk snippet to compare")
            elif "".join(lines[start - 1 : end]) != normalize_newlines(snippet):
                problems.append(f"{label}: the snippet differs from lines {start}-{end} of the source")
        return problems


def _evidence(response: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
    chunks = response.get("chunks")
    if isinstance(chunks, list) and chunks:
        return [(c.get("citation") or {}, c.get("snippet")) for c in chunks if isinstance(c, dict)]
    return [(c, None) for c in response.get("citations") or [] if isinstance(c, dict)]


def _as_of_ids(as_of: Any) -> tuple[str, list[str]]:
    if not isinstance(as_of, dict):
        return "missing", []
    if isinstance(as_of.get("sources"), list):
        return "multi-source", [str(s.get("source_id")) for s in as_of["sources"] if isinstance(s, dict)]
    if as_of.get("source_id"):
        return "single-source", [str(as_of["source_id"])]
    return "timestamp-only" if "timestamp" in as_of else "unknown", []


def check_assertions(
    pack: ExpertPack, case: dict[str, Any], response: dict[str, Any], checker: CitationChecker | None = None
) -> list[Check]:
    """Every known assertion of ``case`` against ``response``."""
    checker = checker or CitationChecker(pack)
    asserts = as_dict(case.get("assertions"))
    citations = [c for c in response.get("citations") or [] if isinstance(c, dict)]
    cited = [str(c.get("artifact_path") or "") for c in citations]
    uris = [str(c.get("uri") or "") for c in citations]
    answer = str(response.get("answer") or "")
    results: list[Check] = []

    def add(name: str, passed: bool, expected: Any, actual: Any, message: str = "") -> None:
        results.append(
            Check(name=name, passed=passed, expected=expected, actual=actual, message="" if passed else message)
        )

    for key in asserts:
        if key not in KNOWN_ASSERTIONS:
            continue
        value = asserts[key]
        if key == "must_cite":
            missing = [n for n in _strings(value) if not any(n in p for p in cited + uris)]
            add(key, not missing, _strings(value), cited, f"no citation contains {missing}")
        elif key == "must_not_cite":
            found = [n for n in _strings(value) if any(n in p for p in cited + uris)]
            add(key, not found, _strings(value), cited, f"citations contain {found}")
        elif key == "must_cite_source_ids":
            ids = sorted({str(c.get("source_id")) for c in citations})
            missing = [s for s in _strings(value) if s not in ids]
            add(key, not missing, _strings(value), ids, f"no citation from source(s) {missing}")
        elif key == "min_citations":
            add(
                key,
                len(citations) >= int(value),
                int(value),
                len(citations),
                f"{len(citations)} citation(s), at least {value} expected",
            )
        elif key == "max_citations":
            add(
                key,
                len(citations) <= int(value),
                int(value),
                len(citations),
                f"{len(citations)} citation(s), at most {value} expected",
            )
        elif key == "answer_must_include":
            missing = [s for s in _strings(value) if s.lower() not in answer.lower()]
            add(key, not missing, _strings(value), answer, f"the answer lacks {missing}")
        elif key == "answer_must_not_include":
            found = [s for s in _strings(value) if s.lower() in answer.lower()]
            add(key, not found, _strings(value), answer, f"the answer contains {found}")
        elif key == "answer_must_match":
            failing = []
            for pattern in _strings(value):
                try:
                    if not re.search(pattern, answer):
                        failing.append(pattern)
                except re.error as exc:
                    failing.append(f"{pattern} (invalid: {exc})")
            add(key, not failing, _strings(value), answer, f"the answer does not match {failing}")
        elif key == "response_must_include_fields":
            missing = [f for f in _strings(value) if f not in response]
            add(key, not missing, _strings(value), sorted(response), f"the response lacks {missing}")
        elif key == "as_of_must_include_source_ids":
            form, ids = _as_of_ids(response.get("as_of"))
            missing = [s for s in _strings(value) if s not in ids]
            ok = form in ("single-source", "multi-source") and not missing
            add(
                key,
                ok,
                _strings(value),
                {"form": form, "source_ids": ids},
                f"as_of is {form}" + (f" and lacks {missing}" if missing else ""),
            )
        elif key in ("citations_must_resolve", "citations_must_match_snippets", "citations_must_match_hashes"):
            if value is not True:
                continue
            evidence = _evidence(response)
            problems: list[str] = []
            if not evidence:
                problems.append("the response has no citation to check")
            for item, snippet in evidence:
                problems += checker.check(
                    item,
                    snippet,
                    resolve=key == "citations_must_resolve",
                    snippets=key == "citations_must_match_snippets",
                    hashes=key == "citations_must_match_hashes",
                )
            add(key, not problems, True, {"checked": len(evidence), "problems": problems}, "; ".join(problems[:5]))
    return results


def _where(finding: Any) -> dict[str, Any]:
    return {"file": finding.file, "line": finding.line, "column": finding.column, "pointer": finding.pointer}


def _suite_problems(ref: SuiteRef, findings: list[tuple[str, str, str, dict[str, Any]]]) -> dict[int, str]:
    """The suite checked against its schema: each problem becomes an ECP150 finding (file, line,
    pointer); returns the message of every case that cannot run, by case index (its problems)."""
    if ref.doc is None:
        return {}
    invalid: dict[int, str] = {}
    for f in schema_store().validate(SUITE_SCHEMA, ref.doc.data, document=ref.doc, code="ECP150"):
        findings.append((f.severity, f.code, f"suite '{ref.suite_id}': {f.message}", _where(f)))
        parts = (f.pointer or "").split("/")
        if len(parts) > 2 and parts[1] == "cases" and parts[2].isdigit():
            index = int(parts[2])
            invalid[index] = f"{invalid[index]}; {f.message}" if index in invalid else f"invalid case: {f.message}"
    return invalid


def run_suites(
    pack: ExpertPack,
    suite: str | None = None,
    *,
    case_filter: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    synthesize: Callable | None = None,
    suite_ids: list[str] | None = None,
    cache: IndexCache = SHARED,
) -> EvalReport:
    """Run the pack's suites (or ``suite`` / ``suite_ids``) and report every case."""
    return evaluate(
        pack, suite, case_filter=case_filter, clock=clock, synthesize=synthesize, suite_ids=suite_ids, cache=cache
    ).report()


def evaluate(
    pack: ExpertPack,
    suite: str | None = None,
    *,
    case_filter: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    synthesize: Callable | None = None,
    suite_ids: list[str] | None = None,
    cache: IndexCache = SHARED,
) -> Outcome:
    """``run_suites`` without building the report models."""
    from .validate.checks import manifest_schema_findings  # pydantic's Finding: only when suites run

    started_at, t0 = clock.now(), clock.monotonic()
    refs = pack.suites
    wanted = [suite] if suite else list(suite_ids or [])
    if wanted:
        unknown = [s for s in wanted if pack.suite(s) is None]
        if unknown:
            raise AgentpackError(
                f"no eval suite {', '.join(map(repr, unknown))} in EXPERT.yaml",
                hint="suites: " + ", ".join(s.suite_id for s in refs),
            )
        refs = [r for r in refs if r.suite_id in wanted]
    findings: list[tuple[str, str, str, dict[str, Any]]] = [
        ("error", f.code, f"EXPERT.yaml is invalid: {f.message}", _where(f))
        for f in manifest_schema_findings(pack)
        if f.severity == "error"
    ]
    checker = CitationChecker(pack)
    unusable: dict[str, dict[str, Any]] = {}  # the indexes a case could not use, named once in the findings
    suites = []
    total = sum(
        1
        for r in refs
        for i, c in enumerate(r.cases)
        if not case_filter or case_filter in str(c.get("case_id") or f"case-{i + 1}")
    )
    with progress(f"evals of {pack.name}", total=total) as bar:
        for ref in refs:
            if ref.doc is None:
                why = ref.error.message if ref.error else f"suite file '{ref.path}' not found"
                line = ref.error.line if ref.error else None
                findings.append(
                    ("error", "ECP150", f"suite '{ref.suite_id}': {why}", {"file": ref.path or None, "line": line})
                )
                suites.append(
                    SuiteOutcome(
                        id=ref.suite_id,
                        file=ref.path,
                        cases=[CaseOutcome(id="(suite)", status="error", message=why, file=ref.path, line=line)],
                    )
                )
                continue
            s0 = clock.monotonic()
            cases = []
            invalid = _suite_problems(ref, findings)
            for i, case in enumerate(as_list(ref.data.get("cases"))):
                if not isinstance(case, dict):
                    continue
                case_id = str(case.get("case_id") or f"case-{i + 1}")
                if case_filter and case_filter not in case_id:
                    continue
                bar.update(description=f"evals of {pack.name}: {ref.suite_id}/{case_id}")
                line = ref.doc.line_of(f"/cases/{i}")
                if i in invalid:
                    cases.append(CaseOutcome(id=case_id, status="error", message=invalid[i], file=ref.path, line=line))
                    bar.advance()
                    continue
                for key in (case.get("assertions") or {}) if isinstance(case.get("assertions"), dict) else ():
                    if key not in KNOWN_ASSERTIONS:
                        findings.append(
                            (
                                "warning",
                                "ECP151",
                                f"case '{case_id}': unknown assertion '{key}' (ignored)",
                                ref.doc.where(f"/cases/{i}/assertions/{key}"),
                            )
                        )
                c0 = clock.monotonic()
                request = {
                    "question": case.get("question") or "",
                    "top_k": case.get("top_k") or 5,
                    "mode": case.get("mode") or "ephemeral",
                    "filters": case.get("filters") or {},
                }
                try:
                    response = query_pack(pack, request, clock=clock, synthesize=synthesize, cache=cache)
                except AgentpackError as exc:
                    cases.append(
                        CaseOutcome(
                            id=case_id,
                            name=case.get("question"),
                            status="error",
                            message=exc.message,
                            file=ref.path,
                            line=line,
                            duration_s=clock.monotonic() - c0,
                        )
                    )
                    bar.advance()
                    continue
                results = check_assertions(pack, case, response, checker)
                failed = [r for r in results if not r.passed]
                missed = missed_indexes(response)
                unusable.update((r["index_id"], r) for r in missed)
                cases.append(
                    CaseOutcome(
                        id=case_id,
                        name=case.get("question"),
                        status="failed" if failed else "passed",
                        duration_s=round(clock.monotonic() - c0, 6),
                        file=ref.path,
                        line=line,
                        assertions=results,
                        message="; ".join(
                            [f"{r.name}: {r.message}" for r in failed]
                            + [f"index '{r['index_id']}' {r['status']}: {r['reason']}" for r in missed if failed]
                        ),
                        details={
                            "answer": response["answer"],
                            "as_of": response["as_of"],
                            "cited": [c.get("chunk_id") for c in response["citations"]],
                            "retrieval": response["retrieval"]["indexes"],
                        },
                    )
                )
                bar.advance()
            description = ref.data.get("description")
            suites.append(
                SuiteOutcome(
                    id=ref.suite_id,
                    name=description if isinstance(description, str) and description else ref.suite_id,
                    file=ref.path,
                    duration_s=round(clock.monotonic() - s0, 6),
                    cases=cases,
                )
            )
    findings += [(f.severity, f.code, f.message, _where(f)) for f in index_findings(pack, list(unusable.values()))]
    return Outcome(
        name=pack.name,
        path=str(pack.root),
        started_at=started_at,
        duration_s=round(clock.monotonic() - t0, 6),
        suites=suites,
        findings=findings,
        metadata={"expert_id": pack.expert_id, "profile": pack.profile, "indexes": [e.id for e in pack.indexes]},
    )
