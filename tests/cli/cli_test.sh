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
    --heartbeat-interval-ms 600000 --heartbeat-stale-ms 1 --work-sweep-interval-ms 3600000 \
    --work-auto-archive true >"$WORK/serve.out" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
  [[ -s "$WORK/port" ]] || { echo "server did not start" >&2; cat "$WORK/serve.out" >&2; exit 1; }
  export SKEIN_SERVER="http://127.0.0.1:$(cat "$WORK/port")"
}

check "serve refuses a work_auto_archive that is not true or false, naming it" bash -c \
  "'$SKEIN' serve --data '$WORK/refused' --work-auto-archive maybe 2>&1 | grep -q 'work_auto_archive: expected true or false'"
check "serve refuses it with exit 64" expect_exit 64 "$SKEIN" serve --data "$WORK/refused" --work-auto-archive maybe
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
check "compact: nothing to compact on a short thread" bash -c "'$SKEIN' thread compact $T --stages drop-thinking | grep -q 'not compacted'"
check "compact --json answers the result" bash -c "'$SKEIN' thread compact $T --keep-turns 0 --json | grep -q '\"compacted\":'"
check "compact refuses an unknown stage" expect_exit 1 sk thread compact $T --stages shred
check "compact refuses a bad number" expect_exit 64 sk thread compact $T --keep-turns x
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
check "thread title" bash -c "'$SKEIN' thread title $C 'Renamed by hand' | grep -q 'Renamed by hand'"
check "thread show has the new title" bash -c "'$SKEIN' thread show $C | grep -q 'Renamed by hand'"
check "thread title with no text is a usage error" expect_exit 64 sk thread title "$C"
check "agent reference creates the dm thread" sk entries create echo "first dm" --wait
check "agent reference reuses it" sk entries create echo "second dm" --wait
check "one dm thread, hanging from its agent" bash -c "[[ \$('$SKEIN' thread list --parent echo --json | grep -o '\"parent_kind\":\"agent\"' | wc -l) == 1 ]]"
DM=$("$SKEIN" thread list --parent echo --json | sed -E 's/.*"id":"([^"]+)".*/\1/')
check "dm entries filtered to chat" bash -c "'$SKEIN' entries list $DM --group chat --json | grep -q '\"type\":\"message\"' && ! '$SKEIN' entries list $DM --group chat --json | grep -q '\"type\":\"signal\"'"
check "dm entries filtered to signals" bash -c "'$SKEIN' entries list $DM --group signal | grep -q thread.stop"
check "a bad group exits 1" expect_exit 1 sk entries list "$DM" --group bogus
TK1=$("$SKEIN" thread create echo --task ticket-9)
TK2=$("$SKEIN" thread create echo --task ticket-9)
check "a task has one thread" bash -c "[[ -n '$TK1' && '$TK1' == '$TK2' ]]"
check "another agent's create of the task is a conflict (exit 6)" expect_exit 6 sk thread create bot --task ticket-9
check "task show finds it" bash -c "'$SKEIN' task show ticket-9 | grep -q '$TK1'"
check "task show of an unknown task exits 4" expect_exit 4 sk task show no-such-task
OV=$("$SKEIN" thread create echo --engine-config '{"default":{"reply":"overridden"}}')
check "engine override answers" bash -c "[[ \$('$SKEIN' entries create $OV 'hi' --wait) == overridden ]]"
check "a malformed engine override exits 64" expect_exit 64 sk thread create echo --engine-config '{"default":'
HS=$("$SKEIN" thread create echo --member echo --member bot:on_mention)
check "house created with members" bash -c "'$SKEIN' thread show $HS | grep -q 'member    bot on_mention'"
check "house input with a mention" sk entries create "$HS" "hello @bot" --wait
check "both members ran" bash -c "for i in \$(seq 50); do [[ \$('$SKEIN' entries list $HS --group signal | grep -c thread.stop) == 2 ]] && exit 0; sleep 0.1; done; exit 1"
check "house remove" sk house remove "$HS" bot
check "house add" sk house add "$HS" bot --trigger always
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

# --- delegation ------------------------------------------------------------------
check "agent create --delegate-to" sk agent create boss --delegate-to echo,broken --depth-max 2 \
  --engine-config '{"rules":[{"turn":1,"tool_calls":[{"name":"ask_agent","arguments":{"agent":"echo","question":"hi"}}]}],"default":{"reply":"boss heard: {tool_result}"}}'
check "agent show carries the delegation object" \
  bash -c "'$SKEIN' agent show boss --json | grep -q '\"delegation\":{\"agents\":\[\"echo\",\"broken\"\],\"depth_max\":2,\"self_allowed\":false}'"
check "a bad --depth-max is a usage error" expect_exit 64 sk agent create boss2 --delegate-to echo --depth-max x
check "a registered ask_agent is refused naming the field" \
  bash -c "'$SKEIN' agent create boss3 --tool ask_agent 2>&1 | grep -q 'agent.tools'"
D=$(sk thread create boss)
check "a delegated run answers with the child's text" bash -c "[[ \$('$SKEIN' entries create $D 'go' --wait) == 'boss heard: echoed' ]]"
check "the child is listed under its parent" bash -c "'$SKEIN' thread list --parent $D --json | grep -q '\"id\":\"$D.1\"'"
check "the child's entries hold the question" bash -c "'$SKEIN' entries list $D.1 | grep -q 'user: hi'"

# --- usage and budgets ----------------------------------------------------------
check "usage table" bash -c "'$SKEIN' usage --agent echo | grep -q '^(all) '"
check "usage by thread, --json" bash -c "'$SKEIN' usage --agent echo --group-by thread --json | grep -q '\"group_by\":\"thread\"'"
check "usage by day, dates" bash -c "'$SKEIN' usage --since 2000-01-01 --until 2999-01-01T00:00:00Z --group-by day | grep -q '^[0-9-]\{10\} '"
check "usage with a bad time exits 1 naming the field" bash -c "'$SKEIN' usage --since yesterday 2>&1 | grep -q '\"field\":\"since\"'"
check "agent with a daily budget" bash -c "curl -sf -X POST $S/v1/agents -d '{\"id\":\"metered\",\"engine_config\":{\"default\":{\"reply\":\"ok\",\"usage\":{\"input_tokens\":5,\"output_tokens\":5}}},\"budgets\":{\"tokens_per_day_max\":10}}' >/dev/null"
B=$(sk thread create metered)
check "a run within the budget" sk entries create "$B" "one" --wait
check "a run past the daily budget exits 8" expect_exit 8 sk entries create "$B" "two" --wait
check "thread list --archived" bash -c "'$SKEIN' thread list --archived --agent echo | grep -q '^ID '"
check "export" sk thread export "$C" --output "$WORK/export.jsonl"
FK=$(sk thread fork "$C" --at 5)
check "fork prints the new id" test -n "$FK"
check "delete" sk thread delete "$C"
check "deleted is gone" expect_exit 4 sk thread show "$C"
check "import restores it" bash -c "'$SKEIN' thread import '$WORK/export.jsonl' | grep -q '$C'"
check "imported log equals the export" bash -c "'$SKEIN' thread export $C | cmp -s - '$WORK/export.jsonl'"
# memory search: the embeddings effect embeds every message in the background; the thread's
# "hello" (sent above) is found once its row is durable (bounded wait on the real outcome).
mem_found() { "$SKEIN" memory search echo hello --json | grep -q '"snippet":"hello"'; }
for _ in $(seq 200); do mem_found && break; sleep 0.1; done
check "memory search finds an embedded message" mem_found
check "memory search prints a table" bash -c "'$SKEIN' memory search echo where is the key -k 3 | grep -q '^SCORE '"
check "memory search --json" bash -c "'$SKEIN' memory search echo hello --json -k 1 | grep -q '^{\"hits\":\\[{'"
check "memory search of an unknown agent exits 4" expect_exit 4 sk memory search ghost key
check "memory search without a query exits 64" expect_exit 64 sk memory search echo
check "memory search -k past the limit names it" bash -c "'$SKEIN' memory search echo key -k 101 2>&1 | grep -q memory_search_k_max"
# entries read follows the next run: post only once its stream is open (the server's gauge says so),
# so a slow start (sanitizers) cannot let the run finish before the command reads the manifest.
sse_open() { curl -sf "$S/metrics" | grep -Eq '^skein_sse_streams [1-9]'; }
( timeout 60 "$SKEIN" entries read "$T" >"$WORK/read.out" 2>&1; echo $? >"$WORK/read.code" ) &
READ_PID=$!
for _ in $(seq 300); do sse_open && break; sleep 0.1; done
curl -s -X POST "$S/v1/threads/$T/entries" -d '{"text":"again"}' >/dev/null
wait "$READ_PID"
check "entries read renders a run" bash -c "[[ \$(cat '$WORK/read.code') == 0 && \$(cat '$WORK/read.out') == pong ]]"
check "wrong server exits 1" expect_exit 1 "$SKEIN" --server http://127.0.0.1:1 thread list
# A followed thread that is deleted: the stream's last frame ends the command (exit 4).
D=$(sk thread create echo)
sk entries create "$D" "before" --wait >/dev/null
( timeout 60 "$SKEIN" entries list "$D" --follow >"$WORK/follow.out" 2>&1; echo $? >"$WORK/follow.code" ) &
FOLLOW_PID=$!
for _ in $(seq 300); do grep -q "assistant" "$WORK/follow.out" 2>/dev/null && break; sleep 0.1; done
sk thread delete "$D" >/dev/null
wait "$FOLLOW_PID"
check "entries list --follow of a deleted thread ends with exit 4" test "$(cat "$WORK/follow.code")" = 4
check "and says so" grep -q "was deleted" "$WORK/follow.out"

# --- --help: every command, usage on stdout, exit 0 ----------------------------------
# --- schedule ---------------------------------------------------------------
SC=$(sk schedule create echo --every 3600000 --input "hourly ping" --title-prefix Hourly --tag sched)
check "schedule create prints the id" test -n "$SC"
check "schedule show" bash -c "'$SKEIN' schedule show $SC | grep -q '^kind      interval'"
check "schedule list" bash -c "'$SKEIN' schedule list --agent echo | grep -q '^$SC '"
check "schedule preview" bash -c "[[ \$('$SKEIN' schedule preview $SC --n 3 | wc -l) -eq 3 ]]"
check "schedule pause" bash -c "'$SKEIN' schedule pause $SC | grep -q '^paused $SC'"
check "schedule show: paused" bash -c "'$SKEIN' schedule show $SC | grep -q '^state     paused'"
check "schedule resume" bash -c "'$SKEIN' schedule resume $SC | grep -q '^resumed $SC'"
check "schedule history: none yet" bash -c "[[ -z \$('$SKEIN' schedule history $SC) ]]"
check "schedule history --json" bash -c "'$SKEIN' schedule history $SC --json | grep -q '\"firings\":\[\]'"
check "schedule cron in a zone" bash -c "'$SKEIN' schedule create echo --cron '30 2 * * *' --zone Europe/Berlin --input x --id berlin | grep -q '^berlin$'"
check "a bad cron exits 1 naming the field" bash -c "'$SKEIN' schedule create echo --cron '61 * * * *' --input x 2>&1 | grep -q '\"field\":\"cron\"'"
check "an unknown agent exits 4" expect_exit 4 sk schedule create nobody --every 60000 --input x
check "two kinds are a usage error" expect_exit 64 sk schedule create echo --every 60000 --at 5 --input x
check "schedule delete" bash -c "'$SKEIN' schedule delete $SC | grep -q '^deleted $SC'"
check "schedule show after delete exits 4" expect_exit 4 sk schedule show "$SC"
check "schedule delete is idempotent" sk schedule delete "$SC"

help_ok() {  # help_ok <args...>: exit 0 and a usage line on stdout
  local out
  out=$("$SKEIN" "$@" 2>/dev/null) || return 1
  [[ "$out" == usage:* ]]
}
check "skein --help" help_ok --help
check "serve --help" help_ok serve --help
check "serve -h lists the settings" bash -c "'$SKEIN' serve -h | grep -q '^  body_bytes_max '"
check "demo --help" help_ok demo --help
for noun in thread entries agent memory schedule; do check "$noun --help" help_ok $noun --help; done
for cmd in "thread create" "thread list" "thread show" "thread delete" "thread reconcile" "thread diagnose" \
           "thread prune" "thread compact" "thread export" "thread import" "thread fork" "entries create" "entries list" \
           "entries read" "agent create" "agent list" "agent show" "usage" "memory search" \
           "schedule create" "schedule list" "schedule show" "schedule pause" "schedule resume" "schedule delete" \
           "schedule history" "schedule preview"; do
  # shellcheck disable=SC2086
  check "$cmd --help" help_ok $cmd --help
done
check "an unknown command with --help is still a usage error" expect_exit 64 sk thread bogus --help
check "a usage error prints the command's usage" bash -c "'$SKEIN' thread fork x 2>&1 >/dev/null | grep -q '^usage: skein thread fork <id> --at N'"

# --- imports at the edge: refused whole, naming the line and the limit -----------------
printf '' >"$WORK/empty.jsonl"
check "an empty import is refused" bash -c "'$SKEIN' thread import '$WORK/empty.jsonl' 2>&1 | grep -q 'import body is empty'"
LONG_ID=$(printf 'i%.0s' $(seq 129))
printf '{"type":"USER_MESSAGE","data":"x","threadId":"%s"}\n' "$LONG_ID" >"$WORK/long_id.jsonl"
check "a 129-character thread id names the line and the limit" \
  bash -c "'$SKEIN' thread import '$WORK/long_id.jsonl' --format lace --agent echo 2>&1 | grep -q 'line 1: event.threadId: longer than id_bytes_max (128 characters)'"
check "and stores nothing" bash -c "! '$SKEIN' thread list --agent echo --json | grep -q '$LONG_ID'"
printf '{"agentId":"echo"}\n{"type":"tool_use","name":"t","input":%s}\n' \
  "$(printf '[%.0s' $(seq 63))1$(printf ']%.0s' $(seq 63))" >"$WORK/deep.jsonl"
check "an OpenNova line at json_depth_max is refused with the limit" \
  bash -c "'$SKEIN' thread import '$WORK/deep.jsonl' 2>&1 | grep -q 'line 2: event.payload.arguments: nesting 63 plus the 2 levels above it exceeds json_depth_max (64)'"
printf '{"agentId":"echo"}\n{"type":"tool_use","name":"t","input":{}}\n{"type":"result","cost":0.1}\n' >"$WORK/nova.jsonl"
check "an OpenNova tool_use without id imports with a minted call id" \
  bash -c "id=\$('$SKEIN' thread import '$WORK/nova.jsonl' | sed -E 's/.*\"id\":\"([^\"]+)\".*/\\1/') && '$SKEIN' entries list \$id --json | grep -q '\"call_id\":\"opennova_line_2\"'"
{ printf '{"type":"USER_MESSAGE","data":"'; head -c $((4194304 - 53)) /dev/zero | tr '\0' x
  printf '","threadId":"lace_1"}\n'; } >"$WORK/max_line.jsonl"
check "a line of exactly json_bytes_max is built right" test "$(head -1 "$WORK/max_line.jsonl" | wc -c)" -eq 4194305
check "a line of exactly json_bytes_max is refused: stored it would not read back" \
  bash -c "'$SKEIN' thread import '$WORK/max_line.jsonl' --agent echo 2>&1 | grep -q 'line 1: event: encoded [0-9]* bytes exceeds json_bytes_max (4194304)'"
printf '{"type":"USER_MESSAGE","data":"ok","threadId":"lace_utf"}\n{"type":"USER_MESSAGE","data":"caf\xc3\x28","threadId":"lace_utf"}\n' >"$WORK/utf.jsonl"
check "invalid UTF-8 names its line" bash -c "'$SKEIN' thread import '$WORK/utf.jsonl' --agent echo 2>&1 | grep -q 'line 2: event: invalid UTF-8'"
check "and stores nothing" expect_exit 4 sk thread show lace_utf
printf '{"type":"USER_MESSAGE","data":"kept","threadId":"lace_torn"}\n{"type":"USER_MESSAGE","data":"cut' >"$WORK/torn.jsonl"
check "a torn last line is skipped and said so in the answer" \
  bash -c "'$SKEIN' thread import '$WORK/torn.jsonl' --agent echo | grep -q '\"torn_last_line\":true,\"torn_detail\":\"line 2: unterminated JSON (skipped)\"'"
check "the rest is stored" bash -c "'$SKEIN' entries list lace_torn | grep -q 'user: kept'"
printf '{"type":"USER_MESSAGE","data":"a","threadId":"lace_ok_1"}\n{"type":"USER_MESSAGE","data":"b","threadId":"%s"}\n' "$C" >"$WORK/half.jsonl"
check "an import whose 2nd thread exists is a conflict (exit 6)" expect_exit 6 sk thread import "$WORK/half.jsonl" --format lace --agent echo
check "and leaves no trace of the 1st" expect_exit 4 sk thread show lace_ok_1

# --- namespaces -------------------------------------------------------------------
check "namespace create" bash -c "'$SKEIN' namespace create acme --threads-max 2 | grep -q '\"threads_max\":2'"
check "namespace create: a taken name is a conflict (exit 6)" expect_exit 6 sk namespace create acme
check "namespace create: a bad name is refused naming the field" bash -c "'$SKEIN' namespace create 'Bad/Name' 2>&1 | grep -q 'body.name'"
check "namespace create: a bad number is a usage error" expect_exit 64 sk namespace create other --threads-max lots
check "namespace list" bash -c "'$SKEIN' namespace list | grep -q '^acme '"
check "--namespace: an agent in acme" sk --namespace acme agent create echo --engine-config '{"default":{"reply":"from acme"}}'
NT=$(sk --namespace acme thread create echo)
check "--namespace: a thread in acme" test -n "$NT"
check "--namespace: a run in acme" bash -c "'$SKEIN' --namespace acme entries create $NT hi --wait | grep -q 'from acme'"
check "acme's thread is missing from default (exit 4)" expect_exit 4 sk thread show "$NT"
check "SKEIN_NAMESPACE works as --namespace" bash -c "SKEIN_NAMESPACE=acme '$SKEIN' thread show $NT | grep -q '$NT'"
check "acme's quota: a third thread is refused (exit 9)" bash -c "'$SKEIN' --namespace acme thread create echo; '$SKEIN' --namespace acme thread create echo; [[ \$? -eq 9 ]]"
check "namespace show: quota and usage" bash -c "'$SKEIN' namespace show acme | grep -q '\"threads\":2'"
check "namespace quota raises it" bash -c "'$SKEIN' namespace quota acme --threads-max 3 | grep -q '\"threads_max\":3'"
check "--namespace: a bad name is a usage error" expect_exit 64 sk --namespace 'No Good' thread list
check "--namespace: an unknown namespace is not found (exit 4)" expect_exit 4 sk --namespace nothere thread list
check "namespace delete" sk namespace delete acme
check "namespace delete erased its database" test ! -e "$WORK/data/namespaces/acme"
check "namespace delete: default cannot go" expect_exit 1 sk namespace delete default
check "the server's own database moved under namespaces/default" test -e "$WORK/data/namespaces/default/CURRENT"

# --- clean shutdown --------------------------------------------------------------
kill -TERM "$SERVER_PID"
wait "$SERVER_PID"
code=$?
SERVER_PID=""
check "SIGTERM stops the server with exit 0" test "$code" -eq 0
check "it says so" grep -q "stopped cleanly" "$WORK/serve.out"
check "no tokens file refuses a public address" expect_exit 1 "$SKEIN" serve --listen 0.0.0.0:0 --data "$WORK/data2"

# --- responses the CLI cannot decode: exit 7, never an empty success ------------------
# A stand-in server that answers 200 to everything with a body of the current mode:
# garbage (no JSON), empty ({}: JSON without the fields), or stream (valid thread,
# garbage events on the SSE stream).
if command -v python3 >/dev/null; then
  cat >"$WORK/fake.py" <<'PY'
import http.server, sys, os
mode_file, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n: self.rfile.read(n)
        mode = open(mode_file).read().strip()
        ctype, body = "application/json", b"<html>502 bad gateway</html>"
        if mode == "empty": body = b"{}"
        if mode in ("stream", "closed"):
            if "/stream" in self.path:
                ctype, body = "text/event-stream", b"id: 1\nevent: message\ndata: not an event\n\n"
                if mode == "closed": body = b""
            elif "/entries" in self.path: body = b'{"events":[],"next_seq":1,"last_seq":0}'
            else: body = (b'{"v":1,"id":"x","agent_id":"a","status":"open","created_at":1,"updated_at":1,'
                          b'"last_seq":0}')
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_DELETE = answer
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
  echo garbage >"$WORK/mode"
  python3 "$WORK/fake.py" "$WORK/mode" "$WORK/fake_port" &
  FAKE_PID=$!
  for _ in $(seq 100); do [[ -s "$WORK/fake_port" ]] && break; sleep 0.1; done
  FAKE="http://127.0.0.1:$(cat "$WORK/fake_port")"
  echo '{"type":"USER_MESSAGE","data":"x"}' >"$WORK/one.jsonl"
  unreadable() {  # unreadable <args...>: exit 7 with a message naming the response
    "$SKEIN" --server "$FAKE" "$@" >"$WORK/fake.out" 2>"$WORK/fake.err"
    local got=$?
    [[ $got -eq 7 ]] && grep -q "cannot decode the response to" "$WORK/fake.err" && return 0
    echo "exit $got: $* (stdout: $(head -c 200 "$WORK/fake.out"))" >>"$WORK/log"
    return 1
  }
  for mode in garbage empty; do
    echo $mode >"$WORK/mode"
    for cmd in "thread create a" "thread list" "thread show x" "thread diagnose x" "thread reconcile x" \
               "thread prune" "thread export x" "thread import $WORK/one.jsonl" "thread fork x --at 1" \
               "entries create x m" "entries create x m --wait" "entries list x" "entries read x" \
               "agent create a" "agent list" "agent show a" "thread show x --json" "agent list --json" \
               "schedule create a --every 60000 --input x" "schedule list" "schedule show x" "schedule pause x" \
               "schedule history x" "schedule preview x"; do
      # shellcheck disable=SC2086
      check "$mode response: $cmd exits 7" unreadable $cmd
    done
  done
  check "garbage response: thread delete exits 7" bash -c "echo garbage >'$WORK/mode'; '$SKEIN' --server $FAKE thread delete x; [[ \$? -eq 7 ]]"
  echo stream >"$WORK/mode"
  check "an undecodable stream event: entries read exits 7" unreadable entries read x
  check "an undecodable stream event: entries list --follow exits 7" unreadable entries list x --follow
  echo closed >"$WORK/mode"
  check "a stream closed before the run ended: entries read exits 1" expect_exit 1 "$SKEIN" --server "$FAKE" entries read x
  kill "$FAKE_PID" 2>/dev/null
  wait "$FAKE_PID" 2>/dev/null
else
  echo "cli: python3 missing, the undecodable-response checks did not run" >&2
  FAILED=$((FAILED + 1))
fi

# --- TLS between cluster nodes: refusals -----------------------------------------
printf 'n1 127.0.0.1:1\nn2 10.0.0.2:7501\n' >"$WORK/remote.cluster"
check "serve refuses a member off loopback without TLS, naming the flags" bash -c \
  "out=\$('$SKEIN' serve --data '$WORK/tls-a' --node-id n1 --cluster '$WORK/remote.cluster' 2>&1); [[ \$? -eq 1 ]] && grep -q 'cluster_cert' <<<\"\$out\" && [[ ! -e '$WORK/tls-a' ]]"
check "serve refuses TLS files outside a cluster (64)" expect_exit 64 "$SKEIN" serve --data "$WORK/tls-b" --cluster-cert "$WORK/x.crt"
check "serve refuses a certificate file that is not there, naming it, creating nothing" bash -c \
  "out=\$('$SKEIN' serve --data '$WORK/tls-c' --node-id n1 --cluster '$WORK/remote.cluster' --cluster-cert '$WORK/absent.crt' --cluster-key '$WORK/remote.cluster' --cluster-ca '$WORK/remote.cluster' 2>&1); [[ \$? -eq 1 ]] && grep -q 'absent.crt' <<<\"\$out\" && [[ ! -e '$WORK/tls-c' ]]"
check "serve refuses a CA file without a certificate, naming cluster_ca" bash -c \
  "printf 'x' >'$WORK/x.crt'; out=\$('$SKEIN' serve --data '$WORK/tls-d' --node-id n1 --cluster '$WORK/remote.cluster' --cluster-cert '$WORK/x.crt' --cluster-key '$WORK/x.crt' --cluster-ca '$WORK/x.crt' 2>&1); [[ \$? -eq 1 ]] && grep -q 'cluster_ca' <<<\"\$out\" && [[ ! -e '$WORK/tls-d' ]]"

# --- encryption at rest and skein rekey -----------------------------------------
ENC="$WORK/enc"
printf '%s\n' 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f >"$WORK/a.key"
export SKEIN_TEST_NEW_KEY=f0e0d0c0b0a090807060504030201000ffeeddccbbaa99887766554433221100
echo "not-a-key-but-secret-looking" >"$WORK/bad.key"
check "serve refuses --key-file with --key-env (64)" expect_exit 64 "$SKEIN" serve --data "$ENC" --key-file "$WORK/a.key" --key-env X
check "serve names a malformed key file, never its bytes" bash -c \
  "out=\$('$SKEIN' serve --data '$ENC' --key-file '$WORK/bad.key' 2>&1); [[ \$? -eq 1 ]] && grep -q 'bad.key' <<<\"\$out\" && ! grep -q 'secret-looking' <<<\"\$out\""
check "serve names an unset key variable" bash -c \
  "'$SKEIN' serve --data '$ENC' --key-env SKEIN_TEST_UNSET_KEY 2>&1 | grep -q 'SKEIN_TEST_UNSET_KEY: not set'"
enc_serve() {  # enc_serve <key flags...>: an encrypted server in the background, $ENC_PID
  rm -f "$WORK/enc_port"
  "$SKEIN" serve --listen 127.0.0.1:0 --port-file "$WORK/enc_port" --data "$ENC" --durability flush "$@" \
    >"$WORK/enc.out" 2>&1 &
  ENC_PID=$!
  for _ in $(seq 100); do [[ -s "$WORK/enc_port" ]] && break; sleep 0.1; done
  [[ -s "$WORK/enc_port" ]]
}
PLANT="PLANTED-SECRET-cli-$RANDOM$RANDOM"
if enc_serve --key-file "$WORK/a.key"; then
  E="http://127.0.0.1:$(cat "$WORK/enc_port")"
  curl -sf -X POST "$E/v1/agents" -d '{"id":"bot","engine_config":{"default":{"reply":"ok"}}}' >/dev/null
  ET=$(curl -sf -X POST "$E/v1/threads" -d "{\"agent_id\":\"bot\",\"title\":\"$PLANT\"}" | sed -E 's/.*"id":"([^"]+)".*/\1/')
  check "encrypted serve: an entry with wait" bash -c "curl -sf -X POST $E/v1/threads/$ET/entries -d '{\"text\":\"$PLANT\",\"wait\":true}' | grep -q '\"text\":\"ok\"'"
  # A second namespace: its own database, its own data key under the same master key.
  curl -sf -X POST "$E/v1/namespaces" -d '{"name":"acme"}' >/dev/null
  curl -sf -X POST -H 'Skein-Namespace: acme' "$E/v1/agents" -d '{"id":"bot","engine_config":{"default":{"reply":"ok"}}}' >/dev/null
  EA=$(curl -sf -X POST -H 'Skein-Namespace: acme' "$E/v1/threads" -d "{\"agent_id\":\"bot\",\"title\":\"$PLANT-acme\"}" | sed -E 's/.*"id":"([^"]+)".*/\1/')
  check "encrypted serve: a thread in a second namespace" test -n "$EA"
  kill -TERM "$ENC_PID"; wait "$ENC_PID"
  check "encrypted serve: no planted string in any file of the data dir" bash -c "! grep -rqa '$PLANT' '$ENC'"
  check "encrypted serve: each namespace's database has its SKEIN-KEY" \
    test -f "$ENC/namespaces/default/SKEIN-KEY" -a -f "$ENC/namespaces/acme/SKEIN-KEY"
  check "encrypted serve: each namespace has its own data key" \
    bash -c "! cmp -s '$ENC/namespaces/default/SKEIN-KEY' '$ENC/namespaces/acme/SKEIN-KEY'"
  check "serve without the key refuses an encrypted dir" bash -c \
    "'$SKEIN' serve --data '$ENC' 2>&1 | grep -q 'encrypted: a key is needed'"
  check "rekey: usage error without --data (64)" expect_exit 64 "$SKEIN" rekey --key-file "$WORK/a.key"
  check "rekey: usage error with no key at all (64)" expect_exit 64 "$SKEIN" rekey --data "$ENC"
  check "rekey: no database there (4)" expect_exit 4 "$SKEIN" rekey --data "$WORK/none" --new-key-env SKEIN_TEST_NEW_KEY
  check "rekey: to the new key, progress on stderr, a summary on stdout" bash -c \
    "'$SKEIN' rekey --data '$ENC' --key-file '$WORK/a.key' --new-key-env SKEIN_TEST_NEW_KEY 2>'$WORK/rekey.err' | grep -q 'is now encrypted under the new key' && grep -q 'swapped' '$WORK/rekey.err'"
  check "serve with the old key after a rekey: wrong key" bash -c \
    "'$SKEIN' serve --data '$ENC' --key-file '$WORK/a.key' 2>&1 | grep -q 'wrong key'"
  if enc_serve --key-env SKEIN_TEST_NEW_KEY; then
    E="http://127.0.0.1:$(cat "$WORK/enc_port")"
    check "serve with the new key reads the thread back" bash -c "curl -sf '$E/v1/threads/$ET' | grep -q '$PLANT'"
    check "and the second namespace's too" bash -c "curl -sf -H 'Skein-Namespace: acme' '$E/v1/threads/$EA' | grep -q '$PLANT-acme'"
    kill -TERM "$ENC_PID"; wait "$ENC_PID"
  else
    FAILED=$((FAILED + 1)); echo "FAILED: serve with the new key did not start" >&2; cat "$WORK/enc.out" >&2
  fi
  check "rekey: decrypt" "$SKEIN" rekey --data "$ENC" --key-env SKEIN_TEST_NEW_KEY
  check "after decrypting there is no SKEIN-KEY" test ! -f "$ENC/namespaces/default/SKEIN-KEY" -a ! -f "$ENC/namespaces/acme/SKEIN-KEY"
else
  FAILED=$((FAILED + 1)); echo "FAILED: encrypted serve did not start" >&2; cat "$WORK/enc.out" >&2
fi

echo "cli: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
