#!/usr/bin/env bash
# Expert Context Packs, offline: unzip -> validate -> query -> eval, then a new pack from `agentpack ecp init`.
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
python=$(command -v python3 || command -v python)

"$python" -m zipfile -c "$work/conformance-pack.zip" conformance-pack
"$python" -m zipfile -e "$work/conformance-pack.zip" "$work/unzipped"
pack="$work/unzipped/conformance-pack"
step agentpack detect "$pack"
step agentpack validate "$pack" --strict
step agentpack query "$pack" "How is the prediction cache invalidated when constituents change?" -k 3
step agentpack query "$pack" "station fingerprint" --path-prefix src/ --mode fts -k 2
step agentpack eval "$pack"
step agentpack ecp build "$pack" --rebuild
# the pack as an agent of the evaluation protocol, graded like any agent (agent-manifest.yaml)
step agentpack rpc run -m agent-manifest.yaml --no-record

step agentpack ecp init "$work/harbour-expert"
step agentpack validate "$work/harbour-expert" --strict
step agentpack query "$work/harbour-expert" "How do I add a new source document?"
step agentpack eval "$work/harbour-expert" -o junit --report "$work/harbour-report.html"
