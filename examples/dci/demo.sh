#!/usr/bin/env bash
# Dependent Capability Contracts on a small workspace: parse, lint, resolve (strict cover, best-effort,
# emulation), explain, and the reliability history. Works on a copy under a temporary directory.
set -euo pipefail
cd "$(dirname "$0")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cp -R workspace "$out/ws"
cd "$out/ws"

echo "== parse a contract (long forms and spaces become the canonical form)"
agentpack dci parse "DCI/1 Provides( web-search ) Required(summarization) Pol(min-total-score=0.5)"

echo; echo "== lint every contract of the workspace (warnings: over-claimer, invalid token)"
agentpack dci lint .

echo; echo "== the consumer's strict cover: one provider per required capability"
agentpack dci resolve --consumer consumers/research-brief --run-id demo-1

echo; echo "== best-effort cover: the over-claimer is penalised (over-claim + inflation) and gated out"
agentpack dci resolve -r web-search,summarization --selection cover

echo; echo "== a capability nobody provides: emulate it (degraded mode)"
agentpack dci resolve -r image-tagging --decision emulate --json > "$out/emulated.json"
python3 -c "import json,sys; e=json.load(open(sys.argv[1])); print(e['extensions']['status'], e['report']['emulated_capabilities'])" \
  "$out/emulated.json"

echo; echo "== why the over-claimer lost"
agentpack dci explain -r web-search --candidate everything

echo; echo "== reliability: two failures of web-search lower its score"
agentpack dci record web-search --failure
agentpack dci record web-search --failure
agentpack dci explain -r web-search --candidate web-search | grep -E "S_total_final|success"
