#!/usr/bin/env bash
# Runs flamedb's benchmarks and prints their figures, then a summary of the
# RESULT lines.  Benchmarks measure; they never pass or fail on a timing.
# This script exits non-zero only when a benchmark could not run (crashed,
# bad arguments, the server would not start).
#
#   bash bench/run.sh BENCH_DIR FLAMEDB_BINARY
#   (make bench runs: bash bench/run.sh build/bench /abs/path/bin/flamedb)
#
# Env: BENCH_ONLY="ingest merge"   run only these benchmarks (names without bench_)
#      BENCH_INGEST_SECONDS=2      seconds per ingest scenario
#      BENCH_FLEET_SECONDS=60      bench_fleet's duration (600 for the reference run)
#      BENCH_ENCODE_BEFORE=BIN     bench_encode: a second flamedb (e.g. the previous
#                                  commit's) measured beside, with ratios
#      BENCH_PPROF_DIR=DIR         bench_encode: gen_pprof.py's output (else generated)
#      BENCH_OUT=FILE              where the full output goes
#                                  (default bench/out/results-YYYYmmdd-HHMMSS.txt, git-ignored)
# Other processes on the machine skew the timings: the load average is
# printed before each benchmark, and bench_ingest prints the CPU the rest of
# the machine used during each scenario (other%).
set -u
if [ $# -lt 2 ]; then
  echo "usage: bash bench/run.sh BENCH_DIR FLAMEDB_BINARY" >&2
  exit 2
fi
dir=$1
flamedb=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/out"
out=${BENCH_OUT:-$here/out/results-$(date +%Y%m%d-%H%M%S).txt}
order=(ingest merge storage)
if [ -n "${BENCH_ONLY:-}" ]; then
  read -r -a order <<< "$BENCH_ONLY"
else
  # any other bench_* binary runs after the known ones
  for b in "$dir"/bench_*; do
    [ -x "$b" ] || continue
    n=$(basename "$b"); n=${n#bench_}
    case " ${order[*]} " in *" $n "*) ;; *) order+=("$n") ;; esac
  done
fi

: > "$out"
{
  echo "flamedb benchmarks — $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
  echo "commit: $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$(dirname "$0")/.." diff --quiet 2>/dev/null || echo ' (with local changes)')"
} | tee -a "$out"

failed=()
for n in "${order[@]}"; do
  [ "$n" = agent ] && continue   # a script, run below
  b="$dir/bench_$n"
  if [ ! -x "$b" ]; then
    echo "bench_$n: not built ($b)" | tee -a "$out"
    failed+=("$n")
    continue
  fi
  args=()
  [ "$n" = ingest ] && args=("$flamedb" "${BENCH_INGEST_SECONDS:-2}")
  [ "$n" = fleet ] && args=("$flamedb" "${BENCH_FLEET_SECONDS:-60}")
  [ "$n" = encode ] && args=("$flamedb" ${BENCH_ENCODE_BEFORE:+"$BENCH_ENCODE_BEFORE"})
  echo | tee -a "$out"
  echo "=== bench_$n  (load average before: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out"
  start=$EPOCHREALTIME
  "$b" "${args[@]}" 2>&1 | tee -a "$out"
  rc=${PIPESTATUS[0]}
  secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  echo "=== bench_$n: exit $rc, $secs s" | tee -a "$out"
  [ "$rc" -ne 0 ] && failed+=("$n")
done

# the agent (bench_agent.sh, needs perf_event), when bin/flamedb-agent is built
agent_bin=$(dirname "$flamedb")/flamedb-agent
if [ -x "$agent_bin" ] && { [ -z "${BENCH_ONLY:-}" ] || [[ " $BENCH_ONLY " == *" agent "* ]]; }; then
  echo | tee -a "$out"; echo "=== bench_agent  (load average before: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out"
  bash "$here/bench_agent.sh" "$flamedb" "$agent_bin" 2>&1 | tee -a "$out"
  [ "${PIPESTATUS[0]}" -ne 0 ] && failed+=(agent)
  echo | tee -a "$out"; echo "=== bench_agent_fsp" | tee -a "$out"
  bash "$here/bench_agent_fsp.sh" "$agent_bin" 2>&1 | tee -a "$out"
  [ "${PIPESTATUS[0]}" -ne 0 ] && failed+=(agent_fsp)
fi

# the viewer in headless chromium, when make has installed playwright-core
if [ -d "$here/../node_modules/playwright-core" ] && [ -z "${BENCH_ONLY:-}" ]; then
  echo | tee -a "$out"; echo "=== bench_viewer" | tee -a "$out"
  node "$here/bench_viewer.mjs" "$flamedb" 2>&1 | tee -a "$out"
fi

{
  echo
  echo "=== summary (full output in $out)"
  grep '^RESULT ' "$out" | sed 's/^RESULT /  /'
  [ ${#failed[@]} -gt 0 ] && echo "  benchmarks that could not run: ${failed[*]}"
} | tee -a "$out.summary"
cat "$out.summary" >> "$out" && rm -f "$out.summary"
[ ${#failed[@]} -eq 0 ]
