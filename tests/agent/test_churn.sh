# shellcheck shell=bash
# test_churn.sh — an agent that keeps going (issue 15): the whole node
# (--all, unwinding auto, kernel frames) while 50 short-lived processes a
# second start and exit (fixtures/churn.c: exec'ing programs with and
# without frame pointers, processes that exec after being sampled, that
# never exec, that start threads, and every second one that execs after
# 1.1 s, the path that made libdw assert in dwfl_frame.c:93).  At the end
# the agent must still run, have pushed every interval, and its counters
# must add up, in its log, in --metrics and against what the server stored.
# Its labels stay bounded (issue 13): thousands of processes make a handful
# of series, one per program, no pid in any label.
#
# The agent runs with glibc's malloc checks (MALLOC_PERTURB_, no tcache):
# memory it uses after freeing it is overwritten, so such a bug aborts
# here instead of one day on a node.
#
#   AGENT_CHURN_SECONDS   how long the churn runs (default 60; the 10-minute
#                         endurance run: AGENT_CHURN_SECONDS=600)
#   AGENT_CHURN_RATE      processes started per second (default 50)

CH_SECONDS=${AGENT_CHURN_SECONDS:-60}
CH_RATE=${AGENT_CHURN_RATE:-50}
CH_INTERVAL=5

# log_count REGEX: lines of the agent's log matching REGEX.
log_count() { local n; n=$(grep -cE "$1" "$ALOG" 2>/dev/null); echo "${n:-0}"; }

# wait_log REGEX N [SECS]: until the log has N lines matching REGEX.
wait_log() {
    local tries=$(( ${3:-60} * 10 ))
    while [ "$(log_count "$1")" -lt "$2" ] && [ $tries -gt 0 ]; do
        kill -0 "$APID" 2>/dev/null || die "agent exited while waiting for '$1'; log: $(agent_log_tail)"
        sleep 0.1
        tries=$((tries - 1))
    done
    [ "$(log_count "$1")" -ge "$2" ] || die "agent log has no $2 line(s) '$1' after ${3:-60} s; log: $(agent_log_tail)"
}

# metric NAME[{labels}]: its value in the --metrics file.
metric() { awk -v k="$1" '$1 == k { print $2 }' "$AT_TMP/agent.prom"; }

# logged KEY: KEY's value in the "totals" line; logged_sum KEY: the sum of
# KEY over the "interval N" lines.
logged() { grep -E 'totals \(' "$ALOG" | tail -1 | grep -oE "(^| )$1=[0-9]+" | head -1 | cut -d= -f2; }
logged_sum() {
    grep -E ': interval [0-9]+ \(' "$ALOG" | grep -oE "(^| )$1=[0-9]+" | cut -d= -f2 |
        awk '{ s += $1 } END { print s + 0 }'
}

test_whole_node_under_process_churn() {
    local host churn out started exited intervals n k read profiled ignored unnamed nomem fds hwm cpu bid s
    host=$(hostname)
    bid=$(readelf -n "$AT_BUILD/workload_fp" | awk '/Build ID:/ { print substr($3, 1, 12) }')
    start_server
    # a steady process, to see that every interval is pushed
    start_workload "$AT_BUILD/workload_fp" 0 1
    GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 \
        start_agent --all --interval "$CH_INTERVAL" --frequency 99 \
        --metrics "$AT_TMP/agent.prom" --spool "$AT_TMP/spool"
    wait_log 'sampling every process' 1 30
    out=$("$AT_BUILD/churn" "$CH_RATE" "$CH_SECONDS" "$AT_BUILD/spin_pie" "$AT_BUILD/spin_nopie" \
        "$AT_BUILD/spin_stripped" "$AT_BUILD/workload_dw" 2>&1)
    echo "$out" >&2
    read -r started exited < <(sed -n 's/^churn: started \([0-9]*\) exited \([0-9]*\).*/\1 \2/p' <<<"$out")
    [ -n "$started" ] || die "churn did not report: $out"
    assert_ge "processes started by the churn (rate $CH_RATE/s for $CH_SECONDS s, 90%)" \
        "$((CH_RATE * CH_SECONDS * 9 / 10))" "$started"
    assert_eq "churn processes that exited" "$started" "$exited"

    kill -0 "$APID" 2>/dev/null ||
        die "the agent died during the churn; log: $(tail -5 "$ALOG" | tr '\n' '|')"
    # stop it in the middle of an interval: the partial window is pushed too
    n=$(log_count ': interval [0-9]+ \(')
    wait_log ': interval [0-9]+ \(' $((n + 1)) $((CH_INTERVAL * 6))
    sleep 2
    fds=$(ls "/proc/$APID/fd" 2>/dev/null | wc -l)
    hwm=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$APID/status" 2>/dev/null)
    cpu=$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$APID/stat" 2>/dev/null)
    kill -TERM "$APID"
    wait_agent 60
    require_agent_ok
    grep -qiE 'assert|abort' "$ALOG" && fail "the agent's log mentions an assertion: $(grep -iE 'assert|abort' "$ALOG" | head -3)"

    # every interval pushed: the steady process has one profile per interval
    # (its own build: --all also sees any other workload_fp on the machine,
    # and with --all every process's instance is the node)
    intervals=$(metric flamedb_agent_intervals_total)
    # (an interval is a little longer than $CH_INTERVAL s: the loop checks the
    # clock every 100 ms)
    assert_ge "intervals (churn of $CH_SECONDS s, $CH_INTERVAL s each, 90%)" \
        $((CH_SECONDS * 9 / (CH_INTERVAL * 10))) "$intervals"
    assert_eq "interval lines in the log" "$intervals" "$(log_count ': interval [0-9]+ \(')"
    assert_eq "profiles of the steady process = intervals" "$intervals" \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={service=\"workload_fp\",build=\"$bid\",node=\"$host\"}" \
            -d from=now-1h | jq '[.series[].profiles] | add // 0')"

    # the counters add up
    read=$(metric flamedb_agent_samples_read_total)
    profiled=$(metric flamedb_agent_samples_profiled_total)
    ignored=$(metric flamedb_agent_samples_ignored_total)
    unnamed=$(metric flamedb_agent_samples_unnamed_total)
    nomem=$(metric 'flamedb_agent_samples_dropped_total{reason="no_memory"}')
    assert_ge "samples read" 1000 "$read"
    assert_eq "read = profiled + ignored + no_memory" "$read" "$((profiled + ignored + nomem))"
    assert_ge "profiled >= unnamed" "$unnamed" "$profiled"
    assert_eq "nothing spooled (the server was up)" 0 "$(metric 'flamedb_agent_profiles_total{outcome="spooled"}')"
    assert_eq "nothing rejected" 0 "$(metric 'flamedb_agent_profiles_total{outcome="rejected"}')"
    assert_eq "profiled = pruned + delivered" "$profiled" \
        "$(( $(metric flamedb_agent_samples_pruned_total) + $(metric flamedb_agent_samples_delivered_total) ))"
    assert_eq "samples the server stored = samples delivered" "$(metric flamedb_agent_samples_delivered_total)" \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={node=\"$host\"}" -d from=now-1h |
            jq '[.series[].samples] | add // 0')"
    assert_eq "profiles the server stored = profiles pushed" "$(metric 'flamedb_agent_profiles_total{outcome="pushed"}')" \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={node=\"$host\"}" -d from=now-1h |
            jq '[.series[].profiles] | add // 0')"
    # the log says the same: the interval lines sum to the totals, which are
    # the metrics
    for k in read profiled unnamed ignored pruned lost malformed no_memory unwind_failed pushed spooled; do
        assert_eq "log: sum of the interval lines' $k = the totals line's" "$(logged "$k")" "$(logged_sum "$k")"
    done
    assert_eq "log totals read = metric" "$read" "$(logged read)"
    assert_eq "log totals unnamed = metric" "$unnamed" "$(logged unnamed)"
    assert_eq "log totals lost = metric" "$(metric 'flamedb_agent_samples_dropped_total{reason="lost"}')" "$(logged lost)"
    assert_eq "log totals unwind_failed = metric" "$(metric flamedb_agent_unwind_failed_total)" "$(logged unwind_failed)"

    # and the churn was seen, in a bounded number of series: one per
    # program, whatever the number of processes (these builds: other
    # copies of the programs may run on the machine)
    local builds="" b q
    for b in spin_pie spin_nopie spin_stripped workload_dw churn; do
        builds+="${builds:+|}$(readelf -n "$AT_BUILD/$b" | awk '/Build ID:/ { print substr($3, 1, 12) }')"
    done
    q="{service=~\"spin_pie|spin_nopie|spin_stripped|workload_dw|churn\",build=~\"$builds\"}"
    churn=$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query=$q" -d from=now-1h | jq '.series | length')
    assert_ge "series of the churn's programs" 3 "$churn"
    assert_eq "at most one series per churn program (5), for $started processes" 1 \
        "$( [ "$churn" -le 5 ] && echo 1 || echo "0 ($churn series)")"
    # (about 60% of the processes run long enough for a sample at 99 Hz)
    assert_ge "samples of the churn's programs (10% of $started processes)" $((started / 10)) \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query=$q" -d from=now-1h |
            jq '[.series[].samples] | add // 0')"
    s=$(curl -sS -G "$BASE/api/v1/series" --data-urlencode "query={node=\"$host\"}" -d from=now-1h)
    assert_eq "no pid in any label (--all: instance = the node)" "" \
        "$(jq -r --arg h "$host" '[.series[].labels | select(.instance != $h or (.service | test("^pid-[0-9]+$")))
            | "\(.service)/\(.instance)"] | .[:5] | join(",")' <<<"$s")"
    assert_eq "unnamed processes: one unknown series at most" 1 \
        "$(jq '[.series[] | select(.labels.service == "unknown")] | length <= 1 | if . then 1 else 0 end' <<<"$s")"
    echo "churn $CH_SECONDS s: $started processes; agent: $intervals intervals, read $read, profiled $profiled," \
        "unnamed $unnamed, lost $(logged lost), unwind_failed $(logged unwind_failed);" \
        "$(jq '.series | length' <<<"$s") series on the node;" \
        "$(metric 'flamedb_agent_profiles_total{outcome="pushed"}') profiles pushed, $churn churn series;" \
        "agent CPU $cpu s, peak RSS $hwm MiB, $fds descriptors open at the end" >&2
}
