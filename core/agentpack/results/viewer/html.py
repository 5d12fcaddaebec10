"""HTML building blocks for the viewer's pages and for plugins' run views (``RunView.render``).

Everything given as a plain value is escaped; an ``Html`` value is inserted
as it is. Build fragments with these helpers and a view cannot inject markup
from a report by accident.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from agentpack.results.status import TONE


class Html(str):
    """Markup that is already safe: inserted without escaping. ``Html + Html`` is ``Html``; adding plain
    text gives plain text (escaped where it is inserted), so safe markup never vouches for text."""

    __slots__ = ()

    def __add__(self, other: str) -> str:
        joined = str.__add__(self, other)
        return Html(joined) if isinstance(other, Html) else joined


def esc(value: Any) -> Html:
    """``value`` as safe HTML: ``Html`` as it is, ``None`` as empty, anything else escaped text."""
    if isinstance(value, Html):
        return value
    return Html("" if value is None else escape(str(value)))


def join(parts: Iterable[Any]) -> Html:
    return Html("".join(esc(p) for p in parts))


def tag(element: str, body: Any = "", /, **attrs: Any) -> Html:
    """``<element attrs>body</element>``; attribute ``class_`` is ``class``, ``data_x`` is ``data-x``;
    ``True`` is a bare attribute, ``None`` and ``False`` leave it out."""
    rendered = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = key.rstrip("_").replace("_", "-")
        rendered.append(f" {key}" if value is True else f' {key}="{escape(str(value), quote=True)}"')
    return Html(f"<{element}{''.join(rendered)}>{esc(body)}</{element}>")


def json_text(value: Any) -> str:
    """Readable JSON: indented, UTF-8 kept, strings that hold JSON shown as the JSON they hold."""
    if isinstance(value, str):
        text: str = value
        stripped = text.strip()
        if not (stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]")):
            return text
        try:
            value = json.loads(stripped)
        except ValueError:
            return text
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def json_block(value: Any, *, label: str | None = None) -> Html:
    """A ``<pre>`` with ``value`` as readable JSON (a plain string as it is)."""
    block = tag("pre", json_text(value), class_="json")
    return Html(tag("div", label, class_="label") + block) if label else block


STATUS_CLASS = {
    **TONE,
    "ok": "pass",
    "errors": "error",
    "warning": "warn",
    "info": "info",
    "regression": "fail",
    "failing": "fail",
    "not enough history": "skip",
    "no regression": "pass",
    "no regressions": "pass",
}
"""The colour of each status word (``agentpack.results.status.TONE`` and a finding's severities)."""


def badge(status: str, label: str | None = None) -> Html:
    """A coloured status label (PASSED, FAILED, NOT RUN...): ``label`` (default ``status``) upper-cased,
    coloured as ``status``; a skipped case reads NOT RUN."""
    text = label if label is not None else ("not run" if status == "skipped" else status)
    return tag("span", text.upper(), class_=f"badge {STATUS_CLASS.get(status, 'skip')}", data_status=status)


def table(headers: Sequence[Any], rows: Iterable[Sequence[Any]], **attrs: Any) -> Html:
    head = join(tag("th", h) for h in headers)
    body = join(tag("tr", join(tag("td", cell) for cell in row)) for row in rows)
    return tag("table", Html(f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"), **attrs)


def facts(pairs: Iterable[tuple[str, Any]]) -> Html:
    """A definition list of ``(name, value)``; empty values are left out."""
    return tag(
        "dl", join(Html(tag("dt", k) + tag("dd", v)) for k, v in pairs if v not in (None, "", [], {})), class_="facts"
    )


def section(title: str, body: Any, **attrs: Any) -> Html:
    return tag("section", Html(tag("h2", title) + esc(body)), **attrs)


def link(href: str, text: Any, **attrs: Any) -> Html:
    return tag("a", text, href=href, **attrs)
