# shellcheck shell=bash
# lib.sh — helpers for the agent's end-to-end tests (bash + curl + jq).
#
# Sourced by run.sh together with one test_*.sh file; every test_* function
# runs in its own subshell.  A test fails when it records a failure (fail /
# assert_* / die) or exits non-zero.  Failures are appended to $AT_FAILS.
#
# Environment from run.sh:
#   FLAMEDB, AGENT   the binaries under test (absolute paths)
#   AT_BUILD         the test programs, built once by run.sh:
#                    workload_fp workload_dw spin_pie spin_nopie
#                    spin_stripped (+ spin_stripped.debug) spin_nodebug
#                    (symbols, no DWARF) uselib libhot.so
#                    dlmain libhot_nofp.so (no frame pointers)
#                    churn execer (fixtures/churn.c, execer.c)
#                    spin_cpp (C++, mangled names: fixtures/spin_cpp.cc)
#                    offcpu alloc (fixtures/offcpu.c, alloc.c: issue 13)
#
# Processes:  start_server [PORT]   fresh data dir (port 0 = any), sets BASE PORT;
#                                   flags from AT_SERVER_ARGS (fleet control)
#             restart_server        the same data dir and port
#             stop_server
#             start_workload BIN ARGS...   sets WPID (background)
#             start_agent ARGS...   flamedb-agent --server $BASE ARGS..., sets APID
#             wait_agent [SECS]     waits for the agent's exit, sets ARC
# Queries:    top_shares SERVICE    "work_a work_b work_c" shares in percent
#             folded SERVICE        the merged folded profile of SERVICE
# Every process started here is stopped by the EXIT trap (at_cleanup).

: "${FLAMEDB:?}" "${AGENT:?}" "${AT_BUILD:?}"
: "${AT_FAILS:=/dev/stderr}"

AT_TMP=${AT_TMP:-}   # per-test scratch directory, made by run.sh
SPID=""; APID=""; WPID=""; BASE=""; PORT=0; DATA=""; SLOG=""; ALOG=""; ARC=""

fail() { printf '  %s\n' "$*" >>"$AT_FAILS"; }
# skip REASON: this kernel lacks what the test needs; run.sh says SKIP.
skip() { printf '%s\n' "$*" >"$AT_FAILS.skip"; exit 0; }
die() { fail "$@"; exit 1; }

assert_eq() {
    [ "$2" = "$3" ] && return 0
    fail "$1: expected [$2], got [$3]"; return 1
}
assert_contains() {
    [[ "$2" == *"$3"* ]] && return 0
    fail "$1: expected to contain [$3], got [$(head -c 600 <<<"$2")]"; return 1
}
# assert_near desc want got tolerance (numbers)
assert_near() {
    if awk -v w="$2" -v g="$3" -v t="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g != "" && d <= t) }'; then
        return 0
    fi
    fail "$1: expected $2 ± $4, got [$3]"; return 1
}
# assert_ge desc min got (numbers)
assert_ge() {
    awk -v m="$2" -v g="$3" 'BEGIN { exit !(g != "" && g + 0 >= m + 0) }' && return 0
    fail "$1: expected >= $2, got [$3]"; return 1
}

# Why perf_event may be refused, for failure messages.
perf_context() {
    local p
    p=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')
    echo "perf_event_paranoid=$p, uid=$(id -u)$( [ "$(id -u)" != 0 ] && [ "$p" != '?' ] && [ "$p" -ge 2 ] && echo ' (non-root with paranoid >= 2: user-space sampling of own processes only; >= 3 forbids all)')"
}

# ---- the server -------------------------------------------------------------

_launch_server() {
    local before tries=300 line
    before=$(wc -l <"$SLOG")
    # shellcheck disable=SC2086  # AT_SERVER_ARGS: extra flags, split on blanks
    "$FLAMEDB" serve --listen "127.0.0.1:$PORT" --data "$DATA" ${AT_SERVER_ARGS:-} >>"$SLOG" 2>&1 &
    SPID=$!
    while [ $tries -gt 0 ]; do
        line=$(tail -n +"$((before + 1))" "$SLOG" | grep -o 'listening on http://127\.0\.0\.1:[0-9]*' | head -1)
        [ -n "$line" ] && break
        kill -0 "$SPID" 2>/dev/null || { SPID=""; die "server exited before listening: $(tail -3 "$SLOG")"; }
        sleep 0.05
        tries=$((tries - 1))
    done
    [ -n "$line" ] || die "server did not print 'listening on': $(tail -3 "$SLOG")"
    PORT=${line##*:}
    BASE="http://127.0.0.1:$PORT"
}

start_server() {
    DATA=$(mktemp -d "$AT_TMP/data.XXXXXX")
    SLOG="$DATA.log"; : >"$SLOG"
    PORT=${1:-0}
    _launch_server
}

stop_server() {
    [ -n "$SPID" ] || return 0
    kill -TERM "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    SPID=""
}

restart_server() {
    stop_server
    _launch_server
}

# ---- the workload and the agent -------------------------------------------

start_workload() {
    local bin=$1
    shift
    "$bin" "$@" >"$AT_TMP/workload.out" 2>&1 &
    WPID=$!
    sleep 0.3
    kill -0 "$WPID" 2>/dev/null || die "workload $bin did not start: $(cat "$AT_TMP/workload.out")"
}

start_agent() {
    ALOG="$AT_TMP/agent.log"
    "$AGENT" --server "$BASE" "$@" >"$ALOG" 2>&1 &
    APID=$!
}

# wait_agent [SECS]: waits at most SECS (default 60) for the agent to exit.
wait_agent() {
    local tries=$(( ${1:-60} * 10 ))
    while [ $tries -gt 0 ] && kill -0 "$APID" 2>/dev/null; do
        sleep 0.1
        tries=$((tries - 1))
    done
    if kill -0 "$APID" 2>/dev/null; then
        fail "agent still running after ${1:-60} s past its --duration; log: $(tail -5 "$ALOG")"
        kill -TERM "$APID" 2>/dev/null
    fi
    wait "$APID"
    ARC=$?
    APID=""
}

# The agent ran and exited 0, else the test fails with its log and, when
# the log blames perf_event, with the kernel's settings.
require_agent_ok() {
    [ "$ARC" = 0 ] && return 0
    local why=""
    grep -qiE 'perf_event|paranoid|permission|not permitted|EACCES|EPERM' "$ALOG" &&
        why=" — perf_event refused? $(perf_context)"
    die "agent exited with code $ARC$why; log: $(tail -8 "$ALOG" | tr '\n' '|')"
}

agent_log_tail() { tail -8 "$ALOG" 2>/dev/null | tr '\n' '|'; }

at_cleanup() {
    local rc=$?
    [ -n "$APID" ] && kill -TERM "$APID" 2>/dev/null && wait "$APID" 2>/dev/null
    [ -n "$WPID" ] && kill -TERM "$WPID" 2>/dev/null && wait "$WPID" 2>/dev/null
    stop_server
    [ -n "$AT_TMP" ] && rm -rf "$AT_TMP"
    exit "$rc"
}

# ---- queries --------------------------------------------------------------

# top_json SERVICE: /api/v1/top over the last hour, every function.
top_json() {
    curl -sS -G "$BASE/api/v1/top" --data-urlencode "query={service=\"$1\"}" \
        -d from=now-1h -d limit=0
}

# top_shares SERVICE: "A B C", the self shares (percent) of work_a, work_b,
# work_c over their sum.
top_shares() {
    top_json "$1" | jq -r '
        [.functions[] | select(.name == "work_a" or .name == "work_b" or .name == "work_c")] as $f
        | ($f | map(.self) | add) as $s
        | if ($s // 0) == 0 then "none" else
          [("work_a", "work_b", "work_c") as $n
           | (([$f[] | select(.name == $n) | .self] | add) // 0) * 100 / $s
           | . * 100 | round / 100] | map(tostring) | join(" ") end'
}

# folded SERVICE: the merged profile as folded text (values in ns).
folded() {
    curl -sS -G "$BASE/api/v1/query" --data-urlencode "query={service=\"$1\"}" \
        -d from=now-1h -d format=folded -d max_nodes=0
}

# path_fraction FOLDED LEAF PATH: percent of LEAF's self value whose stack
# contains the frames PATH (e.g. "main;run_b;mid_b;work_b") ending at LEAF.
path_fraction() {
    awk -v leaf="$2" -v path="$3" '
        { n = split($0, a, " "); v = a[n]; s = substr($0, 1, length($0) - length(v) - 1)
          k = split(s, f, ";"); if (f[k] != leaf) next
          tot += v; s2 = ";" s; if (substr(s2, length(s2) - length(path)) == ";" path) hit += v }
        END { if (tot == 0) print "none"; else printf "%.1f\n", hit * 100 / tot }' <<<"$1"
}
