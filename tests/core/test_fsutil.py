"""agentpack.io.fsutil: atomic writes, directory swaps that never leave half a directory, a real lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from agentpack.io import fsutil
from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import (
    LockedError,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    file_lock,
    replace_directory,
)


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or ".old-" in p.name)


def test_atomic_writes(tmp_path):
    target = tmp_path / "sub" / "out.json"
    atomic_write_json(target, {"b": 1, "a": "é"})
    assert target.read_text(encoding="utf-8") == '{\n  "a": "é",\n  "b": 1\n}\n'
    atomic_write_text(target, "replaced")
    assert target.read_text() == "replaced"
    atomic_write_bytes(target, b"\x00\x01", mode=0o600)
    assert target.read_bytes() == b"\x00\x01" and (target.stat().st_mode & 0o777) == 0o600
    assert leftovers(target.parent) == []


class _Midway:
    """A file object that writes half of the data, then fails like a full disk."""

    def __init__(self, real):
        self.real = real

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()

    def write(self, data):
        self.real.write(data[: len(data) // 2])
        raise OSError(28, "No space left on device")


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    target.write_text('{"version": 1}')
    real_fdopen = os.fdopen
    monkeypatch.setattr(fsutil.os, "fdopen", lambda fd, mode: _Midway(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="No space left"):
        atomic_write_json(target, {"version": 2, "padding": "x" * 1000})
    assert json.loads(target.read_text()) == {"version": 1}
    assert leftovers(tmp_path) == []


def test_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "state.txt"
    target.write_text("old")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fsutil.os, "replace", refuse)
    with pytest.raises(PermissionError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def make_tree(path, marker):
    (path / "nested").mkdir(parents=True)
    (path / "marker.txt").write_text(marker)
    (path / "nested" / "file.txt").write_text(marker * 3)


def test_replace_directory_new_and_existing(tmp_path):
    target = tmp_path / "out" / "index"
    staged = tmp_path / "staged-1"
    make_tree(staged, "one")
    replace_directory(staged, target)
    assert (target / "marker.txt").read_text() == "one" and not staged.exists()
    staged = tmp_path / "staged-2"
    make_tree(staged, "two")
    replace_directory(staged, target)
    assert (target / "nested" / "file.txt").read_text() == "twotwotwo"
    assert leftovers(target.parent) == []


def test_replace_directory_keeps_a_backup(tmp_path):
    target, staged, backup = tmp_path / "index", tmp_path / "staged", tmp_path / "index.bak"
    make_tree(target, "old")
    make_tree(staged, "new")
    replace_directory(staged, target, backup=backup)
    assert (target / "marker.txt").read_text() == "new"
    assert (backup / "marker.txt").read_text() == "old"


def test_failed_swap_restores_the_old_directory(tmp_path, monkeypatch):
    target, staged = tmp_path / "index", tmp_path / "staged"
    make_tree(target, "old")
    make_tree(staged, "new")
    real_replace = os.replace
    calls = []

    def second_call_fails(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # moving the staged directory into place
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", second_call_fails)
    with pytest.raises(OSError, match="Input/output"):
        replace_directory(staged, target)
    assert (target / "marker.txt").read_text() == "old"
    assert (target / "nested" / "file.txt").read_text() == "oldoldold"
    assert (staged / "marker.txt").read_text() == "new"  # the staged tree is still there to retry
    assert leftovers(tmp_path) == []


def test_replace_directory_never_shows_half_a_directory(tmp_path, monkeypatch):
    """At every rename, each name that exists holds a complete tree (old or new)."""
    target, staged = tmp_path / "index", tmp_path / "staged"
    make_tree(target, "old")
    make_tree(staged, "new")
    real_replace = os.replace
    seen = []

    def observe(src, dst):
        for folder in (target, *tmp_path.glob(".index.old-*")):
            if folder.exists():
                seen.append(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")))
        return real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", observe)
    replace_directory(staged, target)
    assert seen and all(tree == ["marker.txt", "nested", "nested/file.txt"] for tree in seen)


HOLDER = textwrap.dedent("""
    import sys
    from agentpack.io.fsutil import file_lock
    with file_lock(sys.argv[1], what="the index"):
        print("locked", flush=True)
        sys.stdin.readline()
""")


def test_lock_held_by_another_process(tmp_path):
    lock = tmp_path / "locks" / "index.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockedError) as info, file_lock(lock, what="the index"):
            pass
        assert isinstance(info.value, AgentpackError) and info.value.exit_code == 2
        assert "the index is locked by another process" in info.value.message
        assert info.value.file == str(lock) and info.value.hint
        with pytest.raises(LockedError), file_lock(lock, timeout=0.2):
            pass
        assert lock.read_text().strip() == str(holder.pid)
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    with file_lock(lock, timeout=5):  # released when the holder exits
        assert lock.read_text().strip() == str(os.getpid())


def test_lock_released_after_an_error(tmp_path):
    lock = tmp_path / "x.lock"
    with pytest.raises(RuntimeError), file_lock(lock):
        raise RuntimeError("boom")
    with file_lock(lock):
        pass


def test_atomic_write_modes_and_non_durable_writes(tmp_path):
    import stat

    from agentpack.io.fsutil import atomic_write_bytes, atomic_write_json

    secret = tmp_path / "key.pem"
    atomic_write_bytes(secret, b"k")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600  # like mkstemp: private unless a mode is given
    shared = tmp_path / "report.json"
    atomic_write_json(shared, {"a": 1}, durable=False)
    assert shared.read_text() == '{\n  "a": 1\n}\n'
    atomic_write_bytes(shared, b"x", mode=0o644, durable=False)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644 and shared.read_bytes() == b"x"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    (tmp_path / "sub").mkdir()
    stale = tmp_path / "sub" / f".state.md.{pid}.123.tmp"
    mine = tmp_path / f".state.md.{os.getpid()}.456.tmp"
    for path in (stale, mine, tmp_path / "state.md", tmp_path / ".hidden.tmp"):
        path.write_text("x")
    assert fsutil.remove_stale_temporaries(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [".hidden.tmp", mine.name, "state.md"]


def test_a_file_written_in_pieces_replaces_the_old_one_only_when_complete(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), fsutil.atomic_file(target) as handle:
        handle.write(b"{\n")
        raise RuntimeError("the producer failed midway")
    assert target.read_text() == "old" and leftovers(tmp_path) == []
    with fsutil.atomic_file(target, mode=0o644) as handle:
        handle.write(b"{\n")
        assert target.read_text() == "old"  # nothing shows before the end
        handle.write(b"}\n")
    assert target.read_text() == "{\n}\n" and oct(target.stat().st_mode & 0o777) == "0o644"
