#!/usr/bin/env bash
# bench_agent.sh FLAMEDB AGENT — the agent's accuracy and overhead, figures
# only (never pass/fail on a number; non-zero exit only when something could
# not run).
#
#   bash bench/bench_agent.sh /abs/bin/flamedb /abs/bin/flamedb-agent
#   (bench/run.sh runs it when bin/flamedb-agent exists)
#
# Workload: tests/agent/workload.c, 2 busy threads, CPU split 50/30/20 across
# work_a/work_b/work_c, ground truth measured by the workload itself with
# CLOCK_THREAD_CPUTIME_ID around every slice (--truth).
#
# 1. Accuracy: the agent (fp, frame-pointer build) at 19, 99 and 499 Hz for
#    BENCH_AGENT_SECONDS (default 20) each, pushing to the real server; the
#    shares of the three functions from /api/v1/top (self over their sum)
#    against the ground truth: mean absolute error in percentage points.
#    Target: MAE <= 1.5 pp at 99 Hz.
# 2. Overhead at 99 Hz (the 99 Hz accuracy run for fp; one more run of the
#    -fomit-frame-pointer build with --unwind dwarf): agent CPU in % of one
#    core (from /proc/PID/stat and /proc/PID/task/*/schedstat, over the
#    run's wall time, startup included) and peak
#    RSS (VmHWM).  Targets: <= 1 % fp, <= 3 % dwarf, RSS <= 30 MB.
# 3. The perf pipeline on the same workload for the same time:
#    `perf record -g -F 99 -p PID`, then `perf script` and an awk collapse to
#    folded stacks; its CPU (record + script + collapse, from bash's `time`)
#    and the ratio agent / perf.  Target: <= 0.5.  Then the same with
#    `perf record --call-graph dwarf` on the -fomit-frame-pointer build, for
#    the dwarf ratio (BENCH_AGENT_PERF_DWARF=0 leaves it out).
#
# 4. FDA (only with BENCH_AGENT_FDA=1, 2 more runs of 36 s): the workload
#    with --shift 12 (the 50/30/20 split rotates among the three functions
#    every 12 s), 2 s intervals, under the agent at a fixed 396 Hz and with
#    --fda from 99 Hz (min 25, max 396); per phase, the MAE of the profiles
#    whose windows lie inside the phase against that phase's split, and the
#    samples taken.
#
# 5. Off-CPU and allocation profiles (issue 13; BENCH_AGENT_EXTRA=0 leaves
#    them out; 9 runs of BENCH_AGENT_EXTRA_SECONDS, default 10, + 3 of 5 s):
#    - agent CPU and RSS at 99 Hz (--unwind fp) on the workload above: on-CPU
#      only, with --offcpu, with --alloc; then the same on the programs
#      made for them (tests/agent/fixtures/offcpu.c: 2 workers blocking
#      ~1,500 times a second; alloc.c: an allocation loop);
#    - accuracy: the shares of the three blocking sites (nanosleep, read on
#      a pipe, a contended mutex) against the time the program measured in
#      each; the shares of the three allocation sites (alloc_objects,
#      alloc_space) against its counts and bytes: MAE in pp;
#    - the cost to the profiled program: alloc.c's calls per CPU second
#      (its own user + system time: the traps are system time, and a run
#      that gets less of a shared CPU does not look slower) alone, under
#      --alloc (the defaults: every 307th call, probes installed 3 % of
#      each interval, tracefs probes where the agent may write tracefs),
#      the same with --alloc-probes pmu (the uprobe PMU: each window ends
#      with ~90 ms of traps per event) and under --alloc-duty 1 (always
#      installed), with 0, 100 and 1000 rounds of arithmetic per call
#      (--work; 0 is the allocation-heavy loop): slowdown in %, and the
#      wall-clock calls per second's beside it.  Each probed call is a
#      breakpoint trap whatever the period, so the slowdown depends on the
#      calls per second and the duty, not on N.  BENCH_AGENT_ALLOC_RUNS=K
#      repeats each row K times (the spread on a shared machine).
#
# Env: BENCH_AGENT_SECONDS=20  seconds per run (6 runs: about 2.5 min in all)
#      BENCH_AGENT_FDA=1       also the FDA runs (+80 s)
#      BENCH_AGENT_EXTRA=0     without the runs of 5. (about 2 min)
#      BENCH_AGENT_ONLY=alloc  only the allocation runs of 5. (accuracy and
#                              the cost table: about 4 min per repeat)
set -u
if [ $# -ne 2 ]; then
    echo "usage: bash bench/bench_agent.sh FLAMEDB AGENT" >&2
    exit 2
fi
FLAMEDB=$1
AGENT=$2
SECS=${BENCH_AGENT_SECONDS:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-bench-agent.XXXXXX")
SPID=""; WPID=""; APID=""
cleanup() {
    for p in $APID $WPID $SPID; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "bench_agent: $*" >&2; exit 1; }

for b in "$FLAMEDB" "$AGENT"; do [ -x "$b" ] || die "$b is not an executable"; done
for t in cc curl jq awk; do command -v "$t" >/dev/null || die "$t is required"; done
echo "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid), uid=$(id -u), $SECS s per run"

W=$HERE/../tests/agent/workload.c
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$TMP/workload_fp" "$W" || die "cannot build the workload"
FX=$HERE/../tests/agent/fixtures
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$TMP/offcpu" "$FX/offcpu.c" || die "cannot build the off-CPU program"
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$TMP/alloc" "$FX/alloc.c" || die "cannot build the allocation program"
cc -O2 -g -fomit-frame-pointer -pthread -o "$TMP/workload_dw" "$W" || die "cannot build the workload"

"$FLAMEDB" serve --listen 127.0.0.1:0 --data "$TMP/data" --retention 0 >"$TMP/server.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do
    port=$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || die "server did not start: $(tail -3 "$TMP/server.log")"
BASE="http://127.0.0.1:${port##*:}"

TCK=$(getconf CLK_TCK)
now() { echo "$EPOCHREALTIME"; }
# CPU seconds of a process: utime + stime of /proc/PID/stat count every
# thread, dead ones too, but in ticks (10 ms); the sum of the live threads'
# /proc/PID/task/*/schedstat is in ns.  The larger of the two.
cpu_secs() {
    local ticks ns
    ticks=$(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$ticks" ] || return 1
    ns=$(cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
    awk -v t="$ticks" -v k="$TCK" -v n="$ns" 'BEGIN { a = t / k; b = n / 1e9; printf "%.4f", (a > b ? a : b) }'
}
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# agent_run NAME BIN UNWIND HZ: the workload under the agent for $SECS s.
# Sets SHARES (measured "a b c" in %), TRUTH ("a b c" in %), CPU_PCT, RSS_MB.
agent_run() {
    local name=$1 bin=$2 unwind=$3 hz=$4 t0 t1 c1 hwm
    "$bin" $((SECS + 3)) 2 --truth >"$TMP/$name.truth" 2>&1 &
    WPID=$!
    sleep 0.5
    "$AGENT" --server "$BASE" --pid "$WPID" --service "$name" --frequency "$hz" \
        --interval 5 --unwind "$unwind" --no-kernel --fsp 1 >"$TMP/$name.agent.log" 2>&1 &
    APID=$!
    t0=$(now)
    sleep "$SECS"
    c1=$(cpu_secs "$APID"); hwm=$(hwm_kb "$APID"); t1=$(now)
    [ -n "$c1" ] || die "agent ($name) died: $(tail -5 "$TMP/$name.agent.log")"
    kill -TERM "$APID"; wait "$APID" || die "agent ($name) exited non-zero: $(tail -5 "$TMP/$name.agent.log")"
    APID=""
    wait "$WPID"; WPID=""
    CPU_PCT=$(awk -v c="$c1" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", c / (b - a) * 100 }')
    CPU_S=$(awk -v c="$c1" 'BEGIN { printf "%.3f", c }')
    RSS_MB=$(awk -v h="$hwm" 'BEGIN { printf "%.1f", h / 1024 }')
    TRUTH=$(jq -r '.share | [.work_a, .work_b, .work_c] | map(. * 100) | map(tostring) | join(" ")' "$TMP/$name.truth")
    SHARES=$(curl -sS -G "$BASE/api/v1/top" --data-urlencode "query={service=\"$name\"}" \
        -d from=now-1h -d limit=0 | jq -r '
        [.functions[] | select(.name == "work_a" or .name == "work_b" or .name == "work_c")] as $f
        | ($f | map(.self) | add) as $s
        | if ($s // 0) == 0 then "none" else
          [("work_a", "work_b", "work_c") as $n
           | (([$f[] | select(.name == $n) | .self] | add) // 0) * 100 / $s | tostring] | join(" ") end')
    SAMPLES=$(curl -sS -G "$BASE/api/v1/top" --data-urlencode "query={service=\"$name\"}" \
        -d from=now-1h -d limit=1 | jq -r '.samples')
    [ "$SHARES" != none ] || die "agent ($name) stored no work_* samples: $(tail -5 "$TMP/$name.agent.log")"
}

mae() {  # "a b c" "a b c" -> mean absolute error
    awk -v m="$1" -v t="$2" 'BEGIN { split(m, x, " "); split(t, y, " ");
        for (i = 1; i <= 3; i++) { d = x[i] - y[i]; s += d < 0 ? -d : d } printf "%.2f", s / 3 }'
}

ONLY=${BENCH_AGENT_ONLY:-}
if [ -z "$ONLY" ]; then
echo
echo "== accuracy (fp build, --unwind fp, 2 threads, $SECS s per frequency)"
printf '%-6s %-8s %-26s %-26s %-8s\n' Hz samples "agent a/b/c %" "truth a/b/c %" "MAE pp"
for hz in 19 99 499; do
    agent_run "acc$hz" "$TMP/workload_fp" fp "$hz"
    m=$(mae "$SHARES" "$TRUTH")
    printf '%-6s %-8s %-26s %-26s %-8s\n' "$hz" "$SAMPLES" \
        "$(awk -v s="$SHARES" 'BEGIN{split(s,x," "); printf "%.2f/%.2f/%.2f", x[1], x[2], x[3]}')" \
        "$(awk -v s="$TRUTH" 'BEGIN{split(s,x," "); printf "%.2f/%.2f/%.2f", x[1], x[2], x[3]}')" "$m"
    echo "RESULT agent accuracy ${hz} Hz: MAE $m pp$([ "$hz" = 99 ] && echo ' (target <= 1.5)')"
    if [ "$hz" = 99 ]; then FP_CPU=$CPU_PCT; FP_CPU_S=$CPU_S; FP_RSS=$RSS_MB; fi
done

echo
echo "== overhead at 99 Hz (2 busy threads, $SECS s)"
agent_run "dwarf99" "$TMP/workload_dw" dwarf 99
DW_CPU=$CPU_PCT; DW_CPU_S=$CPU_S; DW_RSS=$RSS_MB
echo "dwarf build, --unwind dwarf: MAE $(mae "$SHARES" "$TRUTH") pp ($SAMPLES samples)"

# perf_pipeline NAME BIN CALLGRAPH...: CPU seconds of perf record + perf
# script + collapse over the same workload for $SECS s.
perf_pipeline() {
    local name=$1 bin=$2 t
    shift 2
    "$bin" $((SECS + 3)) 2 >/dev/null 2>&1 &
    WPID=$!
    sleep 0.5
    TIMEFORMAT='%U %S'
    t=$( { time perf record -q "$@" -F 99 -p "$WPID" -o "$TMP/$name.data" -- sleep "$SECS" >/dev/null 2>&1; } 2>&1 )
    wait "$WPID"; WPID=""
    PERF_REC_S=$(awk -v t="$t" 'BEGIN { split(t, x, " "); printf "%.3f", x[1] + x[2] }')
    t=$( { time { perf script -i "$TMP/$name.data" 2>/dev/null | awk '
        /^[^ \t]/ { if (n) emit(); n = 0; next }
        /^[ \t]*$/ { if (n) emit(); n = 0; next }
        { f[++n] = $2; sub(/\+0x[0-9a-f]+$/, "", f[n]) }
        function emit(   s, i) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; c[s]++ }
        END { if (n) emit(); for (s in c) print s, c[s] }' >"$TMP/$name.folded"; }; } 2>&1 )
    PERF_SCRIPT_S=$(awk -v t="$t" 'BEGIN { split(t, x, " "); printf "%.3f", x[1] + x[2] }')
    PERF_S=$(awk -v a="$PERF_REC_S" -v b="$PERF_SCRIPT_S" 'BEGIN { printf "%.3f", a + b }')
    PERF_STACKS=$(wc -l <"$TMP/$name.folded")
}

if command -v perf >/dev/null; then
    perf_pipeline perf_fp "$TMP/workload_fp" -g
    PF_S=$PERF_S
    echo "perf record -g: record ${PERF_REC_S} s + script|collapse ${PERF_SCRIPT_S} s CPU ($PERF_STACKS stacks)"
    if [ "${BENCH_AGENT_PERF_DWARF:-1}" != 0 ]; then
        perf_pipeline perf_dw "$TMP/workload_dw" --call-graph dwarf
        PD_S=$PERF_S
        echo "perf record --call-graph dwarf: record ${PERF_REC_S} s + script|collapse ${PERF_SCRIPT_S} s CPU"
    fi
else
    echo "perf not installed: no pipeline comparison"
fi

echo
printf '%-22s %-12s %-12s %-12s %-10s\n' run "CPU % core" "CPU s" "vs perf -g" "VmHWM MB"
ratio() { [ -n "${2:-}" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }' || echo n/a; }
printf '%-22s %-12s %-12s %-12s %-10s\n' "agent fp 99 Hz" "$FP_CPU" "$FP_CPU_S" "$(ratio "$FP_CPU_S" "${PF_S:-}")" "$FP_RSS"
printf '%-22s %-12s %-12s %-12s %-10s\n' "agent dwarf 99 Hz" "$DW_CPU" "$DW_CPU_S" "$(ratio "$DW_CPU_S" "${PF_S:-}")" "$DW_RSS"
[ -n "${PF_S:-}" ] && printf '%-22s %-12s %-12s\n' "perf -g pipeline" "$(awk -v s="$PF_S" -v t="$SECS" 'BEGIN { printf "%.2f", s / t * 100 }')" "$PF_S"
[ -n "${PD_S:-}" ] && printf '%-22s %-12s %-12s %-12s\n' "perf dwarf pipeline" "$(awk -v s="$PD_S" -v t="$SECS" 'BEGIN { printf "%.2f", s / t * 100 }')" "$PD_S" "dwarf/dwarf $(ratio "$DW_CPU_S" "$PD_S")"
echo "RESULT agent overhead fp 99 Hz: $FP_CPU % of a core (target <= 1), VmHWM $FP_RSS MB (target <= 30), $(ratio "$FP_CPU_S" "${PF_S:-}") x perf -g pipeline (target <= 0.5)"
echo "RESULT agent overhead dwarf 99 Hz: $DW_CPU % of a core (target <= 3), VmHWM $DW_RSS MB (target <= 30)$([ -n "${PD_S:-}" ] && echo ", $(ratio "$DW_CPU_S" "$PD_S") x perf dwarf pipeline")"
fi   # BENCH_AGENT_ONLY

# ---- off-CPU and allocation profiles (issue 13) ---------------------------
# extra_run NAME SECS "WORKLOAD ARGS" AGENT-ARGS...: the program for SECS + 2
# s, the agent on it for SECS s.  Sets CPU_PCT, RSS_MB; the program's
# --truth output is in $TMP/NAME.truth.
extra_run() {
    local name=$1 secs=$2 wl=$3 t0 t1 c1 hwm
    shift 3
    # shellcheck disable=SC2086
    $wl >"$TMP/$name.truth" 2>&1 &
    WPID=$!
    sleep 0.5
    "$AGENT" --server "$BASE" --pid "$WPID" --service "$name" --frequency 99 \
        --interval 5 --unwind fp --fsp 1 "$@" >"$TMP/$name.agent.log" 2>&1 &
    APID=$!
    t0=$(now)
    sleep "$secs"
    c1=$(cpu_secs "$APID"); hwm=$(hwm_kb "$APID"); t1=$(now)
    [ -n "$c1" ] || die "agent ($name) died: $(tail -5 "$TMP/$name.agent.log")"
    kill -TERM "$APID"; wait "$APID" || die "agent ($name) exited non-zero: $(tail -5 "$TMP/$name.agent.log")"
    APID=""
    wait "$WPID"; WPID=""
    CPU_PCT=$(awk -v c="$c1" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", c / (b - a) * 100 }')
    RSS_MB=$(awk -v h="$hwm" 'BEGIN { printf "%.1f", h / 1024 }')
    if grep -q -- '--offcpu: no\|--alloc: no' "$TMP/$name.agent.log"; then
        echo "  ($name: $(grep -o -- '--[a-z]*: no .*' "$TMP/$name.agent.log" | head -1))"
    fi
}

# typed_shares SERVICE TYPE "s1 s2 s3": percent of each site's value over
# the three (stacks through a site, names only).
typed_shares() {
    curl -sS -G "$BASE/api/v1/query" --data-urlencode "query={service=\"$1\",type=\"$2\"}" \
        -d from=now-1h -d max_nodes=0 -d format=folded | awk -v list="$3" '
        BEGIN { ns = split(list, S, " "); for (i = 1; i <= ns; i++) want[S[i]] = 1 }
        NF { n = split($0, a, " "); v = a[n]; s = substr($0, 1, length($0) - length(v) - 1)
             k = split(s, f, ";"); for (i = 1; i <= k; i++) if (f[i] in want) { t[f[i]] += v; break } }
        END { tot = 0; for (x in t) tot += t[x]; if (tot == 0) { print "none"; exit }
              sep = ""; for (i = 1; i <= ns; i++) { printf "%s%.2f", sep, t[S[i]] * 100 / tot; sep = " " }
              print "" }'
}
fmt3() { awk -v s="$1" 'BEGIN { split(s, x, " "); printf "%.1f/%.1f/%.1f", x[1], x[2], x[3] }'; }

if [ "${BENCH_AGENT_EXTRA:-1}" != 0 ] || [ "$ONLY" = alloc ]; then
    XS=${BENCH_AGENT_EXTRA_SECONDS:-10}
    echo
    echo "== off-CPU and allocation profiles (issue 13), --unwind fp, 99 Hz, $XS s per run"
    printf '%-40s %-12s %-10s\n' run "CPU % core" "VmHWM MB"
    WL_cpu=-; WL_offcpu=-; WL_alloc=-; OFF0=-; OFF1=-; OS="0 0 0"; OT="0 0 0"; OM=-
    if [ "$ONLY" != alloc ]; then
    for mode in cpu offcpu alloc; do
        case $mode in cpu) a=() ;; offcpu) a=(--offcpu) ;; alloc) a=(--alloc) ;; esac
        extra_run "x_wl_$mode" "$XS" "$TMP/workload_fp $((XS + 2)) 2" --no-kernel "${a[@]}"
        printf '%-40s %-12s %-10s\n' "workload.c (2 busy threads), $mode" "$CPU_PCT" "$RSS_MB"
        eval "WL_$mode=\"$CPU_PCT % / $RSS_MB MB\""
    done
    extra_run x_off_cpu "$XS" "$TMP/offcpu $((XS + 2)) 2 --truth"
    printf '%-40s %-12s %-10s\n' "offcpu.c (2 workers), on-CPU only" "$CPU_PCT" "$RSS_MB"
    OFF0="$CPU_PCT % / $RSS_MB MB"
    extra_run x_off "$XS" "$TMP/offcpu $((XS + 2)) 2 --truth" --offcpu
    SW=$(grep -o 'offcpu switches=[0-9]*' "$TMP/x_off.agent.log" | tail -1 | sed 's/.*=//')
    printf '%-40s %-12s %-10s %s\n' "offcpu.c (2 workers), --offcpu" "$CPU_PCT" "$RSS_MB" \
        "($(awk -v s="${SW:-0}" -v t="$XS" 'BEGIN { printf "%.0f", s / t }') switch-outs/s)"
    OFF1="$CPU_PCT % / $RSS_MB MB"
    OT=$(jq -r '.share | [.site_sleep, .site_read, .site_lock] | map(. * 100) | map(tostring) | join(" ")' "$TMP/x_off.truth")
    OS=$(typed_shares x_off offcpu "site_sleep site_read site_lock")
    OM=$(mae "$OS" "$OT")
    fi   # not BENCH_AGENT_ONLY=alloc
    extra_run x_alloc "$XS" "$TMP/alloc $((XS + 2)) 1 --truth --work 100" --alloc
    printf '%-40s %-12s %-10s\n' "alloc.c (--work 100), --alloc" "$CPU_PCT" "$RSS_MB"
    AL1="$CPU_PCT % / $RSS_MB MB"
    AT1=$(jq -r '.objects_share | [.site_a, .site_b, .site_c] | map(. * 100) | map(tostring) | join(" ")' "$TMP/x_alloc.truth")
    AT2=$(jq -r '.space_share | [.site_a, .site_b, .site_c] | map(. * 100) | map(tostring) | join(" ")' "$TMP/x_alloc.truth")
    AS1=$(typed_shares x_alloc alloc_objects "site_a site_b site_c")
    AS2=$(typed_shares x_alloc alloc_space "site_a site_b site_c")
    echo
    printf '%-26s %-22s %-22s %-8s\n' profile "agent %" "truth %" "MAE pp"
    [ "$ONLY" = alloc ] || printf '%-26s %-22s %-22s %-8s\n' "offcpu sleep/read/lock" "$(fmt3 "$OS")" "$(fmt3 "$OT")" "$OM"
    printf '%-26s %-22s %-22s %-8s\n' "alloc_objects a/b/c" "$(fmt3 "$AS1")" "$(fmt3 "$AT1")" "$(mae "$AS1" "$AT1")"
    printf '%-26s %-22s %-22s %-8s\n' "alloc_space a/b/c" "$(fmt3 "$AS2")" "$(fmt3 "$AT2")" "$(mae "$AS2" "$AT2")"
    echo
    echo "cost to the profiled program: alloc.c calls per CPU second alone (10 s), under --alloc with the"
    echo "defaults (every 307th call, probes in a 0.3 s window of each 10 s interval; 20 s: 2 windows),"
    echo "the same with --alloc-probes pmu, and under --alloc-duty 1 (always installed; 8 s); one thread;"
    echo "slowdown in calls per CPU second (wall: in calls per second)"
    printf '%-6s %-12s %-12s %-18s %-12s %-18s %-12s %-18s\n' "--work" "alone" "--alloc" "slowdown % (wall)" \
        "pmu" "slowdown % (wall)" "duty 1" "slowdown % (wall)"
    cost_run() {  # WORK SECONDS AGENT-ARGS...: sets R (calls per CPU second), RW (per second)
        local w=$1 s=$2
        shift 2
        "$TMP/alloc" "$s" 1 --truth --work "$w" >"$TMP/probed.$w" 2>&1 &
        WPID=$!
        if [ $# -gt 0 ]; then
            "$AGENT" --server "$BASE" --pid "$WPID" --service x_cost --duration $((s + 1)) \
                --unwind fp --no-kernel "$@" >"$TMP/cost.$w.log" 2>&1 &
            APID=$!
        fi
        wait "$WPID"; WPID=""
        [ -n "$APID" ] && { kill -TERM "$APID" 2>/dev/null; wait "$APID"; APID=""; }
        R=$(jq -r .calls_per_cpu_s "$TMP/probed.$w")
        RW=$(jq -r .calls_per_s "$TMP/probed.$w")
    }
    slow() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (1 - b / a) * 100 }'; }
    for w in 0 100 1000; do
        for _ in $(seq "${BENCH_AGENT_ALLOC_RUNS:-1}"); do
            cost_run "$w" 10; r0=$R; w0=$RW
            cost_run "$w" 20 --alloc; r1=$R; w1=$RW
            cost_run "$w" 20 --alloc --alloc-probes pmu; r2=$R; w2=$RW
            cost_run "$w" 8 --alloc --alloc-duty 1; r3=$R; w3=$RW
            sd=$(slow "$r0" "$r1"); sp=$(slow "$r0" "$r2"); sa=$(slow "$r0" "$r3")
            printf '%-6s %-12.0f %-12.0f %-18s %-12.0f %-18s %-12.0f %-18s\n' "$w" "$r0" "$r1" "$sd ($(slow "$w0" "$w1"))" \
                "$r2" "$sp ($(slow "$w0" "$w2"))" "$r3" "$sa ($(slow "$w0" "$w3"))"
            eval "SD_$w=$sd; SP_$w=$sp; SA_$w=$sa"
        done
    done
    echo "  (a probed run includes the agent's start, ~0.1-0.3 s unprobed; load average now $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$ONLY" != alloc ]; then
        echo "RESULT agent 99 Hz on workload.c: on-CPU $WL_cpu, --offcpu $WL_offcpu, --alloc $WL_alloc (CPU % core / VmHWM)"
        echo "RESULT agent --offcpu on offcpu.c: $OFF1 (on-CPU only: $OFF0); share MAE $OM pp"
    fi
    echo "RESULT agent --alloc on alloc.c: $AL1; share MAE objects $(mae "$AS1" "$AT1") pp, space $(mae "$AS2" "$AT2") pp"
    echo "RESULT agent --alloc slowdown of the allocation loop at the defaults (calls per CPU second, last run): $SD_0 % (0 work/call), $SD_100 % (100), $SD_1000 % (1000) (target <= 5); --alloc-probes pmu: $SP_0 %, $SP_100 %, $SP_1000 %; always installed: $SA_0 %, $SA_100 %, $SA_1000 %"
fi

[ "${BENCH_AGENT_FDA:-0}" = 1 ] || exit 0

# ---- FDA: hot functions that move ---------------------------------------
SHIFT=12; FDA_SECS=36; FDA_IV=2
fda_run() {  # NAME AGENT-ARGS...: sets FDA_MAE (mean over phases), FDA_SAMPLES
    local name=$1 start k from until sh tr m sum=0 np=0
    shift
    "$TMP/workload_fp" $((FDA_SECS + 2)) 2 --truth --shift "$SHIFT" >"$TMP/$name.truth" 2>&1 &
    WPID=$!
    sleep 0.2
    "$AGENT" --server "$BASE" --pid "$WPID" --service "$name" --interval "$FDA_IV" \
        --duration "$FDA_SECS" --unwind fp --no-kernel --fsp 1 --verbose "$@" >"$TMP/$name.agent.log" 2>&1 ||
        die "agent ($name) failed: $(tail -5 "$TMP/$name.agent.log")"
    wait "$WPID"; WPID=""
    start=$(jq -r .start "$TMP/$name.truth")
    for k in 0 1 2; do
        from=$(awk -v s="$start" -v k="$k" -v p="$SHIFT" 'BEGIN { printf "%.3f", s + k * p }')
        until=$(awk -v s="$start" -v k="$k" -v p="$SHIFT" -v i="$FDA_IV" 'BEGIN { printf "%.3f", s + (k + 1) * p - i + 0.001 }')
        sh=$(curl -sS -G "$BASE/api/v1/top" --data-urlencode "query={service=\"$name\"}" \
            -d from="$from" -d until="$until" -d limit=0 | jq -r '
            [.functions[] | select(.name == "work_a" or .name == "work_b" or .name == "work_c")] as $f
            | ($f | map(.self) | add) as $s
            | [("work_a", "work_b", "work_c") as $n
               | (([$f[] | select(.name == $n) | .self] | add) // 0) * 100 / ($s // 1) | tostring] | join(" ")')
        case $k in 0) tr="50 30 20" ;; 1) tr="20 50 30" ;; 2) tr="30 20 50" ;; esac
        m=$(mae "$sh" "$tr")
        sum=$(awk -v a="$sum" -v b="$m" 'BEGIN { print a + b }'); np=$((np + 1))
    done
    FDA_MAE=$(awk -v a="$sum" -v n="$np" 'BEGIN { printf "%.2f", a / n }')
    FDA_SAMPLES=$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={service=\"$name\"}" \
        -d from=now-1h | jq '[.series[].samples] | add // 0')
}

echo
echo "== FDA: split rotating every ${SHIFT} s, ${FDA_IV} s intervals, ${FDA_SECS} s, 2 threads"
fda_run fda_fixed --frequency 396
HI_MAE=$FDA_MAE; HI_S=$FDA_SAMPLES
fda_run fda_adapt --frequency 99 --fda --min-frequency 25 --max-frequency 396
AD_MAE=$FDA_MAE; AD_S=$FDA_SAMPLES
printf '%-26s %-12s %-10s\n' run "MAE pp" samples
printf '%-26s %-12s %-10s\n' "fixed 396 Hz" "$HI_MAE" "$HI_S"
printf '%-26s %-12s %-10s\n' "--fda from 99 (25..396)" "$AD_MAE" "$AD_S"
grep -o 'FDA: .*' "$TMP/fda_adapt.agent.log" | head -20 | sed 's/^/  /'
echo "RESULT agent FDA: MAE $AD_MAE pp with $(awk -v a="$AD_S" -v b="$HI_S" 'BEGIN { printf "%.1f", a * 100 / b }')% of the samples of a fixed 396 Hz (MAE $HI_MAE pp)"

