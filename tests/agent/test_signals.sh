# shellcheck shell=bash
# test_signals.sh — SIGINT and SIGTERM end the agent after a last flush
# (issue 15): the window in progress is pushed; when the server does not
# answer, it goes to the spool and the next run delivers it.  The agent
# runs with a window far longer than the test (--interval 600), so any
# profile that arrives is the one flushed at the signal.

SG_SERVICE=sig

# profiles_of SERVICE: profiles stored for SERVICE.
sg_profiles() {
    curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={service=\"$1\"}" \
        -d from=now-1h | jq '[.series[].profiles] | add // 0'
}

# sg_run SIGNAL: starts the agent on the workload, lets it sample for a
# while, sends SIGNAL and waits for the agent's exit (status 0 required).
sg_run() {
    local sig=$1 svc=$2
    shift 2
    start_workload "$AT_BUILD/workload_fp" 60 1
    start_agent --pid "$WPID" --service "$svc" --interval 600 --frequency 99 --unwind fp --no-kernel "$@"
    local tries=300
    while ! grep -q 'sampling the given processes' "$ALOG" 2>/dev/null && [ $tries -gt 0 ]; do
        kill -0 "$APID" 2>/dev/null || break
        sleep 0.1; tries=$((tries - 1))
    done
    sleep 2                       # about 200 samples
    kill -0 "$APID" 2>/dev/null || die "agent exited before $sig; log: $(agent_log_tail)"
    kill "-$sig" "$APID"
    wait_agent 60
    require_agent_ok
}

# the window in progress reaches the server
sg_pushed() {
    local sig=$1 svc="$SG_SERVICE-$1"
    start_server
    sg_run "$sig" "$svc"
    assert_eq "$sig: profiles stored (the partial window)" 1 "$(sg_profiles "$svc")" ||
        fail "  agent log: $(agent_log_tail)"
    assert_ge "$sig: samples in it" 50 \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={service=\"$svc\"}" -d from=now-1h |
            jq '[.series[].samples] | add // 0')"
}

# the server is down: the window goes to --spool and the next run pushes it
sg_spooled() {
    local sig=$1 svc="$SG_SERVICE-spool-$1" spool="$AT_TMP/spool" n
    start_server
    stop_server                   # nothing listens on $PORT now
    sg_run "$sig" "$svc" --spool "$spool"
    n=$(find "$spool" -name '*.prof' | wc -l)
    assert_eq "$sig with the server down: profiles in --spool" 1 "$n" ||
        fail "  agent log: $(agent_log_tail)"
    grep -q "service=$svc" "$spool"/*.prof 2>/dev/null ||
        fail "$sig: the spooled profile is not the service's: $(head -c 300 "$spool"/*.prof 2>/dev/null)"
    grep -qE 'spooled=1 ' "$ALOG" || fail "$sig: the agent's totals do not count it spooled: $(agent_log_tail)"
    # the next run replays it
    restart_server
    kill -TERM "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null; WPID=""
    sg_run TERM "$svc-next" --spool "$spool"
    assert_eq "$sig: the spooled window delivered by the next run" 1 "$(sg_profiles "$svc")" ||
        fail "  agent log: $(agent_log_tail)"
    assert_eq "$sig: spool empty after the replay" 0 "$(find "$spool" -name '*.prof' | wc -l)"
}

test_sigint_pushes_last_window() { sg_pushed INT; }
test_sigterm_pushes_last_window() { sg_pushed TERM; }
test_sigint_spools_last_window_when_server_down() { sg_spooled INT; }
test_sigterm_spools_last_window_when_server_down() { sg_spooled TERM; }
