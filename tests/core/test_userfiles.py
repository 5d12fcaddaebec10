"""agentpack.io.userfiles: where a file is expected, anything else is an error naming what is there, never a hang."""

import os

import pytest

from agentpack.io.errors import PackError, YamlError
from agentpack.io.userfiles import check_file, optional_file, read_bytes, read_text, what_is


@pytest.fixture
def things(tmp_path):
    (tmp_path / "file.txt").write_bytes(b"a\r\nb\rc\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to("loop")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "latin1").write_bytes(b"ok\ncaf\xe9\n")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("file.txt", "a file"),
        ("folder", "a folder"),
        ("dangling", "a dangling or looping symbolic link"),
        ("loop", "a dangling or looping symbolic link"),
        ("fifo", "a special file (a FIFO, socket or device)"),
        ("missing", "nothing (no such file)"),
    ],
)
def test_what_is(things, name, found):
    assert what_is(things / name) == found


def test_an_optional_file_is_absent_or_a_file(things):
    assert optional_file(things / "file.txt") is True
    assert optional_file(things / "missing") is False
    for name in ("folder", "dangling", "loop", "fifo"):
        with pytest.raises(YamlError, match=f"{name}: expected a YAML file, found "):
            optional_file(things / name, display=name, error=YamlError, expected="a YAML file")
    with pytest.raises(PackError, match="expected a file, found nothing"):
        check_file(things / "missing")


def test_reading_never_blocks_on_a_fifo_and_says_what_is_there(things):
    assert read_bytes(things / "file.txt") == b"a\r\nb\rc\n"
    assert read_text(things / "file.txt") == "a\nb\nc\n"  # universal newlines, as Path.read_text
    for name, message in [
        ("folder", "expected a file, found a folder"),
        ("dangling", "expected a file, found a dangling or looping symbolic link"),
        ("loop", "expected a file, found a dangling or looping symbolic link"),
        ("fifo", "expected a file, found a special file"),
        ("missing", "cannot read: no such file"),
    ]:
        with pytest.raises(PackError, match=message):
            read_bytes(things / name)
    with pytest.raises(PackError, match="more than the limit of 4") as info:
        read_bytes(things / "file.txt", max_bytes=4)
    with pytest.raises(PackError, match="not UTF-8") as info:
        read_text(things / "latin1")
    assert info.value.line == 2


@pytest.mark.parametrize("kind", ["folder", "dangling", "fifo"])
def test_a_skill_md_that_is_not_a_file_is_an_error_not_a_missing_file(tmp_path, kind):
    from agentpack.testing import run_cli

    skill = tmp_path / "demo"
    skill.mkdir()
    target = skill / "SKILL.md"
    make = {"folder": target.mkdir, "dangling": lambda: target.symlink_to("nowhere"), "fifo": lambda: os.mkfifo(target)}
    make[kind]()
    result = run_cli(["validate", skill, "--json"])
    assert result.exit_code == 1, result.stderr
    finding = result.json()["items"][0]["findings"][0]
    assert finding["code"] == "SKL001" and "expected a Markdown file, found" in finding["message"]


def test_open_regular_refuses_a_fifo_and_a_folder_without_blocking(tmp_path):

    from agentpack.io.userfiles import NotAFileError, open_regular

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotAFileError, match="found a special file"):
        open_regular(fifo)
    with pytest.raises(NotAFileError, match="found a folder"):
        open_regular(tmp_path)
    (tmp_path / "f.txt").write_text("hi")
    with open_regular(tmp_path / "f.txt", "r", encoding="utf-8") as handle:
        assert handle.read() == "hi"
