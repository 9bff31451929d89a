#!/usr/bin/env bash
# Runs every libFuzzer target of a build: `run.sh <build-dir> runs <n>` runs each
# target for n executions (make fuzz), `run.sh <build-dir> seconds <s>` for s
# seconds (CI). New inputs go to <build-dir>/fuzz-corpus/<target> (the committed
# seeds in tests/fuzz/corpus/<target> are read, never written); a crash leaves its
# input in <build-dir>/fuzz-artifacts/<target>/: commit it under
# tests/fuzz/regressions/<target>/ with the fix. Prints one line per target
# (executions, seconds, outcome) and fails if any target failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=$1 mode=$2 amount=$3
case "$mode" in
  runs) limit="-runs=$amount" ;;
  seconds) limit="-max_total_time=$amount" ;;
  *) echo "run.sh: mode must be runs or seconds" >&2; exit 2 ;;
esac
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$PWD/tests/ubsan.supp
export ASAN_OPTIONS=detect_leaks=1

# FUZZ_TARGETS: a space-separated subset; all by default.
read -r -a targets <<<"${FUZZ_TARGETS:-json_codec key_codec import_skein import_opennova import_lace import_gitmem import_auto http_parse http_api mcp_rpc}"
failed=()
summary=()
for t in "${targets[@]}"; do
  exe="$build/tests/fuzz/fuzz_$t"
  work="$build/fuzz-corpus/$t" artifacts="$build/fuzz-artifacts/$t"
  mkdir -p "$work" "$artifacts"
  log="$build/fuzz-logs/$t.log"
  mkdir -p "$(dirname "$log")"
  start=$(date +%s)
  # -timeout: an input slower than this is a hang. -max_len: imports and API
  # bodies need more than the 4 KB default to grow several lines.
  "$exe" "$limit" -timeout=20 -max_len=16384 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  outcome=ok
  if ((rc != 0)); then
    outcome="FAILED (exit $rc; see $log and $artifacts)"
    failed+=("$t")
  fi
  summary+=("$(printf '%-16s %10s execs %6s s  %s' "$t" "${execs:-?}" "$secs" "$outcome")")
  echo "${summary[-1]}"
done
echo "---"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
