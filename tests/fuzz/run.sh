#!/usr/bin/env bash
# run.sh BUILD SECONDS NAME... — `make fuzz`: runs each libFuzzer harness
# BUILD/fuzz/NAME for SECONDS, one after the other, niced.  New inputs go
# to BUILD/corpus/NAME (the seeds of tests/fuzz/corpus/NAME are read, never
# written), crashes to BUILD/crashes/NAME/.  Prints one line per harness
# (executions, crash or not) and the total; exits non-zero on any crash.
# FUZZ_FLAGS adds libFuzzer flags (e.g. FUZZ_FLAGS=-max_len=65536).
set -u
build=$1 secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
total=0 crashed=()
summary=()
for name in "$@"; do
  bin=$build/fuzz/$name
  work=$build/corpus/$name
  crashes=$build/crashes/$name
  mkdir -p "$work" "$crashes" "$here/corpus/$name"
  log=$build/fuzz-$name.log
  echo "fuzz: $name for ${secs}s (log $log)"
  # -rss_limit_mb: a 4 KB input that needs more is an amplification bug;
  # -timeout: one input that takes 10 s is a hang.
  nice "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$crashes/" ${FUZZ_FLAGS:-} "$work" "$here/corpus/$name" >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units:/ {n=$2} END {print n+0}' "$log")
  total=$((total + execs))
  if [ $rc -ne 0 ]; then
    crashed+=("$name")
    summary+=("$(printf '%-12s %12d executions  CRASH (rc %d): %s' "$name" "$execs" "$rc" \
      "$(grep -m1 -E 'ERROR:|runtime error|invariant broken|SUMMARY' "$log")")")
  else
    summary+=("$(printf '%-12s %12d executions  no crash' "$name" "$execs")")
  fi
done
printf '%s\n' "${summary[@]}"
printf 'fuzz: %d executions in all\n' "$total"
if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${crashed[*]}: inputs in $build/crashes/, logs in $build/fuzz-*.log"
  exit 1
fi
