"""Packaging, verification and signatures (spec 6.5) through the real CLI."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentpack.testing import run_cli
from agentpack_ecp.packaging import package as packaging
from agentpack_ecp.packaging import verify as verify_mod


def package(pack: Path, out: Path, *extra: str):
    return run_cli(["ecp", "package", pack, "-o", out, "--json", *extra])


def verify(target: Path, *extra: str):
    return run_cli(["ecp", "verify", target, "--json", *extra])


def codes(result) -> set[str]:
    return {f["code"] for f in result.json()["findings"]}


def rewrite(src: Path, dst: Path, change) -> None:
    """Copy a ZIP entry by entry; ``change(name, data)`` returns new data or None to drop the entry."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info, data)


def test_package_lists_every_file_and_verifies(pack: Path, tmp_path: Path) -> None:
    (pack / "expert" / "logs" / "queries").mkdir(parents=True)
    (pack / "expert" / "logs" / "queries" / "2026-01-01.jsonl").write_text("{}\n")
    (pack / "expert" / "context" / "indexes" / ".backup" / "kw" / "1").mkdir(parents=True)
    (pack / "expert" / "context" / "indexes" / ".backup" / "kw" / "1" / "x.json").write_text("{}")
    (pack / "expert" / "context" / ".staging" / "run").mkdir(parents=True)
    (pack / "expert" / "context" / ".staging" / "run" / "y").write_text("y")
    (pack / ".env").write_text("SECRET=1\n")
    out = tmp_path / "pack.zip"
    result = package(pack, out)
    assert result.exit_code == 0, result.stderr
    summary = result.json()
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("demo-expert/expert/package.json"))
    assert names == sorted(names)
    assert all(n.startswith("demo-expert/") for n in names)
    listed = [f["path"] for f in manifest["files"]]
    assert "expert/sources/docs/keys.md" in listed and "SKILL.md" in listed
    assert not [p for p in listed if "logs" in p or ".backup" in p or ".staging" in p or p == ".env"]
    keys = (pack / "expert" / "sources" / "docs" / "keys.md").read_bytes()
    entry = next(f for f in manifest["files"] if f["path"] == "expert/sources/docs/keys.md")
    assert entry["size"] == len(keys)
    assert manifest["package_sha256"] == packaging.package_sha256(manifest) == summary["package_sha256"]
    assert manifest["skill_root_dir"] == "demo-expert" and manifest["ecp_package_version"] == "1.0"
    ok = verify(out)
    assert ok.exit_code == 0, ok.stdout
    assert ok.json()["checked_files"] == len(listed)


def test_package_ships_only_declared_parts(pack: Path, tmp_path: Path) -> None:
    """Under expert/, only what EXPERT.yaml declares is packaged: never a staging folder a killed build
    left, a stray index folder or a scratch file; the rest of the skill is packaged as it is."""
    from agentpack_ecp.index.build import build_pack

    build_pack(pack)
    strays = {
        "expert/context/indexes/.staging-kw-4242/index.json": "{}",
        "expert/context/indexes/.kw.old-4242-1/index.json": "{}",
        "expert/context/indexes/retired/index.json": "{}",
        "expert/notes.txt": "scratch",
        "expert/maintenance/draft-policy.json": "{}",
    }
    for rel, text in strays.items():
        (pack / rel).parent.mkdir(parents=True, exist_ok=True)
        (pack / rel).write_text(text)
    (pack / "scripts").mkdir()
    (pack / "scripts" / "helper.py").write_text("print('skill content')\n")
    (pack / "expert" / "logs" / "queries").mkdir(parents=True)
    (pack / "expert" / "logs" / "queries" / "2026-01-01.jsonl").write_text("{}\n")
    out = tmp_path / "pack.zip"
    result = package(pack, out, "--include-logs")
    assert result.exit_code == 0, result.stderr
    assert result.json()["left_out"] == [
        "expert/context/indexes/.kw.old-4242-1",
        "expert/context/indexes/.staging-kw-4242",
        "expert/context/indexes/retired",
        "expert/maintenance/draft-policy.json",
        "expert/notes.txt",
    ]
    with zipfile.ZipFile(out) as archive:
        listed = {f["path"] for f in json.loads(archive.read("demo-expert/expert/package.json"))["files"]}
    assert not {rel for rel in listed if ".staging" in rel or ".old-" in rel} and not listed & set(strays)
    assert {
        "scripts/helper.py",
        "expert/logs/queries/2026-01-01.jsonl",
        "expert/context/indexes/kw/index.json",
    } <= listed
    assert {"expert/EXPERT.yaml", "expert/maintenance/policy.json", "expert/evals/smoke.yaml"} <= listed
    assert verify(out).exit_code == 0


def test_package_is_reproducible(pack: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    a, b = tmp_path / "a.zip", tmp_path / "b.zip"
    assert package(pack, a).exit_code == 0
    os.utime(pack / "SKILL.md", (1, 2))  # mtimes no longer matter once SOURCE_DATE_EPOCH is set
    assert package(pack, b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as archive:
        assert {i.date_time for i in archive.infolist()} == {(2026, 1, 1, 0, 0, 0)}
        assert json.loads(archive.read("demo-expert/expert/package.json"))["created_at"] == "2026-01-01T00:00:00Z"
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    c, d = tmp_path / "c.zip", tmp_path / "d.zip"
    assert package(pack, c).exit_code == 0 and package(pack, d).exit_code == 0
    assert c.read_bytes() == d.read_bytes()


def test_package_refuses_secrets(tmp_path: Path, make_pack) -> None:
    pack = make_pack(tmp_path, secrets=True)
    result = package(pack, tmp_path / "s.zip")
    assert result.exit_code == 2
    assert "contains_secrets" in result.stderr and "EXPERT.yaml:" in result.stderr
    assert not (tmp_path / "s.zip").exists()
    assert package(pack, tmp_path / "s.zip", "--allow-secrets").exit_code == 0


def test_package_refuses_escaping_symlink(pack: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    (pack / "expert" / "sources" / "docs" / "leak.md").symlink_to(tmp_path / "outside.txt")
    result = package(pack, tmp_path / "l.zip")
    assert result.exit_code == 2 and "leak.md" in result.stderr


def test_package_extra_excludes_and_includes(pack: Path, tmp_path: Path) -> None:
    (pack / "expert" / "logs" / "updates").mkdir(parents=True)
    (pack / "expert" / "logs" / "updates" / "2026-01-01.jsonl").write_text("{}\n")
    out = tmp_path / "x.zip"
    assert package(pack, out, "--exclude", "guide/", "--include-logs").exit_code == 0
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
    assert "demo-expert/expert/logs/updates/2026-01-01.jsonl" in names
    assert not [n for n in names if "/guide/" in n]
    assert verify(out).exit_code == 0


def test_reference_recipe_for_package_sha256() -> None:
    manifest = {"b": 1, "a": "é", "package_sha256": "x", "signatures": [{"s": 1}]}
    import hashlib

    expected = hashlib.sha256(json.dumps({"a": "é", "b": 1}, indent=2, sort_keys=True).encode()).hexdigest()
    assert packaging.package_sha256(manifest) == expected


# -- tampering and hostile archives ------------------------------------------------------------
@pytest.fixture
def packaged(pack: Path, tmp_path: Path) -> Path:
    out = tmp_path / "good.zip"
    assert package(pack, out).exit_code == 0
    return out


def test_verify_detects_changed_file(packaged: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    rewrite(packaged, bad, lambda n, d: d.replace(b"ninety", b"ninety-one") if n.endswith("keys.md") else d)
    result = verify(bad)
    assert result.exit_code == 1 and codes(result) == {"ECPK022"}
    bad2 = tmp_path / "bad2.zip"
    rewrite(packaged, bad2, lambda n, d: d.replace(b"ninety", b"NINETY") if n.endswith("keys.md") else d)
    assert codes(verify(bad2)) == {"ECPK021"}


def test_verify_detects_unlisted_missing_and_edited_manifest(packaged: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra.zip"
    rewrite(packaged, extra, lambda n, d: d)
    with zipfile.ZipFile(extra, "a") as archive:
        archive.writestr("demo-expert/expert/sources/docs/evil.md", "inject")
    result = verify(extra)
    assert result.exit_code == 1 and "ECPK023" in codes(result)
    missing = tmp_path / "missing.zip"
    rewrite(packaged, missing, lambda n, d: None if n.endswith("tokens.md") else d)
    assert codes(verify(missing)) == {"ECPK020"}

    def edit(name: str, data: bytes) -> bytes:
        if name.endswith("package.json"):
            manifest = json.loads(data)
            manifest["skill_name"] = "other"
            return json.dumps(manifest).encode()
        return data

    edited = tmp_path / "edited.zip"
    rewrite(packaged, edited, edit)
    assert codes(verify(edited)) == {"ECPK013"}


def test_verify_refuses_zip_slip_and_symlinks(packaged: Path, tmp_path: Path) -> None:
    for i, name in enumerate(["demo-expert/../../etc/passwd", "/etc/passwd", "demo-expert\\..\\x"]):
        slip = tmp_path / f"slip{i}.zip"
        rewrite(packaged, slip, lambda n, d: d)
        with zipfile.ZipFile(slip, "a") as archive:
            archive.writestr(zipfile.ZipInfo(name), "x")
        result = verify(slip)
        assert result.exit_code == 1 and "ECPK002" in codes(result), name
    link = tmp_path / "link.zip"
    rewrite(packaged, link, lambda n, d: d)
    with zipfile.ZipFile(link, "a") as archive:
        info = zipfile.ZipInfo("demo-expert/expert/sources/docs/link.md")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    result = verify(link)
    assert result.exit_code == 1 and "ECPK003" in codes(result)


def test_verify_refuses_bombs(packaged: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    rewrite(packaged, bomb, lambda n, d: d)
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("demo-expert/zeros.bin", b"\0" * (8 << 20))
    result = verify(bomb)
    assert result.exit_code == 1 and "ECPK007" in codes(result)
    assert "ECPK004" in codes(verify(packaged, "--max-bytes", "100"))
    assert "ECPK004" in codes(verify(packaged, "--max-entries", "2"))
    two_roots = tmp_path / "roots.zip"
    rewrite(packaged, two_roots, lambda n, d: d)
    with zipfile.ZipFile(two_roots, "a") as archive:
        archive.writestr("other/x", "x")
    assert "ECPK008" in codes(verify(two_roots))


def test_verify_lying_header_stops_hashing(packaged: Path, tmp_path: Path) -> None:
    """An entry that inflates to more than its header says is cut off, never hashed to the end."""
    import io

    handle = io.BytesIO(b"a" * 100)
    _digest, size, over = verify_mod._hash_stream(handle, 10)
    assert over and size == 11


def test_verify_not_a_zip(tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    assert codes(verify(junk)) == {"ECPK001"}
    assert run_cli(["ecp", "verify", tmp_path / "nope.zip"]).exit_code == 2


def test_verify_unpacked_directory(packaged: Path, tmp_path: Path) -> None:
    dest = tmp_path / "unpacked"
    with zipfile.ZipFile(packaged) as archive:
        archive.extractall(dest)
    assert verify(dest).exit_code == 0
    root = dest / "demo-expert"
    assert verify(root).exit_code == 0
    (root / "expert" / "logs" / "queries").mkdir(parents=True)
    (root / "expert" / "logs" / "queries" / "2026-02-02.jsonl").write_text("{}\n")  # excluded: ignored
    assert verify(root).exit_code == 0
    (root / "expert" / "sources" / "docs" / "new.md").write_text("new")
    assert codes(verify(root)) == {"ECPK023"}
    (root / "expert" / "sources" / "docs" / "new.md").unlink()
    (root / "expert" / "sources" / "docs" / "keys.md").write_text("changed!")
    assert "ECPK022" in codes(verify(root)) or "ECPK021" in codes(verify(root))
    (root / "expert" / "sources" / "docs" / "keys.md").unlink()
    (root / "expert" / "sources" / "docs" / "keys.md").symlink_to(root / "SKILL.md")
    assert "ECPK003" in codes(verify(root))


def test_verify_directory_without_manifest(pack: Path) -> None:
    assert codes(verify(pack)) == {"ECPK010"}


# -- signatures --------------------------------------------------------------------------------
def test_keygen_sign_verify(packaged: Path, tmp_path: Path) -> None:
    key, other = tmp_path / "release.key", tmp_path / "other.key"
    made = run_cli(["ecp", "keygen", key, "--json"])
    assert made.exit_code == 0 and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert run_cli(["ecp", "keygen", other]).exit_code == 0
    assert run_cli(["ecp", "keygen", key]).exit_code == 2  # no silent overwrite
    before = json.loads(zipfile.ZipFile(packaged).read("demo-expert/expert/package.json"))
    signed = run_cli(["ecp", "sign", packaged, "--key", key, "--json"])
    assert signed.exit_code == 0, signed.stderr
    assert signed.json()["key_id"] == made.json()["key_id"]
    after = json.loads(zipfile.ZipFile(packaged).read("demo-expert/expert/package.json"))
    assert after["package_sha256"] == before["package_sha256"]
    [entry] = after["signatures"]
    assert entry["algorithm"] == "ed25519" and entry["key_id"] == made.json()["key_id"] and entry["signed_at"]
    good = verify(packaged, "--key", f"{key}.pub")
    assert good.exit_code == 0 and good.json()["trusted_signature"] is True
    wrong = verify(packaged, "--key", f"{other}.pub")
    assert wrong.exit_code == 1 and codes(wrong) == {"ECPK031"}
    assert made.json()["key_id"] in wrong.json()["findings"][0]["message"]
    assert verify(packaged).exit_code == 0  # signature valid, untrusted: integrity only
    assert run_cli(["ecp", "sign", packaged, "--key", key]).exit_code == 2
    assert run_cli(["ecp", "sign", packaged, "--key", key, "--replace"]).exit_code == 0


def test_signature_detects_tampering(packaged: Path, tmp_path: Path) -> None:
    key = tmp_path / "k"
    run_cli(["ecp", "keygen", key])
    assert run_cli(["ecp", "sign", packaged, "--key", key]).exit_code == 0

    def forge(name: str, data: bytes) -> bytes:
        """Change a file and recompute every hash: only the signature can notice."""
        if name.endswith("keys.md"):
            return b"forged"
        if name.endswith("package.json"):
            manifest = json.loads(data)
            for f in manifest["files"]:
                if f["path"].endswith("keys.md"):
                    f["sha256"] = __import__("hashlib").sha256(b"forged").hexdigest()
                    f["size"] = 6
            manifest["package_sha256"] = packaging.package_sha256(manifest)
            return json.dumps(manifest).encode()
        return data

    forged = tmp_path / "forged.zip"
    rewrite(packaged, forged, forge)
    result = verify(forged, "--key", f"{key}.pub")
    assert result.exit_code == 1 and "ECPK030" in codes(result)
    assert "does not match package_sha256" in json.dumps(result.json()["findings"])
    tampered = tmp_path / "tampered.zip"
    rewrite(packaged, tampered, lambda n, d: b"tampered" if n.endswith("keys.md") else d)
    assert run_cli(["ecp", "sign", tampered, "--key", key, "--replace"]).exit_code == 2


def test_require_signature(packaged: Path) -> None:
    result = verify(packaged, "--require-signature")
    assert result.exit_code == 1 and codes(result) == {"ECPK032"}


def test_package_with_sign_key_and_directory_signing(pack: Path, tmp_path: Path) -> None:
    key = tmp_path / "k"
    run_cli(["ecp", "keygen", key])
    out = tmp_path / "s.zip"
    assert package(pack, out, "--sign-key", key).exit_code == 0
    assert verify(out, "--key", f"{key}.pub").exit_code == 0
    dest = tmp_path / "u"
    zipfile.ZipFile(out).extractall(dest)
    other = tmp_path / "o"
    run_cli(["ecp", "keygen", other])
    assert run_cli(["ecp", "sign", dest / "demo-expert", "--key", other]).exit_code == 0
    result = verify(dest / "demo-expert", "--key", f"{other}.pub", "--key", f"{key}.pub")
    assert result.exit_code == 0 and len(result.json()["signatures"]) == 2


@given(st.text(alphabet="ab./\\:\0", min_size=1, max_size=12))
def test_entry_names_accepted_never_escape(name: str) -> None:
    if verify_mod._entry_problem(name) is None:
        assert not name.startswith("/") and "\\" not in name and ".." not in name.split("/")
        import posixpath

        assert not posixpath.normpath("root/" + name).startswith("..")
