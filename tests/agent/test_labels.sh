# shellcheck shell=bash
# test_labels.sh — the labels the agent fills without being told: service
# (--service), instance (HOSTNAME/PID), node (hostname), build (first 12 hex
# digits of the executable's GNU build-id), plus --labels; and the rate.

test_default_labels() {
    local bin=$AT_BUILD/spin_pie bid host labels
    bid=$(readelf -n "$bin" | awk '/Build ID:/ { print substr($3, 1, 12) }')
    host=$(hostname)
    start_server
    start_workload "$bin" 10
    start_agent --pid "$WPID" --service lbl --labels env=test,team=perf --interval 2 \
        --duration 2 --frequency 99 --unwind fp --no-kernel
    wait_agent 30
    require_agent_ok
    labels=$(curl -sS -G "$BASE/api/v1/series" --data-urlencode 'query={service="lbl"}' -d from=now-1h |
        jq -c '[.series[].labels]')
    assert_eq "one series" 1 "$(jq length <<<"$labels")"
    assert_eq "instance" "$host/$WPID" "$(jq -r '.[0].instance' <<<"$labels")"
    assert_eq "node" "$host" "$(jq -r '.[0].node' <<<"$labels")"
    assert_eq "build" "$bid" "$(jq -r '.[0].build' <<<"$labels")"
    assert_eq "--labels env" test "$(jq -r '.[0].env' <<<"$labels")"
    assert_eq "--labels team" perf "$(jq -r '.[0].team' <<<"$labels")"
    # pushed with rate=99: the answer is in nanoseconds
    assert_eq "unit (rate sent)" nanoseconds \
        "$(curl -sS -G "$BASE/api/v1/query" --data-urlencode 'query={service="lbl"}' -d from=now-1h -d max_nodes=1 | jq -r .unit)"
}
