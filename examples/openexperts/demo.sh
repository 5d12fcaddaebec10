#!/usr/bin/env bash
# openexperts: validate, explain, dry-run, run (scripted agent, Python tool bindings) and export the
# acme-support expert package. Offline; everything it writes goes to a temporary folder.
set -euo pipefail
cd "$(dirname "$0")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step agentpack validate acme-support
step agentpack experts explain acme-support --process triage-ticket --op helpdesk.reply
step agentpack experts dry-run acme-support triage-ticket --input ticket_id=T-100 --input customer_id=C-1 \
  --bindings bindings.yaml
step agentpack experts run acme-support --process triage-ticket --input ticket_id=T-101 \
  --bindings bindings.yaml --script script.yaml --approve approve --workdir "$out/work"
step agentpack experts runs acme-support --workdir "$out/work"
step agentpack experts export acme-support --to skills "$out/skills"
step agentpack validate "$out"/skills/*
