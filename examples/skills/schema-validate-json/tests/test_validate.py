"""Offline tests of schema.validate_json beyond its fixtures (run by `skillctl test`)."""

import json
import os
import subprocess
import sys

SKILL = os.environ.get("SKILL_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(request):
    done = subprocess.run(
        [sys.executable, os.path.join(SKILL, "impl", "run.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_remote_ref_is_never_fetched():
    out = run({"schema": {"$ref": "https://example.invalid/schema.json"}, "instance": 1})
    assert out["valid"] is False and out["errors"][0]["keyword"] == "$ref"


def test_max_errors_truncates_but_counts():
    out = run({"schema": {"type": "array", "items": {"type": "string"}}, "instance": [1, 2, 3, 4], "maxErrors": 2})
    assert out["errorCount"] == 4 and [e["pointer"] for e in out["errors"]] == ["/0", "/1"]


def test_errors_are_sorted_whatever_the_key_order():
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "zyxab"}}
    a = run({"schema": schema, "instance": {k: 1 for k in "zyxab"}})
    b = run({"schema": schema, "instance": {k: 1 for k in "abxyz"}})
    assert a == b and [e["pointer"] for e in a["errors"]] == ["/a", "/b", "/x", "/y", "/z"]


def test_older_dialect_is_honoured():
    out = run(
        {
            "schema": {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]},
            "instance": [1],
        }
    )
    assert out["dialect"].startswith("http://json-schema.org/draft-07") and out["valid"] is False


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
    print("ok")
