"""Offline tests of security.scan_secrets: every rule fires on a sample, the secret never leaks, order is fixed."""

import json
import os
import subprocess
import sys
import tempfile

SKILL = os.environ.get("SKILL_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Samples assembled at run time so this file itself holds no complete secret.
SAMPLES = {
    "aws.access_key_id": "AKIA" + "Z" * 16,
    "aws.secret_access_key": "aws_secret_access_key=" + "A1b2" * 10,
    "github.token": "ghp" + "_" + "a" * 36,
    "github.fine_grained_pat": "github" + "_pat_" + "B" * 30,
    "slack.token": "xox" + "b-1234567890-abcdef",
    "stripe.live_key": "sk" + "_live_" + "c" * 24,
    "google.api_key": "AI" + "za" + "d" * 35,
    "private_key.pem": "-----BEGIN RSA " + "PRIVATE KEY-----",
    "jwt": "eyJ" + "hbGciOiJIUzI1" + ".eyJ" + "zdWIiOiIxMjM0" + "." + "e" * 20,
    "generic.assignment": 'api_key = "' + "f" * 12 + '"',
}


def run(request, workspace):
    env = dict(os.environ, SKILL_WORKSPACE=workspace)
    done = subprocess.run(
        [sys.executable, os.path.join(SKILL, "impl", "run.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout, json.loads(done.stdout)


def test_every_rule_fires_and_nothing_leaks():
    with tempfile.TemporaryDirectory() as ws:
        for i, (_rule, sample) in enumerate(sorted(SAMPLES.items())):
            with open(os.path.join(ws, f"f{i:02d}.txt"), "w") as handle:
                handle.write(f"line one\nvalue: {sample}\n")
        raw, out = run({}, ws)
        assert sorted(out["counts"]) == sorted(SAMPLES), out["counts"]
        for sample in SAMPLES.values():
            secret = sample.split("=", 1)[-1].strip(' "')
            assert secret not in raw
        assert all(f["line"] == 2 for f in out["findings"])


def test_placeholders_and_allow_mark_are_ignored():
    with tempfile.TemporaryDirectory() as ws:
        with open(os.path.join(ws, "cfg.py"), "w") as handle:
            handle.write(
                'password = "changeme"\ntoken = "${TOKEN_FROM_ENV}"\n'
                'key = "AKIA' + "Q" * 16 + '"  # skillctl:allow-secret\n'
            )
        assert run({}, ws)[1]["clean"] is True


def test_report_bytes_do_not_depend_on_creation_order():
    raws = []
    for order in (("a", "b"), ("b", "a")):
        with tempfile.TemporaryDirectory() as ws:
            for name in order:
                with open(os.path.join(ws, name), "w") as handle:
                    handle.write(SAMPLES["github.token"] + "\n")
            raws.append(run({}, ws)[0])
    assert raws[0] == raws[1]


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
    print("ok")
