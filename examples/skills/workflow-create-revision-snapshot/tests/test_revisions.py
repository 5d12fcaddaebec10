"""Offline tests of workflow.create_revision_snapshot: numbering, skip-if-unchanged, gitignore, fixed times."""

import json
import os
import subprocess
import sys
import tempfile

SKILL = os.environ.get("SKILL_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(request, workspace):
    env = dict(os.environ, SKILL_WORKSPACE=workspace, SOURCE_DATE_EPOCH="315532800")
    done = subprocess.run(
        [sys.executable, os.path.join(SKILL, "impl", "run.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def test_sequence_of_revisions():
    with tempfile.TemporaryDirectory() as ws:
        write(os.path.join(ws, "doc.md"), "v1\n")
        first = run({}, ws)
        assert first["created"] and first["revision"] == 1 and first["previous"] is None
        again = run({}, ws)
        assert again["created"] is False and again["revision"] == 1
        write(os.path.join(ws, "doc.md"), "v2\n")
        second = run({}, ws)
        assert second["revision"] == 2 and second["previous"] == "ai_workflow_revisions/rev_1"
        names = sorted(os.listdir(os.path.join(ws, "ai_workflow_revisions")))
        assert names == [".gitignore", "rev_1", "rev_2_current"]
        with open(os.path.join(ws, "ai_workflow_revisions", "rev_1", "doc.md")) as handle:
            assert handle.read() == "v1\n"


def test_gitignored_and_fixed_times():
    with tempfile.TemporaryDirectory() as ws:
        write(os.path.join(ws, "a", "b.txt"), "x")
        out = run({}, ws)
        with open(os.path.join(ws, "ai_workflow_revisions", ".gitignore")) as handle:
            assert handle.read().splitlines()[-1] == "*"
        copied = os.path.join(ws, out["path"], "a", "b.txt")
        assert int(os.stat(copied).st_mtime) == 315532800


def test_same_files_same_output_in_another_workspace():
    outputs = []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as ws:
            write(os.path.join(ws, "z.txt"), "z")
            write(os.path.join(ws, "a.txt"), "a")
            outputs.append(run({}, ws))
    assert outputs[0] == outputs[1]


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
    print("ok")
