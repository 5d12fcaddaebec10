#!/bin/sh
# Smoke test: the implementation turns the example fixture into the expected output.
set -eu
PY="${SKILLCTL_PYTHON:-python3}"
"$PY" impl/run.py < fixtures/example.input.json > "${TMPDIR:-/tmp}/smoke.out.json" 2>/dev/null
"$PY" -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); sys.exit(a != b)' \
  "${TMPDIR:-/tmp}/smoke.out.json" fixtures/example.expected.json
