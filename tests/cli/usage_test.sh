#!/usr/bin/env bash
# skein's command line with no server: --help of the nouns and verbs lists each
# command with the route it calls; a usage error exits 64 and names what is
# wrong (unknown command or option, missing argument, bad number); the root's
# options keep their names and environment variables; the subcommands with
# their own flags keep their exit codes. Usage: usage_test.sh <path to skein>
set -uo pipefail
SKEIN=$1
WORK=$(mktemp -d)
PASSED=0
FAILED=0
trap 'rm -rf "$WORK"' EXIT
# No server is reached: a client command that gets past its parser fails to connect (exit 1).
export SKEIN_SERVER=http://127.0.0.1:1
unset SKEIN_TOKEN SKEIN_NAMESPACE

check() {  # check <description> <command...>: passes when the command succeeds
  local what=$1
  shift
  if "$@" >"$WORK/log" 2>&1; then
    PASSED=$((PASSED + 1))
  else
    FAILED=$((FAILED + 1))
    echo "FAILED: $what" >&2
    tail -n 20 "$WORK/log" >&2
  fi
}

# misuse <exit code> <text on stderr> <args...>: skein exits with the code and says the text.
misuse() {
  local want=$1 text=$2
  shift 2
  "$SKEIN" "$@" >"$WORK/out" 2>"$WORK/err"
  local got=$?
  [[ $got -eq $want ]] || { echo "exit $got, wanted $want: skein $*"; cat "$WORK/err"; return 1; }
  grep -qF -- "$text" "$WORK/err" || { echo "stderr lacks '$text': skein $*"; cat "$WORK/err"; return 1; }
}

# --- the commands as a table: noun, verb, route ----------------------------------
"$SKEIN" thread --help >"$WORK/thread.help"
check "thread --help exits 0 with its usage" bash -c "head -1 '$WORK/thread.help' | grep -qx 'usage: skein thread <command>'"
while read -r verb route; do
  check "thread --help lists $verb and its route" grep -qE "^  $verb +${route//[{\}]/.} " "$WORK/thread.help"
done <<'TABLE'
create POST /v1/threads
list GET /v1/threads
show GET /v1/threads/{id}
delete DELETE /v1/threads/{id}
title PATCH /v1/threads/{id}
reconcile POST /v1/threads/{id}/reconcile
compact POST /v1/threads/{id}/compact
diagnose GET /v1/threads/{id}/diagnose
prune POST /v1/prune
export GET /v1/threads/{id}/export
import POST /v1/import
fork POST /v1/threads/{id}/fork
TABLE
check "a verb's --help names its route" bash -c "'$SKEIN' thread fork --help | grep -qx 'route: POST /v1/threads/{id}/fork'"
check "and every route it calls" bash -c "'$SKEIN' entries create --help | grep -q 'POST /v1/agents/{id}/dm'"
# Every noun the root lists answers --help with its verbs, each verb's --help names a route.
mapfile -t nouns < <("$SKEIN" --help | sed -n '/^commands:/,/^$/p' | sed -nE 's/^  ([a-z]+) .*/\1/p' |
  grep -vxE 'serve|demo|mcp|rekey')
check "the root lists the client nouns" test "${#nouns[@]}" -ge 10
for noun in "${nouns[@]}"; do
  mapfile -t verbs < <("$SKEIN" "$noun" --help | sed -n '/^commands:/,/^$/p' | sed -nE 's/^  ([a-z]+) +[A-Z]+ \/.*/\1/p')
  if [[ ${#verbs[@]} -eq 0 ]]; then  # a command of one word (usage)
    check "$noun --help names its route" bash -c "'$SKEIN' $noun --help | grep -qE '^route: [A-Z]+ /v1/'"
    continue
  fi
  for verb in "${verbs[@]}"; do
    check "$noun $verb --help names its route" bash -c "'$SKEIN' $noun $verb --help | grep -qE '^route: [A-Z]+ /v1/'"
  done
done

# --- usage errors: exit 64, naming what is wrong -------------------------------------
check "no command at all" misuse 64 "usage: skein <command>" 
check "an unknown noun is named" misuse 64 "unknown command 'bogus'" bogus
check "an unknown verb is named" misuse 64 "unknown command 'bogus'" thread bogus
check "an unknown verb with --help is still a usage error" misuse 64 "unknown command 'bogus'" thread bogus --help
check "a noun without its verb" misuse 64 "usage: skein thread <command>" thread
check "a missing positional is named" misuse 64 "id is required" thread show
check "a missing required option is named" misuse 64 "--at is required" thread fork x
check "and the command's usage follows" misuse 64 "usage: skein thread fork <id> --at N" thread fork x
check "a bad number is named" misuse 64 "--at: expected an unsigned integer, got 'y'" thread fork x --at y
check "a bad number of namespace create" misuse 64 "--threads-max" namespace create acme --threads-max lots
check "an unknown option is named" misuse 64 "--bogus" thread list --bogus
check "an extra argument is named" misuse 64 "not expected: extra" thread show a extra
check "a missing query is named" misuse 64 "query is required" memory search echo
check "exactly one of --cron, --every, --at" misuse 64 "[--cron,--every,--at]" schedule create echo --input x
check "two of them" misuse 64 "2 were given" schedule create echo --input x --every 1000 --at 5
check "a bad --server is named" misuse 64 "--server" --server http://h:port thread list
check "a bad SKEIN_SERVER is named" bash -c "SKEIN_SERVER=http://h:port '$SKEIN' thread list 2>&1; [[ \$? -eq 64 ]]"
check "a bad --namespace is named" misuse 64 "--namespace" --namespace 'No Good' thread list
check "a bad SKEIN_NAMESPACE is refused" bash -c "SKEIN_NAMESPACE='No Good' '$SKEIN' thread list; [[ \$? -eq 64 ]]"
check "the client's variables are none of serve's business" \
  bash -c "SKEIN_SERVER=http://h:port SKEIN_NAMESPACE='No Good' '$SKEIN' serve --help >/dev/null"

# --- the root's options: before the noun or after the verb, or from the environment ---
check "--server before the noun" misuse 1 "127.0.0.1:1" --server http://127.0.0.1:1 thread list
check "--server after the verb" misuse 1 "127.0.0.1:9" thread list --server http://127.0.0.1:9 --json
check "SKEIN_SERVER" misuse 1 "127.0.0.1:1" thread list
check "a word after the verb is no command" misuse 1 "127.0.0.1:1" memory search echo where is the thread
check "--version" bash -c "[[ \$('$SKEIN' --version) =~ ^skein\ [0-9]+\.[0-9]+\.[0-9]+$ ]]"
check "version" bash -c "[[ \$('$SKEIN' version) =~ ^skein\ [0-9]+\.[0-9]+\.[0-9]+$ ]]"
check "help prints the root's usage" bash -c "'$SKEIN' help | head -1 | grep -q '^usage: skein <command>'"
check "--help lists the exit codes" bash -c "'$SKEIN' --help | grep -q '64 usage error'"

# --- the subcommands with flags of their own -------------------------------------------
check "serve --help lists the settings" bash -c "'$SKEIN' serve --help | grep -q '^  body_bytes_max '"
check "serve: an unknown flag" misuse 64 "bogus" serve --bogus x
check "demo --help" bash -c "'$SKEIN' demo --help | grep -q '^usage: skein demo'"
check "demo: an unknown flag" misuse 64 "bogus" demo --bogus
check "mcp --help" bash -c "'$SKEIN' mcp --help | grep -q '^usage: skein mcp'"
check "mcp without an agent" misuse 64 "agent" mcp
check "rekey --help" bash -c "'$SKEIN' rekey --help | grep -q '^usage: skein rekey'"
check "rekey without --data" misuse 64 "data" rekey --key-env X

echo "usage: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
