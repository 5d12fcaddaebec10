"""Offline tests of skill.validate_manifest: it agrees with the fixtures' own skills and names lines."""

import json
import os
import subprocess
import sys

SKILL = os.environ.get("SKILL_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKSPACE = os.environ.get("SKILL_WORKSPACE", os.path.join(SKILL, "fixtures", "workspace"))


def run(request):
    env = dict(os.environ, SKILL_WORKSPACE=WORKSPACE)
    done = subprocess.run(
        [sys.executable, os.path.join(SKILL, "impl", "run.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr


def test_broken_manifest_findings_have_lines_and_no_absolute_paths():
    code, out, _ = run({"path": "skills/broken"})
    result = json.loads(out)
    assert code == 0 and result["valid"] is False
    located = [f for f in result["findings"] if f["pointer"]]
    assert located and all(f["line"] for f in located)
    assert all(not (f["file"] or "").startswith("/") for f in result["findings"])


def test_strict_mode_requires_an_access_manifest():
    result = json.loads(run({"path": "skills/word-count", "strict": True})[1])
    assert result["valid"] is False and any(f["code"] == "SKC156" for f in result["findings"])


def test_escaping_path_is_refused():
    code, _, err = run({"path": "skills/../../.."})
    assert code == 2 and "leaves the workspace" in err


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
    print("ok")
