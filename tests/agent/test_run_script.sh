# shellcheck shell=bash
# test_run_script.sh — `make run` (scripts/run.sh) starts the agent only
# once the server answers, stops both on one SIGINT (the agent first, so
# its last window arrives), stops the agent when the server exits on its
# own, never starts it when the server cannot start, and keeps the server
# when the agent gives up (issue 15).
#
# run.sh runs here with a temporary data directory and a free port
# (FLAMEDB_DATA, FLAMEDB_LISTEN) and, as its agent, a wrapper that records
# its pid and execs the real agent, so the test knows whether and which
# agent was started.  The agent's window is 600 s (FLAMEDB_AGENT_ARGS):
# a profile on the server is one flushed at the stop.

RS_SCRIPT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/run.sh

# rs_wrapper: an agent that records it was started (its pid in
# $AT_TMP/agent.pid), then is the real one.
rs_wrapper() {
    cat >"$AT_TMP/agent-wrapper" <<EOF
#!/usr/bin/env bash
echo \$\$ >"$AT_TMP/agent.pid"
exec "$AGENT" "\$@"
EOF
    chmod +x "$AT_TMP/agent-wrapper"
}

# rs_free_port: a port nothing listens on (a server on port 0 tells which,
# then goes).
rs_free_port() {
    start_server
    RS_PORT=$PORT
    stop_server
}

# rs_start [AGENT]: scripts/run.sh in the background (RPID), its output in
# $AT_TMP/run.log, on RS_PORT with data in $AT_TMP/rundata.
rs_start() {
    local agent=${1:-$AT_TMP/agent-wrapper}
    RS_DATA="$AT_TMP/rundata"
    # job control on: a background job of a script otherwise starts with
    # SIGINT ignored, which no trap can undo; a terminal's Ctrl-C reaches
    # run.sh as a foreground job, where it is not
    set -m
    FLAMEDB_LISTEN="127.0.0.1:$RS_PORT" FLAMEDB_DATA="$RS_DATA" \
        FLAMEDB_AGENT_ARGS="--interval 600 --frequency 99 --no-kernel" \
        bash "$RS_SCRIPT" "$FLAMEDB" "$agent" >"$AT_TMP/run.log" 2>&1 &
    RPID=$!
    set +m
}

# rs_wait_up: the server answers and the agent samples; sets RS_SPID RS_APID.
rs_wait_up() {
    local tries=300
    while [ $tries -gt 0 ]; do
        grep -q 'sampling every process' "$AT_TMP/run.log" 2>/dev/null && break
        kill -0 "$RPID" 2>/dev/null || die "run.sh exited: $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
        sleep 0.1; tries=$((tries - 1))
    done
    [ $tries -gt 0 ] || die "the agent of run.sh did not start sampling: $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
    RS_APID=$(cat "$AT_TMP/agent.pid")
    RS_SPID=$(pgrep -P "$RPID" -f "serve --listen 127.0.0.1:$RS_PORT")
    [ -n "$RS_SPID" ] || die "no server among run.sh's children: $(ps -o pid,args --ppid "$RPID")"
    curl -fsS "http://127.0.0.1:$RS_PORT/healthz" >/dev/null || die "the server of run.sh does not answer"
}

# rs_wait_exit [SECS]: run.sh's exit status in RS_RC (safety limit only).
rs_wait_exit() {
    local tries=$(( ${1:-60} * 10 ))
    while kill -0 "$RPID" 2>/dev/null && [ $tries -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
    if kill -0 "$RPID" 2>/dev/null; then
        fail "run.sh still running after ${1:-60} s: $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
        kill -TERM "$RPID"
    fi
    wait "$RPID"
    RS_RC=$?
}

rs_gone() { ! kill -0 "$1" 2>/dev/null; }

rs_cleanup() {
    local rc=$?
    [ -n "${RPID:-}" ] && kill -TERM "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null
    [ -n "${RS_APID:-}" ] && kill -TERM "$RS_APID" 2>/dev/null
    [ -n "${RS_SPID:-}" ] && kill -TERM "$RS_SPID" 2>/dev/null
    (exit "$rc")
    at_cleanup
}

test_sigint_stops_agent_then_server() {
    trap rs_cleanup EXIT
    rs_wrapper
    rs_free_port
    start_workload "$AT_BUILD/workload_fp" 60 1      # something to profile
    rs_start
    rs_wait_up
    sleep 2                                           # a window's worth of samples
    kill -INT "$RPID"
    rs_wait_exit 60
    assert_eq "run.sh exit status after SIGINT" 0 "$RS_RC"
    rs_gone "$RS_APID" || fail "the agent ($RS_APID) still runs after run.sh's SIGINT"
    rs_gone "$RS_SPID" || fail "the server ($RS_SPID) still runs after run.sh's SIGINT"
    grep -q 'done:' "$AT_TMP/run.log" || fail "the agent did not finish (no 'done:' line): $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
    # the last window arrived: read the data directory with a server of our own
    # shellcheck disable=SC2034  # lib.sh's _launch_server reads DATA
    DATA=$RS_DATA SLOG="$AT_TMP/check.log" PORT=0
    : >"$SLOG"
    _launch_server
    assert_ge "profiles of the workload (the window flushed at Ctrl-C)" 1 \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode 'query={service="workload_fp"}' -d from=now-1h |
            jq '[.series[].profiles] | add // 0')" ||
        fail "  run.sh log: $(tail -8 "$AT_TMP/run.log" | tr '\n' '|')"
}

test_server_exit_stops_agent() {
    trap rs_cleanup EXIT
    rs_wrapper
    rs_free_port
    rs_start
    rs_wait_up
    kill -TERM "$RS_SPID"
    rs_wait_exit 60
    rs_gone "$RS_APID" || fail "the agent ($RS_APID) still runs after the server exited"
    assert_contains "run.sh says the server exited" "$(cat "$AT_TMP/run.log")" "the server exited"
    grep -q 'done:' "$AT_TMP/run.log" || fail "the agent was not stopped cleanly (no 'done:' line): $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
}

test_server_port_in_use_no_agent() {
    trap rs_cleanup EXIT
    rs_wrapper
    start_server                     # holds $PORT
    RS_PORT=$PORT
    rs_start
    rs_wait_exit 60
    [ "$RS_RC" != 0 ] || fail "run.sh exited 0 although the port was taken"
    [ -e "$AT_TMP/agent.pid" ] && fail "the agent was started although the server could not listen"
    assert_contains "run.sh says why" "$(cat "$AT_TMP/run.log")" "already listens on 127.0.0.1:$RS_PORT"
}

test_server_start_failure_no_agent() {
    trap rs_cleanup EXIT
    rs_wrapper
    rs_free_port
    # the data directory is a file: the server cannot open it and exits
    RS_DATA="$AT_TMP/rundata"
    : >"$RS_DATA"
    FLAMEDB_LISTEN="127.0.0.1:$RS_PORT" FLAMEDB_DATA="$RS_DATA" \
        bash "$RS_SCRIPT" "$FLAMEDB" "$AT_TMP/agent-wrapper" >"$AT_TMP/run.log" 2>&1 &
    RPID=$!
    rs_wait_exit 60
    [ "$RS_RC" != 0 ] || fail "run.sh exited 0 although the server did not start"
    [ -e "$AT_TMP/agent.pid" ] && fail "the agent was started although the server did not start"
    assert_contains "run.sh says why" "$(cat "$AT_TMP/run.log")" "the server exited"
}

test_agent_failure_keeps_server() {
    trap rs_cleanup EXIT
    rs_free_port
    # an agent that gives up at once, as it does where perf_event is refused
    printf '#!/bin/sh\necho "flamedb-agent: perf_event_open: Permission denied (stand-in)" >&2\nexit 1\n' \
        >"$AT_TMP/agent-fails"
    chmod +x "$AT_TMP/agent-fails"
    rs_start "$AT_TMP/agent-fails"
    local tries=300
    while ! grep -q 'the agent exited' "$AT_TMP/run.log" 2>/dev/null && [ $tries -gt 0 ]; do
        kill -0 "$RPID" 2>/dev/null || break
        sleep 0.1; tries=$((tries - 1))
    done
    kill -0 "$RPID" 2>/dev/null || die "run.sh exited when its agent failed: $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
    curl -fsS "http://127.0.0.1:$RS_PORT/healthz" >/dev/null ||
        fail "the server stopped answering when the agent failed: $(tail -5 "$AT_TMP/run.log" | tr '\n' '|')"
    kill -INT "$RPID"
    rs_wait_exit 60
    assert_eq "run.sh exit status after SIGINT" 0 "$RS_RC"
}
