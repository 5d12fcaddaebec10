#!/usr/bin/env bash
# agent-rpc demo: validate a manifest, check the agent's conformance, run it with every report, over stdio and HTTP.
set -euo pipefail
cd "$(dirname "$0")"
out="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# an offline judge for the llm_judge grader
python fake_judge.py > "$out/judge-url" & pids+=($!)
for _ in $(seq 50); do [ -s "$out/judge-url" ] && break; sleep 0.1; done
export AGENTPACK_AGENT_RPC_JUDGE_API_KEY=demo-key AGENTPACK_AGENT_RPC_JUDGE_BASE_URL="$(cat "$out/judge-url")"

step agentpack detect manifest.yaml
step agentpack rpc validate manifest.yaml --strict
step agentpack rpc conformance "python support_agent.py"
step agentpack rpc run -m manifest.yaml --report "$out/report.html" --json-out "$out/report.json" --junit "$out/junit.xml"
step agentpack rpc run judge.yaml
step agentpack rpc run manifest.yaml --filter smoke -j 2 --isolation process
step agentpack eval manifest.yaml --filter security -o junit

# the same agent over Streamable HTTP
python support_agent.py --http --port 0 2> "$out/http.log" & pids+=($!)
for _ in $(seq 50); do grep -q listening "$out/http.log" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://[^ ]*' "$out/http.log" | head -1)"
step agentpack rpc conformance "$url"
ls -l "$out"
