"""Offline tests of fs.hash_tree beyond its fixtures (run by `skillctl test`, in a fresh workspace)."""

import json
import os
import subprocess
import sys
import tempfile

SKILL = os.environ.get("SKILL_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(request, workspace):
    env = dict(os.environ, SKILL_WORKSPACE=workspace)
    done = subprocess.run(
        [sys.executable, os.path.join(SKILL, "impl", "run.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
    )
    return done.returncode, (json.loads(done.stdout) if done.returncode == 0 else done.stderr)


def tree(root, files):
    for rel, content in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(content)


def test_same_content_same_hash_whatever_the_place_and_times():
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        tree(a, {"d/x.txt": "1", "y.txt": "2"})
        tree(b, {"y.txt": "2", "d/x.txt": "1"})
        os.utime(os.path.join(b, "y.txt"), (0, 0))
        assert run({"path": "."}, a) == run({"path": "."}, b)
        out = json.dumps(run({"path": "."}, a)[1])
        assert a not in out and b not in out  # no absolute paths


def test_content_change_changes_the_tree_hash():
    with tempfile.TemporaryDirectory() as a:
        tree(a, {"f": "1"})
        before = run({"path": "."}, a)[1]["treeSha256"]
        tree(a, {"f": "2"})
        assert run({"path": "."}, a)[1]["treeSha256"] != before


def test_symlink_out_of_the_workspace_is_refused():
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as outside:
        os.symlink(outside, os.path.join(a, "out"))
        code, err = run({"path": "out"}, a)
        assert code == 2 and "leaves the workspace" in err


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
    print("ok")
