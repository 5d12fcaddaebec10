"""Everything a format plugin can do, in one small module, using only agentpack's public API.

Format ``sample-todo``: a directory holding ``todo.txt`` whose lines are
``- [ ] task`` or ``- [x] task``.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from agentpack import hookimpl
from agentpack.kernel.registry import READ_ONLY, CommandSpec, FormatInfo, McpTool, Reporter, RunExporter, RunView

FORMAT = "sample-todo"
LINE = re.compile(r"^- \[( |x)\] (.+)$")


def read_items(root: Path) -> list[tuple[int, str, bool | None]]:
    """``(line, text, done)`` per line; ``done`` is None for a malformed line."""
    items = []
    for number, line in enumerate((root / "todo.txt").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        match = LINE.match(line)
        items.append((number, match.group(2) if match else line, (match.group(1) == "x") if match else None))
    return items


@hookimpl
def agentpack_register_formats(register):
    register(FormatInfo(name=FORMAT, title="To-do list", description="a directory with todo.txt"))


@hookimpl
def agentpack_detect(path):
    from agentpack.kernel.packtypes import Detection

    if path.is_dir() and (path / "todo.txt").is_file():
        return Detection(format=FORMAT, confidence=0.9, reason="has todo.txt")
    return None


@hookimpl
def agentpack_load(path, format):
    if format != FORMAT:
        return None
    from agentpack.io.errors import PackError
    from agentpack.kernel.packtypes import Pack

    if not (path / "todo.txt").is_file():
        raise PackError("no todo.txt", file=str(path))
    return Pack(path=path, root=path, format=FORMAT, name=path.name)


@hookimpl
def agentpack_validate(pack, strict):
    from agentpack.kernel.models import Finding

    findings = []
    for number, text, done in read_items(pack.root):
        if done is None:
            findings.append(
                Finding.error(
                    "TODO001",
                    f"not a to-do item: {text!r}",
                    file=str(pack.root / "todo.txt"),
                    line=number,
                    hint="write '- [ ] task' or '- [x] task'",
                )
            )
        elif strict and len(text) < 3:
            findings.append(
                Finding.warning("TODO002", "task text is very short", file=str(pack.root / "todo.txt"), line=number)
            )
    return findings


@hookimpl
def agentpack_query(pack, request):
    if pack.format != FORMAT:
        return None
    from agentpack.kernel.packtypes import Citation, QueryResponse

    words = set(request.question.lower().split())
    hits = [(n, t) for n, t, d in read_items(pack.root) if d is not None and words & set(t.lower().split())]
    hits = hits[: request.top_k]
    return QueryResponse(
        format=FORMAT,
        answer="; ".join(t for _, t in hits) or None,
        citations=[Citation(label=f"todo.txt#L{n}", path="todo.txt", line_start=n, line_end=n) for n, _ in hits],
        payload={"matches": [{"line": n, "text": t} for n, t in hits]},
    )


@hookimpl
def agentpack_evaluate(pack, options):
    if pack.format != FORMAT:
        return None
    from agentpack.kernel.models import AssertionResult, CaseResult, EvalReport, SuiteResult

    cases = [
        CaseResult(
            id=f"L{n}",
            name=t,
            status="passed" if d else "failed",
            file="todo.txt",
            line=n,
            assertions=[
                AssertionResult(
                    name="done", passed=bool(d), expected=True, actual=bool(d), message="" if d else "not done yet"
                )
            ],
        )
        for n, t, d in read_items(pack.root)
        if d is not None
    ]
    return EvalReport(
        name=pack.name or "todo", format=FORMAT, path=str(pack.path), suites=[SuiteResult(id="todo", cases=cases)]
    )


@hookimpl
def agentpack_register_reporters(register):
    register(
        Reporter(
            name="count",
            description="just the number of findings",
            render=lambda report: f"{sum(len(i.findings) for i in report.items)}\n",
        )
    )


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
def stats(path: Path) -> None:
    """Count open and done items in PATH's todo.txt."""
    items = [d for _, _, d in read_items(path) if d is not None]
    click.echo(f"{items.count(True)} done, {items.count(False)} open")


@hookimpl
def agentpack_register_commands(register):
    register(CommandSpec(name="todo-stats", target=stats, help="Count open and done to-do items."))


@hookimpl
def agentpack_register_mcp_tools(register, context):
    def count(arguments):
        items = [d for _, _, d in read_items(Path(arguments["path"])) if d is not None]
        return {"done": items.count(True), "open": items.count(False)}

    register(
        McpTool(
            name="sample_count_todos",
            description="Count open and done items of a to-do pack.",
            input_schema={
                "type": "object",
                "properties": {"path": {"type": "string", "description": "The to-do pack's folder."}},
                "required": ["path"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {"done": {"type": "integer"}, "open": {"type": "integer"}},
                "required": ["done", "open"],
            },
            handler=count,
            hints=READ_ONLY,
        )
    )


@hookimpl
def agentpack_register_run_exporters(register):
    def export(runs, out, options):
        for run in runs:
            out.write(f"{run.id} {run.status} {run.passed}/{run.total}\n")

    register(RunExporter(name="todo-lines", description="one line per run", export=export, suffix=".todo"))


@hookimpl
def agentpack_register_run_views(register):
    def render(run):
        from agentpack.results.viewer.html import tag

        open_items = [c.name or c.id for c in run.cases if c.status != "passed"]
        return tag("p", f"{len(open_items)} open: {', '.join(open_items) or 'none'}", class_="todo-open")

    register(RunView(name="todo-open", title="Open items", formats=(FORMAT,), render=render))
