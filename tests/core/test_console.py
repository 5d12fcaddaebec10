"""agentpack.io.console: progress bars on a TTY (not quiet; NO_COLOR keeps them), heartbeats off one,
notes on stderr."""

from __future__ import annotations

import io
import sys

import pytest

from agentpack.io import console


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def tty(monkeypatch):
    """Call it in the test body to make stderr a terminal (pytest swaps sys.stderr after fixtures run)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(console, "QUIET", False)

    def make() -> FakeTty:
        stream = FakeTty()
        monkeypatch.setattr(sys, "stderr", stream)
        return stream

    return make


def test_progress_is_quiet_off_a_terminal_for_short_work(capsys, monkeypatch):
    monkeypatch.setattr(console, "QUIET", False)
    assert not console.progress_enabled()  # pytest captures stderr: not a TTY
    with console.progress("indexing", total=3) as bar:
        bar.advance()
        bar.update(total=4, description="more")
    assert capsys.readouterr() == ("", "")


def test_progress_on_a_terminal(capsys, tty):
    stream = tty()
    assert console.progress_enabled()
    with console.progress("indexing", total=2) as bar:
        assert type(bar).__name__ == "_RichProgress"
        bar.advance()
        bar.update(description="indexing more", total=3)
        bar.advance(2)
    assert capsys.readouterr().out == ""  # results own stdout; progress never writes there
    assert "indexing" in stream.getvalue()


@pytest.mark.parametrize("setting", ["quiet", "dumb"])
def test_progress_bars_disabled_by_settings(tty, monkeypatch, setting):
    stream = tty()
    if setting == "quiet":
        monkeypatch.setattr(console, "QUIET", True)
    else:
        monkeypatch.setenv("TERM", "dumb")
    assert not console.progress_enabled()
    with console.progress("x", total=1) as bar:
        assert type(bar).__name__ == ("_NullProgress" if setting == "quiet" else "_Heartbeat")
    assert stream.getvalue() == ""


def test_no_color_keeps_progress_bars(tty, monkeypatch):
    stream = tty()
    monkeypatch.setenv("NO_COLOR", "1")
    assert console.progress_enabled()
    with console.progress("indexing", total=1) as bar:
        bar.advance()
    assert "indexing" in stream.getvalue() and "\x1b[3" not in stream.getvalue()


def test_a_heartbeat_off_a_terminal_shows_life(capsys, monkeypatch):
    import time

    monkeypatch.setattr(console, "QUIET", False)
    monkeypatch.setenv("AGENTPACK_HEARTBEAT_S", "0.05")
    with console.progress("indexing docs", total=4) as bar:
        bar.advance(3)
        time.sleep(0.2)
        bar.update(description="embedding")
        time.sleep(0.12)
    lines = capsys.readouterr().err.splitlines()
    assert lines and lines[0].startswith("indexing docs: 3/4 (") and lines[-1].startswith("embedding: 3/4")
    monkeypatch.setenv("AGENTPACK_HEARTBEAT_S", "0")
    with console.progress("x", total=1) as bar:
        assert type(bar).__name__ == "_NullProgress"
    monkeypatch.setattr(console, "QUIET", True)
    monkeypatch.setenv("AGENTPACK_HEARTBEAT_S", "0.01")
    with console.progress("x", total=1) as bar:
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


def test_note_goes_to_stderr_unless_quiet(capsys, monkeypatch):
    monkeypatch.setattr(console, "QUIET", False)
    console.note("building index")
    assert capsys.readouterr() == ("", "building index\n")
    monkeypatch.setattr(console, "QUIET", True)
    console.note("hidden")
    assert capsys.readouterr() == ("", "")


def test_phases_on_a_terminal_each_start_their_own_count(tty):
    stream = tty()
    with console.progress("ecp build", total=None) as bar:
        bar.phase("scanning docs")
        bar.phase("chunking docs-keyword", total=2)
        bar.advance(2)
        with console.progress("eval gate", total=3) as inner:  # nested: a second line of the same display
            inner.advance()
            assert len(console._LIVE) == 1
        bar.phase("writing docs-keyword: 12 chunks")
    assert console._LIVE == []
    assert "ecp build" in stream.getvalue() or "writing docs-keyword" in stream.getvalue()


def test_heartbeats_report_the_current_phase_and_the_innermost_work(capsys, monkeypatch):
    import time

    monkeypatch.setattr(console, "QUIET", False)
    monkeypatch.setenv("AGENTPACK_HEARTBEAT_S", "0.04")
    with console.progress("ecp refresh") as bar:
        bar.phase("chunking docs", total=10)
        bar.advance(4)
        time.sleep(0.15)
        with console.progress("eval gate", total=3) as inner:
            inner.advance(2)
            time.sleep(0.15)
        bar.phase("publishing")
        time.sleep(0.15)
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("chunking docs: 4/10 (") for line in lines)
    assert any(line.startswith("eval gate: 2/3 (") for line in lines)
    assert lines[-1].startswith("publishing (")
    assert console._LIVE == []


def test_style_colours_words_for_a_terminal_only(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert console.style("FAIL", "failed") == "FAIL"  # outside styling: plain
    with console.styling(FakeTty()):
        assert console.style("FAIL", "failed") == "\x1b[31m\x1b[1mFAIL\x1b[0m"
        assert console.style("PASS", "passed") == "\x1b[32mPASS\x1b[0m"
        assert console.style("x", "unknown") == "x"
    with console.styling(io.StringIO()):
        assert console.style("PASS", "passed") == "PASS"
    monkeypatch.setenv("NO_COLOR", "1")
    with console.styling(FakeTty()):
        assert console.style("PASS", "passed") == "PASS"


def test_the_text_reporter_colours_on_a_terminal_and_never_in_files(monkeypatch, tmp_path):
    from agentpack.kernel.models import CaseResult, EvalReport, Report, SuiteResult
    from agentpack.results.reporters import text

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    cases = [CaseResult(id="a", status="passed"), CaseResult(id="b", status="failed", message="no")]
    report = Report(
        command="eval", evaluations=[EvalReport(name="p", format="x", suites=[SuiteResult(id="s", cases=cases)])]
    )
    plain = text.render(report)
    assert "\x1b[" not in plain and "    FAIL b - no" in plain
    with console.styling(FakeTty()):
        coloured = text.render(report)
    assert "\x1b[31m\x1b[1mFAIL\x1b[0m b - no" in coloured and "\x1b[32mPASS\x1b[0m a" in coloured


def _on_a_terminal(args: list[str], env: dict[str, str]) -> bytes:
    """What ``agentpack ARGS`` writes to a real terminal (stdout and stderr on one pseudo-terminal)."""
    import os
    import subprocess

    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "agentpack"), *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        close_fds=True,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=300) == 0, out[-2000:]
    return out


def test_no_color_removes_colour_not_progress_on_a_real_terminal(tmp_path):
    """End to end: eval on a terminal shows its progress bar and coloured PASS; NO_COLOR keeps the bar, not colour."""
    import os
    import re
    import shutil
    from pathlib import Path

    pack = tmp_path / "pack"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "ecp" / "conformance-pack", pack)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(TERM="xterm-256color", COLUMNS="100", AGENTPACK_RUNS=str(tmp_path / "runs.sqlite"))
    colour = re.compile(rb"\x1b\[[0-9;]*m")
    coloured = _on_a_terminal(["eval", str(pack)], env)
    plain = _on_a_terminal(["eval", str(pack)], {**env, "NO_COLOR": "1"})
    for out in (coloured, plain):
        assert b"evals of conformance-pack" in out and b"/7" in out  # the progress bar, with its count
    assert colour.search(coloured) and not colour.search(plain)


def test_printable_escapes_control_characters_but_keeps_colour_newline_and_tab() -> None:
    text = "a\x1b]0;title\x07b \x1b[1;31mred\x1b[0m\r\n\tc\x9b2J\x7f\x00"
    expected = "a\\u001b]0;title\\u0007b \x1b[1;31mred\x1b[0m\\u000d\n\tc\\u009b2J\\u007f\\u0000"
    assert console.printable(text) == expected
    assert console.printable("plain text") == "plain text"


def test_guarded_output_escapes_text_and_restores_the_streams(capsys: pytest.CaptureFixture[str]) -> None:
    """Escapes are JSON's: a JSON document holding DEL or a C1 character stays valid through the guard."""
    import sys

    before = sys.stdout, sys.stderr
    with console.guarded_output():
        print("name\x1b]52;c;eA==\x07")
        print("warn\x1b[2J", file=sys.stderr)
        assert console.unguarded(sys.stdout) is before[0]
    assert (sys.stdout, sys.stderr) == before
    out, err = capsys.readouterr()
    assert out == "name\\u001b]52;c;eA==\\u0007\n" and err == "warn\\u001b[2J\n"


def test_json_through_the_guard_stays_valid_and_means_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import sys

    value = {"name": "agent\x7f\x9b\u2028", "pattern": "^(\x7f?!/)"}
    with console.guarded_output():
        sys.stdout.write(json.dumps(value, ensure_ascii=False))
    printed = capsys.readouterr().out
    assert "\x7f" not in printed and "\x9b" not in printed and json.loads(printed) == value
