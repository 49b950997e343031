#!/usr/bin/env bash
# bench_agent_fsp.sh AGENT — Atys's thread pruning (FSP) at P = 0.99 on a
# workload with many idle threads (bench/fsp_workload.c: 2 busy threads over
# 60 functions, 200 threads waking every 50 ms for 25 us).  Figures only.
#
# Three agents sample the same process at the same time and write their
# profiles to files: A and B without pruning (--fsp 1), C with --fsp 0.99.
# MAPE(A, B) is the noise floor of two independent samplers; MAPE(A, C) is
# that noise plus what pruning changed; both over the top-50 functions of A
# by self share.  Each agent reports the time it spent merging its threads'
# stacks into process profiles ("aggregation"), which is what pruning saves.
set -euo pipefail
agent=$1
secs=${BENCH_FSP_SECONDS:-20}
hz=${BENCH_FSP_HZ:-499}
idle=${BENCH_FSP_IDLE:-200}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$tmp/w" "$here/fsp_workload.c"
"$tmp/w" $((secs + 4)) "$idle" &
wpid=$!
sleep 1
run_agent() { # name fsp
    "$agent" --pid "$wpid" --interval 5 --duration "$secs" --frequency "$hz" --unwind fp --no-kernel \
        --fsp "$2" --output "$tmp/$1.folded" >"$tmp/$1.log" 2>&1 &
}
run_agent A 1
run_agent B 1
run_agent C 0.99
wait $(jobs -p | grep -v "^$wpid$") 2>/dev/null || true
kill "$wpid" 2>/dev/null || true
for x in A B C; do
    grep -q "done:" "$tmp/$x.log" || { echo "bench_agent_fsp: agent $x failed: $(tail -3 "$tmp/$x.log")"; exit 1; }
done
# self share per leaf function of a --output file
shares() { awk '/^#/ || NF < 2 { next } { c = $NF; n = split($0, f, ";"); sub(/ [0-9]+$/, "", f[n]); s[f[n]] += c; t += c }
                END { for (k in s) printf "%s %.10f\n", k, s[k] / t }' "$1" | sort; }
shares "$tmp/A.folded" >"$tmp/A.s"; shares "$tmp/B.folded" >"$tmp/B.s"; shares "$tmp/C.folded" >"$tmp/C.s"
mape() { # reference other: mean |p_o - p_r| / p_r over the reference's top 50
    sort -k2 -gr "$1" | head -50 | awk -v other="$2" 'BEGIN { while ((getline l < other) > 0) { split(l, a, " "); o[a[1]] = a[2] } }
        { d = o[$1] - $2; if (d < 0) d = -d; sum += d / $2; n++ } END { printf "%.3f", 100 * sum / n }'
}
agg() { sed -n 's/.*aggregation \([0-9.]*\) ms.*/\1/p' "$1"; }
pruned() { sed -n 's/.*FSP pruned \([0-9]*\) threads (\([0-9]*\) samples).*/\1 threads, \2 samples/p' "$1"; }
samples() { sed -n 's/.*done: \([0-9]*\) samples.*/\1/p' "$1"; }
noise=$(mape "$tmp/A.s" "$tmp/B.s"); with=$(mape "$tmp/A.s" "$tmp/C.s")
aa=$(agg "$tmp/A.log"); ab=$(agg "$tmp/B.log"); ac=$(agg "$tmp/C.log")
echo "bench_agent_fsp: $((idle + 2)) threads (2 busy, $idle idle), ${secs} s at $hz Hz, 3 agents at once"
echo "  A (--fsp 1): $(samples "$tmp/A.log") samples, aggregation $aa ms"
echo "  B (--fsp 1): $(samples "$tmp/B.log") samples, aggregation $ab ms"
echo "  C (--fsp 0.99): $(samples "$tmp/C.log") samples, pruned $(pruned "$tmp/C.log"), aggregation $ac ms"
echo "RESULT fsp: top-50 MAPE A vs B (noise floor) $noise %, A vs C (noise + pruning) $with % (Atys: 0.58 %)"
awk -v a="$aa" -v b="$ab" -v c="$ac" 'BEGIN { base = (a + b) / 2; saved = (base > 0) ? 100 * (base - c) / base : 0
    printf "RESULT fsp: aggregation %.3f ms pruned vs %.3f ms unpruned (mean of A, B): %.1f %% saved (Atys: 6.8 %%)\n", c, base, saved }'
