"""Charts as inline SVG: no script, no stylesheet, no network, so a report file stays self-contained.

The ``<svg>`` elements are for embedding in HTML (which needs no ``xmlns``), not standalone files.

Each function returns one ``<svg>`` element with a ``<title>`` and an
``aria-label`` that state the numbers in words, and ``data-*`` attributes with
the same numbers for tests and scripts. Colours are the report's: pass green,
fail red, error purple, skipped grey.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

PASS, FAIL, ERROR, SKIP = "#2da44e", "#cf222e", "#8250df", "#8c959f"
INK, GRID, ACCENT = "#57606a", "#d0d7de", "#0969da"
STATUS_COLOURS = (("passed", PASS), ("failed", FAIL), ("errors", ERROR), ("skipped", SKIP))
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


def _svg(width: int, height: int, label: str, body: str, kind: str, data: str = "") -> str:
    text = escape(label)
    return (
        f'<svg class="chart chart-{kind}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{text}"{data}><title>{text}</title>{body}</svg>'
    )


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def pass_rate_bar(passed: int, failed: int, errors: int = 0, skipped: int = 0, *, width: int = 360) -> str:
    """One stacked bar of case outcomes, with the pass rate (of the cases that ran) written beside it."""
    total = passed + failed + errors + skipped
    ran = total - skipped
    rate = passed / ran if ran else 0.0
    label = f"pass rate {rate:.0%}: {passed} passed, {failed} failed, {errors} errors, {skipped} skipped"
    bar_width = width - 70
    x = 0.0
    parts = []
    for (name, colour), count in zip(STATUS_COLOURS, (passed, failed, errors, skipped), strict=True):
        if not count:
            continue
        w = bar_width * count / total
        parts.append(
            f'<rect x="{_num(x)}" y="4" width="{_num(w)}" height="18" fill="{colour}">'
            f"<title>{count} {name}</title></rect>"
        )
        x += w
    if not total:
        parts.append(f'<rect x="0" y="4" width="{bar_width}" height="18" fill="{GRID}"/>')
    parts.append(f'<text x="{bar_width + 8}" y="18" {FONT} fill="{INK}">{rate:.0%}</text>')
    data = f' data-passed="{passed}" data-failed="{failed}" data-errors="{errors}" data-skipped="{skipped}"'
    return _svg(width, 26, label, "".join(parts), "passrate", data)


def stacked_bars(rows: Sequence[tuple[str, int, int, int, int]], *, width: int = 480) -> str:
    """Per-suite breakdown: one stacked bar per ``(label, passed, failed, errors, skipped)`` row."""
    label_width, row_height = 150, 22
    bar_width = width - label_width - 60
    height = row_height * max(len(rows), 1) + 4
    most = max((sum(r[1:]) for r in rows), default=0) or 1
    parts = []
    for i, (name, *counts) in enumerate(rows):
        y = 4 + i * row_height
        short = name if len(name) <= 24 else name[:23] + "…"
        parts.append(
            f'<text x="0" y="{y + 13}" {FONT} fill="{INK}">{escape(short)}<title>{escape(name)}</title></text>'
        )
        x = float(label_width)
        for (status, colour), count in zip(STATUS_COLOURS, counts, strict=True):
            if not count:
                continue
            w = bar_width * count / most
            parts.append(
                f'<rect x="{_num(x)}" y="{y}" width="{_num(w)}" height="16" fill="{colour}">'
                f"<title>{escape(name)}: {count} {status}</title></rect>"
            )
            x += w
        ran = sum(counts) - counts[3]
        rate = f"{counts[0] / ran:.0%}" if ran else "–"
        parts.append(
            f'<text x="{_num(x + 6)}" y="{y + 13}" {FONT} fill="{INK}">{counts[0]}/{sum(counts)} {rate}</text>'
        )
    label = "per-suite results: " + "; ".join(f"{r[0]} {r[1]} of {sum(r[1:])} passed" for r in rows)
    return _svg(width, height, label, "".join(parts), "suites", f' data-rows="{len(rows)}"')


def _bins(values: Sequence[float], count: int) -> tuple[list[int], float, float]:
    low, high = min(values), max(values)
    if high == low:
        return [len(values)], low, high
    step = (high - low) / count
    counts = [0] * count
    for v in values:
        counts[min(int((v - low) / step), count - 1)] += 1
    return counts, low, high


def histogram(
    values: Sequence[float],
    *,
    title: str = "latency",
    unit: str = "ms",
    bins: int = 12,
    width: int = 480,
    height: int = 140,
) -> str:
    """A histogram of ``values`` (for example case latencies in ms) with the count above each bar."""
    if not values:
        return _svg(width, 30, f"{title}: no data", f'<text x="0" y="18" {FONT} fill="{INK}">no data</text>', "hist")
    counts, low, high = _bins(values, min(bins, len(values)))
    plot_h = height - 34
    most = max(counts)
    bar_w = width / len(counts)
    parts = [f'<line x1="0" y1="{plot_h + 14}" x2="{width}" y2="{plot_h + 14}" stroke="{GRID}"/>']
    step = (high - low) / len(counts) if high > low else 0.0
    for i, count in enumerate(counts):
        h = plot_h * count / most if most else 0
        x = i * bar_w
        lo, hi = low + i * step, low + (i + 1) * step
        parts.append(
            f'<rect x="{_num(x + 1)}" y="{_num(plot_h + 14 - h)}" width="{_num(max(bar_w - 2, 1))}" '
            f'height="{_num(h)}" fill="{ACCENT}"><title>{count} between {_num(lo)} and {_num(hi)} {unit}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{_num(x + bar_w / 2)}" y="{_num(plot_h + 10 - h)}" text-anchor="middle" {FONT} '
                f'fill="{INK}">{count}</text>'
            )
    parts.append(f'<text x="0" y="{height - 4}" {FONT} fill="{INK}">{_num(low)} {unit}</text>')
    parts.append(f'<text x="{width}" y="{height - 4}" text-anchor="end" {FONT} fill="{INK}">{_num(high)} {unit}</text>')
    label = f"{title}: {len(values)} values from {_num(low)} to {_num(high)} {unit}"
    return _svg(width, height, label, "".join(parts), "hist", f' data-count="{len(values)}"')


def line_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str = "pass rate",
    y_max: float = 1.0,
    fmt: Callable[[float], str] = lambda v: f"{v:.0%}",
    width: int = 560,
    height: int = 180,
) -> str:
    """Values over runs (``(label, value)`` oldest first), for example the pass rate per run."""
    if not points:
        return _svg(width, 30, f"{title}: no data", f'<text x="0" y="18" {FONT} fill="{INK}">no data</text>', "line")
    left, top, bottom = 40, 10, 24
    plot_w, plot_h = width - left - 10, height - top - bottom
    top_value = max(y_max, *(v for _, v in points)) or 1.0
    n = len(points)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)
        return x, top + plot_h * (1 - v / top_value)

    parts = []
    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" y1="{_num(y)}" x2="{width - 10}" y2="{_num(y)}" stroke="{GRID}"/>')
        tick = fmt(top_value * frac)
        parts.append(f'<text x="{left - 4}" y="{_num(y + 4)}" text-anchor="end" {FONT} fill="{INK}">{tick}</text>')
    coords = [xy(i, v) for i, (_, v) in enumerate(points)]
    parts.append(
        f'<polyline fill="none" stroke="{ACCENT}" stroke-width="2" '
        f'points="{" ".join(f"{_num(x)},{_num(y)}" for x, y in coords)}"/>'
    )
    for (name, value), (x, y) in zip(points, coords, strict=True):
        parts.append(
            f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3.5" fill="{ACCENT}"><title>{escape(name)}: {fmt(value)}</title>'
            "</circle>"
        )
    for i in sorted({0, n - 1}):
        x, _ = xy(i, 0)
        anchor = "start" if i == 0 and n > 1 else ("end" if n > 1 else "middle")
        parts.append(
            f'<text x="{_num(x)}" y="{height - 6}" text-anchor="{anchor}" {FONT} fill="{INK}">'
            f"{escape(points[i][0])}</text>"
        )
    label = f"{title} over {n} runs: from {fmt(points[0][1])} to {fmt(points[-1][1])}"
    return _svg(width, height, label, "".join(parts), "line", f' data-points="{n}"')


def bar_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str = "tokens",
    fmt: Callable[[float], str] = lambda v: f"{v:,.0f}",
    width: int = 560,
    height: int = 150,
) -> str:
    """One bar per ``(label, value)``, for example the tokens of each run."""
    if not points:
        return _svg(width, 30, f"{title}: no data", f'<text x="0" y="18" {FONT} fill="{INK}">no data</text>', "bars")
    plot_h = height - 36
    most = max(v for _, v in points) or 1.0
    bar_w = width / len(points)
    parts = [f'<line x1="0" y1="{plot_h + 14}" x2="{width}" y2="{plot_h + 14}" stroke="{GRID}"/>']
    for i, (name, value) in enumerate(points):
        h = plot_h * value / most
        x = i * bar_w
        parts.append(
            f'<rect x="{_num(x + 2)}" y="{_num(plot_h + 14 - h)}" width="{_num(max(bar_w - 4, 1))}" height="{_num(h)}" '
            f'fill="{ACCENT}"><title>{escape(name)}: {fmt(value)}</title></rect>'
        )
    parts.append(f'<text x="0" y="{height - 6}" {FONT} fill="{INK}">{escape(points[0][0])}</text>')
    parts.append(
        f'<text x="{width}" y="{height - 6}" text-anchor="end" {FONT} fill="{INK}">{escape(points[-1][0])}</text>'
    )
    parts.append(f'<text x="{width}" y="10" text-anchor="end" {FONT} fill="{INK}">max {fmt(most)}</text>')
    label = f"{title} over {len(points)} runs: from {fmt(points[0][1])} to {fmt(points[-1][1])}"
    return _svg(width, height, label, "".join(parts), "bars", f' data-points="{len(points)}"')


PARTS = ("#0969da", "#54aeff", "#bf8700", "#8250df", "#1a7f37", "#cf222e")
"""Colours of the parts of ``breakdown`` bars, in order."""


def breakdown(
    rows: Sequence[tuple[str, Sequence[float], float]],
    parts: Sequence[str],
    *,
    title: str = "score breakdown",
    fmt: Callable[[float], str] = lambda v: f"{v:.3f}",
    width: int = 560,
) -> str:
    """One horizontal bar per ``(label, part values, total)`` row, its parts stacked and named by ``parts``
    (a legend above), the total written at its end; for example each candidate's weighted scores."""
    label_width, row_height, legend = 170, 22, 20
    bar_width = width - label_width - 60
    height = legend + row_height * max(len(rows), 1) + 4
    most = max((max(sum(max(v, 0.0) for v in values), total) for _, values, total in rows), default=0.0) or 1.0
    body = []
    x = 0
    for i, name in enumerate(parts):
        colour = PARTS[i % len(PARTS)]
        body.append(f'<rect x="{x}" y="3" width="10" height="10" fill="{colour}"/>')
        body.append(f'<text x="{x + 14}" y="12" {FONT} fill="{INK}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    for i, (name, values, total) in enumerate(rows):
        y = legend + 4 + i * row_height
        short = name if len(name) <= 28 else name[:27] + "…"
        body.append(f'<text x="0" y="{y + 13}" {FONT} fill="{INK}">{escape(short)}<title>{escape(name)}</title></text>')
        left = float(label_width)
        for j, value in enumerate(values):
            if value <= 0:
                continue
            w = bar_width * value / most
            body.append(
                f'<rect x="{_num(left)}" y="{y}" width="{_num(w)}" height="16" fill="{PARTS[j % len(PARTS)]}">'
                f"<title>{escape(name)}: {escape(parts[j])} {fmt(value)}</title></rect>"
            )
            left += w
        end = label_width + bar_width * max(total, 0.0) / most
        body.append(f'<line x1="{_num(end)}" y1="{y - 2}" x2="{_num(end)}" y2="{y + 18}" stroke="{INK}"/>')
        body.append(f'<text x="{_num(max(left, end) + 6)}" y="{y + 13}" {FONT} fill="{INK}">{fmt(total)}</text>')
    label = f"{title}: " + "; ".join(f"{name} {fmt(total)}" for name, _, total in rows)
    return _svg(width, height, label, "".join(body), "breakdown", f' data-rows="{len(rows)}"')
