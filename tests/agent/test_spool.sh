# shellcheck shell=bash
# test_spool.sh — the server is unreachable for several intervals; the agent
# keeps running, spools to --spool, and once the server is back (same port,
# same data directory) every interval arrives: the number of profiles stored
# for the service equals the number of intervals the agent ran.  The spool
# keeps what the push sends: frames with lines and locations=1 (issue 15).

SP_INTERVAL=2
SP_DURATION=12    # 6 intervals

# profiles_of SERVICE: profiles stored for SERVICE (all its series).
profiles_of() {
    curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={service=\"$1\"}" \
        -d from=now-1h | jq '[.series[].profiles] | add // 0'
}

# spool_files DIR: files the agent has spooled.
spool_files() { find "$1" -type f 2>/dev/null | wc -l; }

# run_outage SERVICE DOWN_AT_START
run_outage() {
    local svc=$1 down_at_start=$2 spool n tries f
    spool="$AT_TMP/spool"
    start_server
    start_workload "$AT_BUILD/workload_fp" $((SP_DURATION + 10)) 1
    if [ "$down_at_start" = 1 ]; then
        stop_server                  # nothing listens on $PORT now
    fi
    start_agent --pid "$WPID" --service "$svc" --interval "$SP_INTERVAL" \
        --duration "$SP_DURATION" --frequency 99 --unwind fp --no-kernel \
        --spool "$spool" --spool-max 16
    if [ "$down_at_start" = 0 ]; then
        # the first interval arrives, then the server goes away
        tries=100
        while [ "$(profiles_of "$svc")" -lt 1 ] && [ $tries -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
        assert_ge "$svc: profiles before the outage" 1 "$(profiles_of "$svc")"
        stop_server
    fi
    sleep $((3 * SP_INTERVAL))      # at least two intervals fail to push
    kill -0 "$APID" 2>/dev/null ||
        die "$svc: the agent exited while the server was down (it must keep running); log: $(agent_log_tail)"
    n=$(spool_files "$spool")
    assert_ge "$svc: files in --spool while the server is down" 1 "$n"
    # the spooled profile is the push: its URL says locations=1, its
    # frames carry them
    f=$(find "$spool" -type f | head -1)
    assert_contains "$svc: spooled URL" "$(head -1 "$f")" "&locations=1"
    grep -q $'work_a\x1f[^;]*/workload.c\x1f[0-9]' "$f" ||
        fail "$svc: no located work_a frame in the spooled profile $f"
    restart_server                   # same port, same data directory
    wait_agent 60
    require_agent_ok
    n=$(profiles_of "$svc")
    assert_eq "$svc: profiles stored = intervals run ($SP_DURATION s / $SP_INTERVAL s)" \
        $((SP_DURATION / SP_INTERVAL)) "$n" ||
        fail "  agent log: $(agent_log_tail)"
    assert_eq "$svc: spool empty after replay" 0 "$(spool_files "$spool")"
    # replayed with their lines
    n=$(curl -sS -G "$BASE/api/v1/query" --data-urlencode "query={service=\"$svc\"}" \
        -d from=now-1h -d lines=1 -d max_nodes=0 |
        jq '[.. | objects | select(.name? == "work_a" and ((.file // "") | endswith("/workload.c")))] | length')
    assert_ge "$svc: work_a nodes with their file after replay" 1 "$n"
}

test_server_down_at_start() {
    run_outage spool-start 1
}

test_server_stopped_mid_run() {
    run_outage spool-mid 0
}
