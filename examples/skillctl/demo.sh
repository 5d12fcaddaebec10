#!/usr/bin/env bash
# skillctl: deterministic skills (skill.yaml, skill/v1) — validate, list, describe, run, test, scaffold, MCP.
set -euo pipefail
cd "$(dirname "$0")"
SKILLS="$(cd ../skills && pwd)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step agentpack validate "$SKILLS" --strict
step skillctl --root "$SKILLS" list
step skillctl --root "$SKILLS" describe fs.hash_tree

mkdir -p "$OUT/ws"
cp -r "$SKILLS/fs-hash-tree/fixtures/workspace/." "$OUT/ws/"
echo '{"path": "src", "exclude": ["*.log"], "includeFiles": false}' > "$OUT/hash.json"
step skillctl --root "$SKILLS" run fs.hash_tree --input "$OUT/hash.json" --workspace "$OUT/ws" \
  --report "$OUT/run-report.json" --check-determinism
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("run report:", r["status"], r["durationMs"], "ms,",
  "network:", r["enforcement"]["network"]["level"], "| deterministic:", r["determinismCheck"]["identical"])' \
  "$OUT/run-report.json"

printf '\n\033[1m$ echo {...} | agentpack skill run schema.validate_json -i -\033[0m\n'
echo '{"schema": {"type": "object", "required": ["id"]}, "instance": {}}' \
  | agentpack skill --root "$SKILLS" run schema.validate_json -i - --quiet-logs --workspace "$OUT/ws"

echo '{}' > "$OUT/empty.json"
step skillctl --root "$SKILLS" run workflow.create_revision_snapshot -i "$OUT/empty.json" --workspace "$OUT/ws" \
  --quiet-logs
step ls -a "$OUT/ws/ai_workflow_revisions"
step skillctl --root "$SKILLS" run security.scan_secrets -i "$OUT/empty.json" --quiet-logs \
  --workspace "$SKILLS/security-scan-secrets/fixtures/workspace"

printf '\n\033[1m$ skillctl run fs.hash_tree -i bad.json   # a contract violation: exit 1, structured error\033[0m\n'
echo '{"path": "/etc"}' > "$OUT/bad.json"
if skillctl --root "$SKILLS" run fs.hash_tree -i "$OUT/bad.json" --workspace "$OUT/ws"; then exit 1; fi

step agentpack skill --root "$SKILLS" test
step agentpack mcp tools --pack "$SKILLS"

step agentpack skill --root "$OUT/skills" new text.word_count word-count --spec-id SPEC-42
step agentpack skill --root "$OUT/skills" test text.word_count
