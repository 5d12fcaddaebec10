"""A full disk under the run store (issue 24): reported as a full disk naming the file, never as a damaged
store, and the store takes runs again once there is room.

The disk is real: a 1 MiB tmpfs mounted in a private mount namespace (as root, or in a user namespace
where the kernel allows one), filled with a file until the kernel answers ENOSPC. The test skips with
the reason where neither can be made.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

SCENARIO = textwrap.dedent("""\
    import json, sys
    from pathlib import Path
    from agentpack.results.runs import open_store, record_run
    from agentpack.results.runs.store import StoreError

    root = Path(sys.argv[1])
    store = root / "runs.sqlite"
    cases = [{"suite": "s", "id": f"c{i}", "status": "passed", "message": "x" * 2000} for i in range(200)]
    out = {"first": record_run({}, command="eval", input="x", cases=[], store=store).id}
    filler = root / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\\0" * 65536)
                handle.flush()
        except OSError as exc:
            out["filled"] = exc.strerror
    try:
        record_run({}, command="eval", input="x", cases=cases, store=store)
    except StoreError as exc:
        out["error"] = {"message": exc.message, "file": exc.file, "hint": exc.hint}
    filler.unlink()
    out["after"] = record_run({}, command="eval", input="x", cases=cases, store=store).id
    with open_store(store) as opened:
        out["runs"] = sorted(r.id for r in opened.find(limit=10))
        out["cases"] = len(opened.get(out["after"]).cases)
        out["check"] = opened._db.execute("PRAGMA integrity_check").fetchone()[0]
    print(json.dumps(out))
""")


def in_small_disk(tmp_path):
    """Run SCENARIO on a 1 MiB tmpfs mounted in a private mount namespace; its JSON output."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        pytest.skip("needs Linux and unshare(1) to mount a small tmpfs privately")
    mount = tmp_path / "disk"
    mount.mkdir()
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    shell = 'mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" "$3" "$1"'
    prefix = [unshare, "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    done = subprocess.run(
        [*prefix, "sh", "-c", shell, "sh", str(mount), sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "mount" in done.stderr and "Traceback" not in done.stderr:
        pytest.skip(f"cannot mount a private tmpfs here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_full_disk_is_named_and_the_store_stays_usable(tmp_path):
    out = in_small_disk(tmp_path)
    assert out["filled"] == "No space left on device"
    error = out["error"]
    assert "disk holding the run store is full" in error["message"] and "damaged" not in error["message"]
    assert error["file"].endswith("runs.sqlite") and "move it aside" not in error["hint"]
    assert out["runs"] == [out["first"], out["after"]] and out["cases"] == 200 and out["check"] == "ok"
