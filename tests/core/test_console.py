"""agentpack.console: progress only on a TTY (and not quiet, not NO_COLOR), notes on stderr."""

from __future__ import annotations

import io
import sys

import pytest

from agentpack import console


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


def test_progress_is_a_no_op_off_a_terminal(capsys, monkeypatch):
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


@pytest.mark.parametrize("setting", ["quiet", "no_color", "dumb"])
def test_progress_disabled_by_settings(tty, monkeypatch, setting):
    stream = tty()
    if setting == "quiet":
        monkeypatch.setattr(console, "QUIET", True)
    elif setting == "no_color":
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.setenv("TERM", "dumb")
    assert not console.progress_enabled()
    with console.progress("x", total=1) as bar:
        assert type(bar).__name__ == "_NullProgress"
    assert stream.getvalue() == ""


def test_note_goes_to_stderr_unless_quiet(capsys, monkeypatch):
    monkeypatch.setattr(console, "QUIET", False)
    console.note("building index")
    assert capsys.readouterr() == ("", "building index\n")
    monkeypatch.setattr(console, "QUIET", True)
    console.note("hidden")
    assert capsys.readouterr() == ("", "")
