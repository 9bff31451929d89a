#!/usr/bin/env bash
# The skein CLI and curl against a real `skein serve` on an ephemeral loopback
# port. Usage: cli_test.sh <path to skein>
set -uo pipefail
SKEIN=$1
WORK=$(mktemp -d)
PASSED=0
FAILED=0
SERVER_PID=""

cleanup() {
  [[ -n "$SERVER_PID" ]] && kill -9 "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

check() {  # check <description> <command...>: passes when the command succeeds
  local what=$1
  shift
  if "$@" >>"$WORK/log" 2>&1; then
    PASSED=$((PASSED + 1))
  else
    FAILED=$((FAILED + 1))
    echo "FAILED: $what" >&2
    tail -n 20 "$WORK/log" >&2
  fi
}

expect_exit() {  # expect_exit <code> <command...>
  local want=$1
  shift
  "$@" >>"$WORK/log" 2>&1
  local got=$?
  [[ $got -eq $want ]] || { echo "exit $got, wanted $want: $*" >>"$WORK/log"; return 1; }
}

start_server() {
  rm -f "$WORK/port"
  "$SKEIN" serve --listen 127.0.0.1:0 --port-file "$WORK/port" --data "$WORK/data" --durability flush \
    --heartbeat-interval-ms 600000 --heartbeat-stale-ms 1 >"$WORK/serve.out" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
  [[ -s "$WORK/port" ]] || { echo "server did not start" >&2; cat "$WORK/serve.out" >&2; exit 1; }
  export SKEIN_SERVER="http://127.0.0.1:$(cat "$WORK/port")"
}

start_server
S=$SKEIN_SERVER
sk() { "$SKEIN" "$@"; }

# --- curl -------------------------------------------------------------------
check "healthz" bash -c "curl -sf $S/healthz | grep -q '\"ok\"'"
check "create agent with curl" bash -c "curl -sf -X POST $S/v1/agents -d '{\"id\":\"bot\",\"engine_config\":{\"default\":{\"reply\":\"pong\",\"deltas\":[\"po\",\"ng\"],\"latency_ms\":20}}}' | grep -q '\"id\":\"bot\"'"
T=$(curl -sf -X POST "$S/v1/threads" -d '{"agent_id":"bot","title":"curl thread"}' | sed -E 's/.*"id":"([^"]+)".*/\1/')
check "thread created" test -n "$T"
check "entry with wait" bash -c "curl -sf -X POST $S/v1/threads/$T/entries -d '{\"text\":\"ping\",\"wait\":true}' | grep -q '\"text\":\"pong\"'"
check "entries listed" bash -c "curl -sf '$S/v1/threads/$T/entries?from_seq=1' | grep -q '\"type\":\"thread.start\"\\|thread.start'"
check "SSE replays history with ids" bash -c "curl -sN --max-time 2 '$S/v1/threads/$T/stream?from_seq=1' | grep -q '^id: 1$'"
check "SSE resumes after Last-Event-ID" bash -c "curl -sN --max-time 2 -H 'Last-Event-ID: 3' '$S/v1/threads/$T/stream' | head -1 | grep -q '^id: 4$'"
check "404 is JSON" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' $S/v1/threads/nope) == 404 ]]"
check "400 names the field" bash -c "curl -s -X POST $S/v1/threads -d '{\"agent_id\":\"a b\"}' | grep -q 'agent_id'"
check "metrics" bash -c "curl -sf $S/metrics | grep -q '^skein_log_commits_total '"

# --- skein CLI ----------------------------------------------------------------
check "agent create" sk agent create echo --engine-config '{"default":{"reply":"echoed"}}'
check "agent create failing" sk agent create broken --engine-config '{"default":{"error":"model down"}}'
check "agent create slow" sk agent create slow --engine-config '{"default":{"reply":"late","latency_ms":3600000}}'
check "agent list" bash -c "'$SKEIN' agent list | grep -q '^echo '"
C=$(sk thread create echo --title "cli thread" --tag cli)
check "thread create prints the id" test -n "$C"
check "thread list --json" bash -c "'$SKEIN' thread list --agent echo --json | grep -q '$C'"
check "thread list table" bash -c "'$SKEIN' thread list --tag cli | grep -q 'cli thread'"
check "entries create --wait prints the reply" bash -c "[[ \$('$SKEIN' entries create $C 'hello' --wait) == echoed ]]"
check "entries list" bash -c "'$SKEIN' entries list $C | grep -q 'assistant: echoed'"
check "thread show" bash -c "'$SKEIN' thread show $C | grep -q 'cli thread'"
check "agent reference creates the dm thread" sk entries create echo "first dm" --wait
check "agent reference reuses it" sk entries create echo "second dm" --wait
check "one dm thread" bash -c "[[ \$('$SKEIN' thread list --agent echo --tag dm --json | grep -o '\"id\"' | wc -l) == 1 ]]"
check "diagnose healthy exits 0" expect_exit 0 sk thread diagnose "$C"
F=$(sk thread create broken)
check "failed run exits 2" expect_exit 2 sk entries create "$F" "go" --wait
check "diagnose failed exits 2" expect_exit 2 sk thread diagnose "$F"
L=$(sk thread create slow)
check "submit without wait" sk entries create "$L" "take your time"
check "diagnose stalled exits 3" expect_exit 3 sk thread diagnose "$L"
check "reconcile closes it" bash -c "'$SKEIN' thread reconcile $L | grep -q '\"reconciled\":true'"
check "prune finds nothing left" bash -c "'$SKEIN' thread prune | grep -q '\"reconciled\":\\[\\]'"
check "not found exits 4" expect_exit 4 sk thread show nope
check "usage error exits 64" expect_exit 64 sk thread fork "$C"
check "export" sk thread export "$C" --output "$WORK/export.jsonl"
FK=$(sk thread fork "$C" --at 5)
check "fork prints the new id" test -n "$FK"
check "delete" sk thread delete "$C"
check "deleted is gone" expect_exit 4 sk thread show "$C"
check "import restores it" bash -c "'$SKEIN' thread import '$WORK/export.jsonl' | grep -q '$C'"
check "imported log equals the export" bash -c "'$SKEIN' thread export $C | cmp -s - '$WORK/export.jsonl'"
check "entries read renders a run" bash -c "( sleep 0.5; curl -s -X POST $S/v1/threads/$T/entries -d '{\"text\":\"again\"}' >/dev/null ) & [[ \$(timeout 20 '$SKEIN' entries read $T) == pong ]]"
check "wrong server exits 1" expect_exit 1 "$SKEIN" --server http://127.0.0.1:1 thread list

# --- clean shutdown --------------------------------------------------------------
kill -TERM "$SERVER_PID"
wait "$SERVER_PID"
code=$?
SERVER_PID=""
check "SIGTERM stops the server with exit 0" test "$code" -eq 0
check "it says so" grep -q "stopped cleanly" "$WORK/serve.out"
check "no tokens file refuses a public address" expect_exit 1 "$SKEIN" serve --listen 0.0.0.0:0 --data "$WORK/data2"

echo "cli: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
