#!/usr/bin/env bash
# Runs every libFuzzer target of a build: `run.sh <build-dir> runs <n>` runs each
# target for n executions (make fuzz), `run.sh <build-dir> seconds <s>` for s
# seconds (CI). FUZZ_JOBS targets run at once (the number of cores by default:
# libFuzzer runs one thread). New inputs go to <build-dir>/fuzz-corpus/<target>
# (the committed seeds in tests/fuzz/corpus/<target> are read, never written); a
# crash leaves its input in <build-dir>/fuzz-artifacts/<target>/: commit it under
# tests/fuzz/regressions/<target>/ with the fix. Prints one line per target
# (executions, seconds, outcome) as each ends, then all of them, and fails if any
# target failed.
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
parallel=${FUZZ_JOBS:-$(nproc)}

# FUZZ_TARGETS: a space-separated subset; all by default.
read -r -a targets <<<"${FUZZ_TARGETS:-json_codec key_codec import_skein import_opennova import_lace import_gitmem import_auto http_parse http_api mcp_rpc}"

# One target: runs it and writes its summary line to <build-dir>/fuzz-logs/<target>.outcome.
run_target() {
  local t=$1
  local exe="$build/tests/fuzz/fuzz_$t"
  local work="$build/fuzz-corpus/$t" artifacts="$build/fuzz-artifacts/$t"
  local log="$build/fuzz-logs/$t.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  local start rc secs execs outcome=ok
  start=$(date +%s)
  # -timeout: an input slower than this is a hang. -max_len: imports and API
  # bodies need more than the 4 KB default to grow several lines.
  "$exe" "$limit" -timeout=20 -max_len=16384 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  ((rc != 0)) && outcome="FAILED (exit $rc; see $log and $artifacts)"
  printf '%-16s %10s execs %6s s  %s\n' "$t" "${execs:-?}" "$secs" "$outcome" | tee "$build/fuzz-logs/$t.outcome"
  # The report (a sanitizer's, a failed invariant's, libFuzzer's) where CI shows
  # it: a log on the machine that ran it is gone with that machine.
  if ((rc != 0)); then
    echo "--- $t: the end of $log"
    grep -v -e '^#[0-9]' -e '^INFO:' -e '^MS:' -e '^base unit:' -e '^0x' -e '^  *"' "$log" | tail -60
    for a in "$artifacts"/*; do
      [[ -f $a ]] && echo "--- $t: $a (base64)" && head -c 16384 "$a" | base64 -w 0 && echo
    done
  fi
}

mkdir -p "$build/fuzz-logs"
for t in "${targets[@]}"; do
  rm -f "$build/fuzz-logs/$t.outcome"
  while (( $(jobs -rp | wc -l) >= parallel )); do wait -n; done
  run_target "$t" &
done
wait

echo "---"
failed=()
for t in "${targets[@]}"; do
  line=$(cat "$build/fuzz-logs/$t.outcome" 2>/dev/null || echo "$t  no outcome (the runner died)")
  echo "$line"
  [[ $line == *" ok" ]] || failed+=("$t")
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
