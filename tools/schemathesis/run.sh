#!/usr/bin/env bash
# API fuzzing: starts the built `weaver` binary on embedded defaults (a fresh SQLite file,
# the built-in samples, the demo provider, a development key), seeds it with a conversation
# that drafted proposals, and runs Schemathesis (pinned, in a virtual environment) over its
# OpenAPI document with every check. Exits non-zero on any failure.
#
#   tools/schemathesis/run.sh [WEAVER_BINARY]
#
# WEAVER_BINARY defaults to $CARGO_TARGET_DIR/debug/weaver (or target/debug/weaver).
# WEAVER_SCHEMATHESIS_EXAMPLES (default 40) is the number of cases per operation and phase;
# WEAVER_SCHEMATHESIS_SEED (default 1) the seed, so a CI failure reproduces. The virtual
# environment is kept in $CARGO_TARGET_DIR/schemathesis-venv (WEAVER_SCHEMATHESIS_VENV).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
weaver="${1:-$target/debug/weaver}"
version=4.32.5
venv="${WEAVER_SCHEMATHESIS_VENV:-$target/schemathesis-venv}"
examples="${WEAVER_SCHEMATHESIS_EXAMPLES:-40}"
seed="${WEAVER_SCHEMATHESIS_SEED:-1}"

if [ ! -x "$weaver" ]; then
  echo "schemathesis: no weaver binary at $weaver (cargo build -p elsa-ai-server --bin weaver)" >&2
  exit 2
fi
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -qF "$version"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi

work="$(mktemp -d)"
key="schemathesis-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
WEAVER_DEV_KEY="$key" "$weaver" --listen 127.0.0.1:0 --sqlite "$work/weaver.db" \
  >"$work/server.log" 2>&1 &
pid=$!
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

# Ready once it says where it listens (port 0: the system chose the port).
base=""
for _ in $(seq 1 300); do
  base="$(grep -o 'listens on http://[0-9.:]*' "$work/server.log" | head -n 1 | sed 's/listens on //')" || true
  [ -n "$base" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "schemathesis: weaver exited before listening:" >&2
    cat "$work/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$base" ]; then
  echo "schemathesis: weaver did not start listening within 30 s" >&2
  exit 1
fi
auth="Authorization: ApiKey $key"

# Test data for the stateful phase: with the proposal tool enabled, the demo provider drafts
# a proposal when a message says "propose"; the inbox then has proposals to approve, reject
# and apply, and there are conversations to read and resume.
curl -fsS -X PUT "$base/ai/admin/tools/workflow.proposeUpdate/enablement" -H "$auth" \
  -H 'content-type: application/json' -d '{"enabled": true}' >/dev/null
for _ in 1 2 3; do
  curl -fsS -N "$base/ai/chat" -H "$auth" -H 'content-type: application/json' \
    -d '{"message": "Summarise this workflow and propose a clearer description",
         "attachments": [{"kind": "WorkflowDefinition", "referenceId": "sample-order-approval"}]}' \
    >/dev/null
done

status=0
# Schemathesis keeps its own files in the working directory: the throwaway one.
cd "$work"
WEAVER_SCHEMATHESIS_BASE="$base" WEAVER_SCHEMATHESIS_AUTH="ApiKey $key" \
  SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$here" "$venv/bin/schemathesis" run "$base/ai/openapi.json" \
  --checks all \
  --header "$auth" \
  --max-examples "$examples" \
  --seed "$seed" \
  --workers 1 \
  --no-color \
  --warnings off \
  "${@:2}" || status=$?
# How far the stateful phase got: the review actions it took on the seeded proposals.
for state in Approved Rejected Applied; do
  count="$(grep -c "to[^ ]*=[^ ]*\"$state\"" "$work/server.log" || true)"
  echo "schemathesis: proposals moved to $state: $count"
done
if [ "$status" -ne 0 ]; then
  echo "schemathesis: failures (exit $status); the server's log:" >&2
  tail -n 50 "$work/server.log" >&2
fi
exit "$status"
