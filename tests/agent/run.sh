#!/usr/bin/env bash
# run.sh FLAMEDB AGENT — the agent's end-to-end tests: the real agent
# sampling real programs, pushing to the real server, checked through the
# server's API with curl and jq.
#
#   bash tests/agent/run.sh /abs/bin/flamedb /abs/bin/flamedb-agent
#   (make agent-test runs it after the agent's unit tests)
#
# It first builds the test programs (tests/agent/workload.c twice: with and
# without frame pointers; the fixtures: spin as PIE, non-PIE, stripped
# with a .gnu_debuglink debug file and without debug info (symbols, no
# line tables), a shared library and its user, and
# without frame pointers a program that dlopens a library, one that execs
# another, and a process churn generator), then
# sources every tests/agent/test_*.sh with lib.sh in a subshell and runs each
# of its test_* functions in a subshell of that.
#
# perf_event: the tests need it.  Where it is not permitted they FAIL, with
# the agent's error and /proc/sys/kernel/perf_event_paranoid; they never
# pass or skip silently.  A test whose kernel feature is absent (the
# sched:sched_switch tracepoint, the uprobe PMU) says SKIP with the reason
# (lib.sh's skip); it is neither passed nor failed.
#
# The last line is always "agent: N passed, M failed"; the exit status is
# non-zero when M > 0.  AT_FILTER=regex runs only the matching
# "file:function" tests.
set -u

summary() { echo "agent: $1 passed, $2 failed"; }

if [ $# -ne 2 ]; then
    echo "usage: $0 /path/to/flamedb /path/to/flamedb-agent" >&2
    summary 0 1
    exit 2
fi
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
FLAMEDB=$(abs "$1")
AGENT=$(abs "$2")
export FLAMEDB AGENT
for b in "$FLAMEDB" "$AGENT"; do
    if [ ! -x "$b" ]; then
        echo "run.sh: $b is not an executable" >&2
        summary 0 1
        exit 1
    fi
done
for tool in cc curl jq objcopy awk; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; summary 0 1; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AT_BUILD=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-at-build.XXXXXX")
RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-at-results.XXXXXX")
export AT_BUILD
trap 'rm -rf "$AT_BUILD" "$RESULTS"' EXIT

echo "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?'), uid=$(id -u)"

# ---- build the test programs ----------------------------------------------
build() {
    local out
    if ! out=$("$@" 2>&1); then
        echo "FAIL build: $*"
        echo "$out" | sed 's/^/  /' | head -20
        summary 0 1
        exit 1
    fi
}
F=$HERE/fixtures
B=$AT_BUILD
build cc -O2 -g -fno-omit-frame-pointer -pthread -o "$B/workload_fp" "$HERE/workload.c"
build cc -O2 -g -fomit-frame-pointer -pthread -o "$B/workload_dw" "$HERE/workload.c"
build cc -O2 -g -fno-omit-frame-pointer -fPIE -pie -o "$B/spin_pie" "$F/spin.c"
build cc -O2 -g -fno-omit-frame-pointer -fno-pie -no-pie -o "$B/spin_nopie" "$F/spin.c"
# stripped: no .symtab, no DWARF in the binary; the names only in the
# debug file found through .gnu_debuglink (next to the binary)
build cc -O2 -g -fno-omit-frame-pointer -fPIE -pie -o "$B/spin_stripped" "$F/spin.c"
build objcopy --only-keep-debug "$B/spin_stripped" "$B/spin_stripped.debug"
build objcopy --strip-all "$B/spin_stripped"
build objcopy --add-gnu-debuglink="$B/spin_stripped.debug" "$B/spin_stripped"
# symbols but no debug info (no line tables): frames are names only
build cc -O2 -g -fno-omit-frame-pointer -fPIE -pie -o "$B/spin_nodebug" "$F/spin.c"
build objcopy --strip-debug "$B/spin_nodebug"
build cc -O2 -g -fno-omit-frame-pointer -fPIC -shared -o "$B/libhot.so" "$F/libhot.c"
build cc -O2 -g -fno-omit-frame-pointer -o "$B/uselib" "$F/uselib.c" -L"$B" -lhot -Wl,-rpath,"$B"
# DWARF: a library without frame pointers, dlopen'ed after profiling starts
build cc -O2 -g -fomit-frame-pointer -fPIC -shared -o "$B/libhot_nofp.so" "$F/libhot.c"
build cc -O2 -g -fomit-frame-pointer -o "$B/dlmain" "$F/dlmain.c" -ldl
# endurance: process churn, without frame pointers (unwound with libdw)
build cc -O2 -g -fomit-frame-pointer -pthread -o "$B/churn" "$F/churn.c"
build cc -O2 -g -fomit-frame-pointer -o "$B/execer" "$F/execer.c"
# demangling (issue 13): C++ names, mangled in the symbol table
build g++ -O2 -g -fno-omit-frame-pointer -o "$B/spin_cpp" "$F/spin_cpp.cc"
# off-CPU and allocation profiles (issue 13): threads that block in known
# places, allocations at known sites and sizes
build cc -O2 -g -fno-omit-frame-pointer -pthread -o "$B/offcpu" "$F/offcpu.c"
build cc -O2 -g -fno-omit-frame-pointer -pthread -o "$B/alloc" "$F/alloc.c"

# ---- run the tests ----------------------------------------------------------
for file in "$HERE"/test_*.sh; do
    [ -e "$file" ] || continue
    fname=$(basename "$file" .sh)
    if ! err=$(bash -n "$file" 2>&1); then
        echo "FAIL $fname:<syntax>"; echo "  $err"
        echo "$fname:<syntax>" >>"$RESULTS/failed"
        continue
    fi
    (
        source "$HERE/lib.sh"
        source "$file"
        for t in $(declare -F | awk '$3 ~ /^test_/ { print $3 }'); do
            name="$fname:$t"
            if [ -n "${AT_FILTER:-}" ] && ! [[ "$name" =~ $AT_FILTER ]]; then continue; fi
            fails="$RESULTS/$fname.$t.fails"
            : >"$fails"
            t0=$EPOCHREALTIME
            (
                AT_FAILS=$fails
                AT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-at.XXXXXX")
                trap at_cleanup EXIT
                "$t"
            ) </dev/null 2>"$fails.stderr"
            rc=$?
            secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }')
            [ $rc -ne 0 ] && ! [ -s "$fails" ] && echo "  test exited with status $rc" >>"$fails"
            if [ -s "$fails.skip" ] && ! [ -s "$fails" ]; then
                echo "SKIP $name ($secs): $(cat "$fails.skip")"
                echo "$name" >>"$RESULTS/skipped"
            elif [ -s "$fails" ]; then
                echo "FAIL $name ($secs)"
                cat "$fails"
                if [ -s "$fails.stderr" ]; then
                    echo "  -- stderr of the test:"
                    tail -10 "$fails.stderr" | sed 's/^/     /'
                fi
                echo "$name" >>"$RESULTS/failed"
            else
                echo "ok   $name ($secs)"
                echo "$name" >>"$RESULTS/passed"
            fi
        done
    )
done

pass=0; failures=0
[ -e "$RESULTS/skipped" ] && echo "agent: $(wc -l <"$RESULTS/skipped") skipped (see the SKIP lines: this kernel lacks what they need)"
[ -e "$RESULTS/passed" ] && pass=$(wc -l <"$RESULTS/passed")
[ -e "$RESULTS/failed" ] && failures=$(wc -l <"$RESULTS/failed")
if [ "$failures" -gt 0 ]; then
    echo
    echo "failed agent tests:"
    sed 's/^/  /' "$RESULTS/failed"
fi
if [ $((pass + failures)) -eq 0 ]; then
    echo "run.sh: no test ran" >&2
    failures=1
fi
summary "$pass" "$failures"
[ "$failures" -eq 0 ]
