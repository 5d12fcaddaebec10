"""Inline SVG charts: well-formed, self-contained, and stating their numbers."""

import xml.etree.ElementTree as ET

import pytest

from agentpack.results import charts


def parse(svg):
    root = ET.fromstring(svg)
    assert root.tag == "svg" and root.get("role") == "img"
    assert root.find("title").text == root.get("aria-label")
    assert "href" not in svg and "<script" not in svg and "style=" not in svg
    return root


def test_pass_rate_bar():
    root = parse(charts.pass_rate_bar(6, 2, 1, 1))
    assert root.get("aria-label") == "pass rate 67%: 6 passed, 2 failed, 1 errors, 1 skipped"
    assert (root.get("data-passed"), root.get("data-skipped")) == ("6", "1")
    fills = [r.get("fill") for r in root.iter("rect")]
    assert fills == [charts.PASS, charts.FAIL, charts.ERROR, charts.SKIP]
    assert "0%" in charts.pass_rate_bar(0, 0)


def test_stacked_bars_per_suite():
    root = parse(charts.stacked_bars([("smoke", 3, 1, 0, 0), ("a <very> long suite name that goes on", 1, 0, 0, 1)]))
    assert root.get("data-rows") == "2"
    texts = [t.text for t in root.iter("text") if t.text]
    assert "3/4 75%" in texts and "1/2 100%" in texts
    assert any(t.endswith("…") for t in texts)


@pytest.mark.parametrize("values", [[5.0], [1, 1, 1], [1, 2, 3, 50, 51, 100]])
def test_histogram(values):
    root = parse(charts.histogram(values, unit="ms"))
    bars = [r for r in root.iter("rect")]
    assert root.get("data-count") == str(len(values))
    assert sum(int(r.find("title").text.split()[0]) for r in bars) == len(values)


def test_empty_charts_say_so():
    for svg in (charts.histogram([]), charts.line_chart([]), charts.bar_chart([])):
        assert "no data" in parse(svg).get("aria-label")


def test_line_and_bar_charts_over_runs():
    root = parse(charts.line_chart([("#1", 1.0), ("#2", 0.5), ("#3", 0.75)]))
    assert root.get("aria-label") == "pass rate over 3 runs: from 100% to 75%"
    assert len(list(root.iter("circle"))) == 3
    assert parse(charts.line_chart([("#1", 0.4)])).get("data-points") == "1"
    bars = parse(charts.bar_chart([("#1", 1200), ("#2", 900)]))
    assert bars.get("aria-label") == "tokens over 2 runs: from 1,200 to 900"


def test_breakdown_bars_stack_parts_and_mark_the_total():
    rows = [("everything::skills/misc/everything", [0.6, 0.0, 0.0, 0.1], 0.35), ("web-search", [0.6, 0.2, 0.1, 0.1], 1)]
    root = parse(charts.breakdown(rows, ["contract", "desc", "name", "runtime"], title="scores"))
    assert root.get("data-rows") == "2" and root.get("aria-label") == "scores: " + "; ".join(
        ["everything::skills/misc/everything 0.350", "web-search 1.000"]
    )
    segments = [r for r in root.iter("rect") if r.find("title") is not None]
    assert len(segments) == 2 + 4  # zero parts are not drawn
    assert [t.text for t in root.iter("text")][:4] == ["contract", "desc", "name", "runtime"]
    assert len(list(root.iter("line"))) == 2
    assert parse(charts.breakdown([], ["a"])).get("data-rows") == "0"
