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
export AT_BUILD
trap 'rm -rf "$AT_BUILD"' EXIT

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
# each test gets its own scratch directory (lib.sh: AT_TMP)
at_setup() { AT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-at.XXXXXX"); }
# shellcheck source=../suite.sh
source "$HERE/../suite.sh"
suite_run agent "$HERE" AT
