#!/usr/bin/env bash
# A short tour of every installed format on examples/. Each plugin adds its part.
set -euo pipefail
cd "$(dirname "$0")"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
step agentpack --version
step agentpack plugins
for part in */demo.sh; do
  [ -f "$part" ] || continue
  printf '\n\033[1m== %s\033[0m\n' "${part%/demo.sh}"
  bash "$part"
done
