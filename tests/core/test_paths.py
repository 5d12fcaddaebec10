"""agentpack.io.paths: pack-relative POSIX paths that never leave their root."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from agentpack.io.errors import PathEscapeError
from agentpack.io.paths import check_relative, is_within, resolve_under, to_posix


@pytest.mark.parametrize(
    "path, normal",
    [
        ("a", "a"),
        ("a/b.md", "a/b.md"),
        ("./a//b/", "a/b"),
        ("a/./b", "a/b"),
        ("~/x", "~/x"),
        ("dir with space/é.md", "dir with space/é.md"),
        ("..a/b..", "..a/b.."),
    ],
)
def test_relative_paths_are_accepted(path, normal):
    assert check_relative(path) == PurePosixPath(normal)


@pytest.mark.parametrize(
    "path, reason",
    [
        ("/etc/passwd", "absolute"),
        ("//server/share", "absolute"),
        ("..", "climbs out"),
        ("../x", "climbs out"),
        ("a/../../x", "climbs out"),
        ("a/../b", "climbs out"),  # any '..' segment is refused, even one that would stay inside
        ("a\\b", "not a POSIX path"),
        ("..\\x", "not a POSIX path"),
        ("C:/x", "not a POSIX path"),
        ("c:x", "not a POSIX path"),
        ("a\x00b", "NUL"),
        ("", "empty"),
        ("   ", "empty"),
    ],
)
def test_escaping_or_foreign_paths_are_refused(path, reason):
    with pytest.raises(PathEscapeError, match=reason):
        check_relative(path)


def test_non_string_is_refused():
    with pytest.raises(PathEscapeError, match="must be a string, not NoneType"):
        check_relative(None)  # type: ignore[arg-type]


@pytest.fixture
def pack(tmp_path) -> Path:
    root = tmp_path / "pack"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("a")
    (tmp_path / "outside.md").write_text("secret")
    return root


def test_resolve_under_inside(pack):
    assert resolve_under(pack, "docs/a.md") == Path(os.path.realpath(pack / "docs" / "a.md"))
    assert resolve_under(pack, ".") == Path(os.path.realpath(pack))
    assert resolve_under(pack, "docs/new.md") == Path(os.path.realpath(pack)) / "docs" / "new.md"


def test_resolve_under_must_exist(pack):
    with pytest.raises(PathEscapeError, match="does not exist"):
        resolve_under(pack, "docs/missing.md", must_exist=True)
    assert resolve_under(pack, "docs/a.md", must_exist=True).read_text() == "a"


def test_resolve_under_refuses_what_check_relative_refuses(pack):
    for bad in ("/etc/passwd", "../outside.md", "docs\\a.md"):
        with pytest.raises(PathEscapeError):
            resolve_under(pack, bad)


def test_symlink_escape_is_refused(pack, tmp_path):
    (pack / "link.md").symlink_to(tmp_path / "outside.md")
    (pack / "up").symlink_to(tmp_path)
    (pack / "dangling").symlink_to(tmp_path / "nowhere")
    for path in ("link.md", "up/outside.md", "up", "dangling"):
        with pytest.raises(PathEscapeError, match="through a symlink"):
            resolve_under(pack, path)
    assert not is_within(pack, pack / "link.md")


def test_symlink_inside_is_fine(pack):
    (pack / "alias.md").symlink_to("docs/a.md")
    (pack / "docs2").symlink_to(pack / "docs")
    assert resolve_under(pack, "alias.md").read_text() == "a"
    assert resolve_under(pack, "docs2/a.md") == resolve_under(pack, "docs/a.md")
    assert is_within(pack, pack / "alias.md")


def test_root_reached_through_a_symlink(pack, tmp_path):
    (tmp_path / "pack-link").symlink_to(pack)
    assert resolve_under(tmp_path / "pack-link", "docs/a.md").read_text() == "a"


def test_is_within_and_to_posix(pack, tmp_path):
    assert is_within(pack, pack)
    assert is_within(pack, pack / "docs" / "a.md")
    assert not is_within(pack, tmp_path)
    assert not is_within(pack, tmp_path / "pack-other")  # a shared name prefix is not containment
    assert to_posix(pack / "docs" / "a.md", pack) == "docs/a.md"


def test_links_out_lists_every_link_leaving_the_root_without_following_any(tmp_path: Path) -> None:
    from agentpack.io.paths import links_out

    root, outside = tmp_path / "pack", tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "x.md").write_text("x")
    (root / "docs" / "a.md").write_text("a")
    (root / "docs" / "inside").symlink_to("a.md")
    (root / "docs" / "file-out").symlink_to(outside / "deep" / "x.md")
    (root / "folder-out").symlink_to(outside)
    (root / "dangling").symlink_to("/nonexistent/place")
    found = dict(links_out(root))
    assert found == {
        "dangling": "/nonexistent/place",
        "docs/file-out": str((outside / "deep" / "x.md").resolve()),
        "folder-out": str(outside.resolve()),
    }
    assert dict(links_out(root, root / "docs")) == {"docs/file-out": found["docs/file-out"]}


def test_check_inside_refuses_a_file_reached_through_a_link_out(tmp_path: Path) -> None:
    from agentpack.io.errors import PackError
    from agentpack.io.paths import check_inside

    (tmp_path / "pack").mkdir()
    (tmp_path / "host.yaml").write_text("a: 1\n")
    (tmp_path / "pack" / "inner.yaml").write_text("a: 1\n")
    (tmp_path / "pack" / "m.yaml").symlink_to(tmp_path / "host.yaml")
    check_inside(tmp_path / "pack", tmp_path / "pack" / "inner.yaml")
    with pytest.raises(PackError, match=r"found a symbolic link to .* outside it") as info:
        check_inside(tmp_path / "pack", tmp_path / "pack" / "m.yaml", display="m.yaml", error=PackError)
    assert info.value.file == "m.yaml"


@pytest.mark.parametrize("path", ["a\nb", "docs/\x1b]0;t\x07", "a\tb", "x\x7f"])
def test_control_characters_in_a_pack_path_are_refused(path: str) -> None:
    with pytest.raises(PathEscapeError, match="control character"):
        check_relative(path)
