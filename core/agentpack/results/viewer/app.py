"""The starlette application of ``agentpack view``: pages, a small JSON API and the bundled assets.

Read-only: each request opens the store, reads, and closes it, so runs recorded
while the viewer is open show up on the next page load.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from agentpack.kernel.registry import RunView
from agentpack.kernel.runtypes import Run
from agentpack.results.runs import compare as comparing
from agentpack.results.runs import trend as trending
from agentpack.results.runs.store import RunStore, StoreError, open_store
from agentpack.results.status import of_run
from agentpack.results.viewer import assets, pages
from agentpack.results.viewer.html import Html

CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'"


def _int(value: str | None, default: int, *, low: int = 1, high: int = 1000) -> int:
    try:
        return max(low, min(high, int(value))) if value else default
    except ValueError:
        return default


def create_app(store_path: Path, views: Sequence[RunView] = ()) -> Starlette:
    """The viewer for the store at ``store_path``; ``views`` are the registered per-format run views."""

    @contextmanager
    def store() -> Iterator[RunStore | None]:
        if not store_path.is_file():
            yield None
            return
        with open_store(store_path, create=False) as opened:
            yield opened

    def page(title: str, body: Html, status: int = 200) -> HTMLResponse:
        response = HTMLResponse(pages.layout(title, body, store=str(store_path)), status_code=status)
        response.headers["Content-Security-Policy"] = CSP
        return response

    def not_found(message: str) -> HTMLResponse:
        return page("not found", Html(pages.empty(message, "")), 404)

    def guarded(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def run(request: Request) -> Response:
            try:
                return handler(request)
            except StoreError as exc:
                if request.url.path.startswith("/api/"):
                    return JSONResponse({"ok": False, "error": exc.message}, status_code=404)
                return not_found(exc.message)

        return run

    def filters_of(request: Request) -> dict[str, str | None]:
        return {name: request.query_params.get(name) or None for name in pages.FILTERS}

    def selection(request: Request) -> dict[str, Any]:
        f = filters_of(request)
        return {"search" if name == "q" else name: value for name, value in f.items()}

    def find(opened: RunStore, request: Request, *, default_limit: int = 200) -> list[Run]:
        limit = _int(request.query_params.get("limit"), default_limit)
        offset = (_int(request.query_params.get("page"), 1, high=10**6) - 1) * limit
        return opened.find(limit=limit, offset=offset, **selection(request))

    def index(request: Request) -> Response:
        filters = filters_of(request)
        with store() as opened:
            if opened is None:
                return page("runs", pages.run_list([], filters, {}))
            found = find(opened, request, default_limit=pages.PER_PAGE)
            total = opened.count_found(**selection(request))
            choices = {name: opened.distinct(name) for name in ("format", "command", "status", "input", "tag")}
        per_page = _int(request.query_params.get("limit"), pages.PER_PAGE)
        current = _int(request.query_params.get("page"), 1, high=10**6)
        return page("runs", pages.run_list(found, filters, choices, page=current, total=total, per_page=per_page))

    def run_page(request: Request) -> Response:
        run_id = int(request.path_params["run_id"])
        with store() as opened:
            if opened is None:
                return not_found("no runs recorded yet")
            run = opened.get(run_id)
            previous = opened.previous(run)
        return page(f"run #{run.id}", pages.run_page(run, views, previous))

    def case_page(request: Request) -> Response:
        run_id, index = int(request.path_params["run_id"]), int(request.path_params["index"])
        with store() as opened:
            if opened is None:
                return not_found("no runs recorded yet")
            run = opened.get(run_id)
        body = pages.case_page(run, index)
        if body is None:
            return not_found(f"run #{run_id} has no case {index}")
        return page(f"run #{run.id} case {index}", body)

    def export_page(request: Request) -> Response:
        from agentpack.results.viewer.standalone import run_document

        with store() as opened:
            if opened is None:
                return not_found("no runs recorded yet")
            run = opened.get(int(request.path_params["run_id"]))
        response = HTMLResponse(run_document(run, views))
        response.headers["Content-Disposition"] = f'attachment; filename="run-{run.id}.html"'
        return response

    def pair(opened: RunStore, request: Request) -> tuple[Any, Any] | None:
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if a and b:
            return opened.get(opened.resolve(a)), opened.get(opened.resolve(b))
        if a or b:
            head = opened.get(opened.resolve(a or b or ""))
        else:
            latest = opened.find(limit=1)
            if not latest:
                return None
            head = opened.get(latest[0].id)
        before = opened.previous(head)
        return (opened.get(before.id), head) if before else None

    def compare_page(request: Request) -> Response:
        with store() as opened:
            if opened is None:
                return page("compare", pages.compare_picker([], "no runs recorded yet"))
            recent = opened.find(limit=50)
            found = pair(opened, request)
        if found is None:
            return page("compare", pages.compare_picker(recent, "pick two runs to compare"))
        base, head = found
        result = comparing.compare(base, head)
        return page(f"compare #{base.id} and #{head.id}", pages.compare_page(result, base, head, recent))

    def trend_page(request: Request) -> Response:
        input_key = request.query_params.get("input")
        with store() as opened:
            if opened is None:
                return page("trends", pages.trend_index([]))
            if not input_key:
                return page("trends", pages.trend_index(opened.inputs()))
            history = opened.history(input_key, last=_int(request.query_params.get("last"), 20, low=2))
        if not history:
            return not_found(f"no runs of '{input_key}' recorded")
        return page(f"trend of {input_key}", pages.trend_page(trending.trend(history), history))

    def api_runs(request: Request) -> Response:
        with store() as opened:
            found = [] if opened is None else find(opened, request)
        return JSONResponse({"ok": True, "runs": [{**r.summary_json(), **of_run(r)} for r in found]})

    def api_run(request: Request) -> Response:
        with store() as opened:
            if opened is None:
                raise StoreError("no runs recorded yet")
            run = opened.get(int(request.path_params["run_id"]))
        return JSONResponse({"ok": True, "run": {**run.to_json(), **of_run(run)}})

    def api_compare(request: Request) -> Response:
        with store() as opened:
            found = None if opened is None else pair(opened, request)
        if found is None:
            raise StoreError("no two runs to compare")
        return JSONResponse(comparing.compare(*found))

    def api_trend(request: Request) -> Response:
        input_key = request.query_params.get("input") or ""
        with store() as opened:
            history = (
                []
                if opened is None
                else opened.history(input_key, last=_int(request.query_params.get("last"), 20, low=2))
            )
        if not history:
            raise StoreError(f"no runs of '{input_key}' recorded")
        return JSONResponse(trending.trend(history))

    def css(request: Request) -> Response:
        return Response(assets.CSS, media_type="text/css")

    def js(request: Request) -> Response:
        return Response(assets.JS, media_type="text/javascript")

    routes = [
        Route("/", guarded(index)),
        Route("/runs/{run_id:int}", guarded(run_page)),
        Route("/runs/{run_id:int}/cases/{index:int}", guarded(case_page)),
        Route("/runs/{run_id:int}/export", guarded(export_page)),
        Route("/compare", guarded(compare_page)),
        Route("/trend", guarded(trend_page)),
        Route("/api/runs", guarded(api_runs)),
        Route("/api/runs/{run_id:int}", guarded(api_run)),
        Route("/api/compare", guarded(api_compare)),
        Route("/api/trend", guarded(api_trend)),
        Route("/static/app.css", css),
        Route("/static/app.js", js),
    ]

    async def missing(request: Request, exc: Exception) -> Response:
        return not_found(f"no page at {request.url.path}")

    return Starlette(routes=routes, exception_handlers={404: missing})
