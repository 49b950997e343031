# shellcheck shell=bash
# test_fleet.sh — fleet control (issue 13, point 5), with agents in
# --simulate mode (no perf_event: made-up samples under their own labels,
# each agent its own node) against a server with --fleet-duty.
#
# * 50 agents, --fleet-duty 0.1, 3 s periods: in every period at most 5
#   nodes have profiles stored (the stored data says which agents sampled
#   when: one series per node, /api/v1/timeline grouped by node with a
#   step of one period, aligned to the periods), at least one does in every
#   full period, every agent sampled within the run (coverage within
#   ceil(50 / 5) = 10 periods of the start), and none samples in two
#   periods in a row (rotation).  GET /api/v1/agents lists the 50 with
#   their counters; the plan's own count never passes 5 while they run.
# * The server stopped for 4 s mid-run (20 agents, 2 a period): still at
#   most 2 a period and no turn twice in a row.
# * Pushes that keep failing while heartbeats are answered (--ingest-rate
#   too small for any push: 429) stop the agent's sampling: it says so in
#   its log and the server lists it as ceased with the error.
# * A server that cannot be reached: the agent samples and spools as
#   before fleet control.

FL_PERIOD=3
FL_AGENTS=50

# agents_json: GET /api/v1/agents
agents_json() { curl -sS "$BASE/api/v1/agents"; }

test_fleet_duty_rotates_and_covers() {
    AT_SERVER_ARGS="--fleet-duty 0.1 --fleet-period ${FL_PERIOD}s"
    start_server
    local pids=() i t0 t1 dur=$((FL_PERIOD * 13)) maxplan=0 n
    t0=$(date +%s)
    for i in $(seq -w 1 "$FL_AGENTS"); do
        "$AGENT" --server "$BASE" --simulate --service sim --labels "node=sim-$i" --interval 1 --verbose \
            --duration "$dur" --frequency 50 >"$AT_TMP/agent-$i.log" 2>&1 &
        pids+=($!)
    done
    # while they run: the plan never has more than 5 of them sampling
    while kill -0 "${pids[0]}" 2>/dev/null; do
        n=$(agents_json | jq '.fleet.sampling')
        [ "$n" -gt "$maxplan" ] && maxplan=$n
        sleep 1
    done
    local failed=0
    for i in "${pids[@]}"; do wait "$i" || failed=$((failed + 1)); done
    assert_eq "agents that exited non-zero" 0 "$failed"
    [ "$maxplan" -le 5 ] || fail "the plan had $maxplan agents sampling at once (at most 5)"
    assert_ge "the plan's most agents sampling at once" 1 "$maxplan"
    t1=$(date +%s)

    local list
    list=$(agents_json)
    assert_eq "agents listed" "$FL_AGENTS" "$(jq '.agents | length' <<<"$list")"
    assert_eq "agents with heartbeats, samples and a push" "$FL_AGENTS" \
        "$(jq '[.agents[] | select(.heartbeats > 5 and .samples > 0 and .profiles_pushed > 0
               and .last_push > 0 and .rss_bytes > 0 and .version == "0.13")] | length' <<<"$list")"
    assert_eq "fleet duty" "0.1" "$(jq '.fleet.duty' <<<"$list")"

    # the stored data: nodes with samples per period
    local from=$(( t0 / FL_PERIOD * FL_PERIOD )) until=$(( (t1 / FL_PERIOD + 1) * FL_PERIOD )) tl
    tl=$(curl -sS -G "$BASE/api/v1/timeline" --data-urlencode 'query={service="sim"}' \
        -d from="$from" -d until="$until" -d step="$FL_PERIOD" -d group_by=node)
    local per_period
    # "index count" for every period; and per node the periods it sampled in
    per_period=$(jq -r '[.groups[] | [.points[] | .[1] > 0]] | transpose
                        | to_entries[] | "\(.key) \([.value[] | select(.)] | length)"' <<<"$tl")
    [ -n "$per_period" ] || die "no timeline: $(head -c 300 <<<"$tl")"
    local over=0 empty=0 periods=0 k c last
    last=$(( (t0 + dur) / FL_PERIOD * FL_PERIOD - from ))
    last=$(( last / FL_PERIOD - 1 ))          # the last full period the agents ran
    while read -r k c; do
        [ "$c" -gt 5 ] && { over=$((over + 1)); fail "period $k: $c nodes sampled (plan: 5)"; }
        if [ "$k" -ge 1 ] && [ "$k" -le "$last" ]; then
            periods=$((periods + 1))
            [ "$c" -eq 0 ] && empty=$((empty + 1))
        fi
    done <<<"$per_period"
    assert_eq "periods with more than 5 nodes sampling" 0 "$over"
    assert_eq "full periods with no node sampling" 0 "$empty"
    assert_ge "full periods" 10 "$periods"
    assert_eq "nodes that sampled (coverage)" "$FL_AGENTS" "$(jq '[.groups[] | select(any(.points[]; .[1] > 0))] | length' <<<"$tl")"
    # coverage within 10 periods of the first full one, and no two periods in a row
    assert_eq "nodes first sampling after period 11" 0 \
        "$(jq '[.groups[] | [.points | to_entries[] | select(.value[1] > 0) | .key] | .[0] | select(. > 11)] | length' <<<"$tl")"
    # once every agent has registered (a loaded machine starts them slowly,
    # and with fewer than twice the plan's agents known a turn comes back
    # at once), no agent's turn follows its own
    local reg
    reg=$(jq '[.agents[].first_seen] | max' <<<"$list")
    reg=$(( (reg - from) / FL_PERIOD + 1 ))
    local twice
    twice=$(jq -r --argjson r "$reg" '.groups[] | select([.points | to_entries[] | select(.value[1] > 0 and .key >= $r) | .key]
                | [range(1; length) as $i | .[$i] - .[$i - 1]] | any(. == 1)) | .labels.node' <<<"$tl")
    assert_eq "nodes sampling in two periods in a row, from period $reg (all registered)" "" "$twice"
    # what such an agent's log says of its plan, to tell why
    for n in $twice; do
        echo "  $n: $(jq -c --arg n "$n" '.groups[] | select(.labels.node == $n) | [.points[] | .[1] > 0 | if . then 1 else 0 end]' <<<"$tl")"
        grep -E 'fleet control|heartbeat' "$AT_TMP/agent-${n#sim-}.log" | tail -30 | sed 's/^/    /'
    done
}

# A server that stops answering for 4 s (SIGSTOP) while 20 agents run at
# --fleet-duty 0.1: heartbeats and pushes wait for it, and afterwards no
# period has more than its 2 nodes sampling and no node samples two
# periods in a row (an agent whose heartbeat answer came late once started
# its turn's windows before the answer and stamped every later one a
# second ahead of the clock, its last one after its turn).
test_fleet_server_stall_keeps_the_plan() {
    AT_SERVER_ARGS="--fleet-duty 0.1 --fleet-period ${FL_PERIOD}s"
    start_server
    local pids=() i t0 t1 dur=$((FL_PERIOD * 9)) n=20
    t0=$(date +%s)
    for i in $(seq -w 1 "$n"); do
        "$AGENT" --server "$BASE" --simulate --service sim --labels "node=st-$i" --interval 1 --verbose \
            --duration "$dur" --frequency 50 >"$AT_TMP/agent-$i.log" 2>&1 &
        pids+=($!)
    done
    sleep $((FL_PERIOD * 3))
    kill -STOP "$SPID"
    sleep 4
    kill -CONT "$SPID"
    local failed=0
    for i in "${pids[@]}"; do wait "$i" || failed=$((failed + 1)); done
    assert_eq "agents that exited non-zero" 0 "$failed"
    t1=$(date +%s)
    local from=$(( t0 / FL_PERIOD * FL_PERIOD )) until=$(( (t1 / FL_PERIOD + 1) * FL_PERIOD )) tl
    tl=$(curl -sS -G "$BASE/api/v1/timeline" --data-urlencode 'query={service="sim"}' \
        -d from="$from" -d until="$until" -d step="$FL_PERIOD" -d group_by=node)
    local per
    per=$(jq -c '[.groups[] | [.points[] | .[1] > 0]] | transpose | map([.[] | select(.)] | length)' <<<"$tl")
    [ -n "$per" ] && [ "$per" != null ] || die "no timeline: $(head -c 300 <<<"$tl")"
    assert_eq "periods with more than 2 nodes sampling ($per)" 0 "$(jq '[.[] | select(. > 2)] | length' <<<"$per")"
    assert_ge "periods with a node sampling" 5 "$(jq '[.[] | select(. > 0)] | length' <<<"$per")"
    local reg twice
    reg=$(agents_json | jq '[.agents[].first_seen] | max')
    reg=$(( (reg - from) / FL_PERIOD + 1 ))
    twice=$(jq -r --argjson r "$reg" '.groups[] | select([.points | to_entries[] | select(.value[1] > 0 and .key >= $r) | .key]
                | [range(1; length) as $i | .[$i] - .[$i - 1]] | any(. == 1)) | .labels.node' <<<"$tl")
    assert_eq "nodes sampling in two periods in a row, from period $reg" "" "$twice"
    for i in $twice; do grep -E 'fleet control|heartbeat|stacks ->' "$AT_TMP/agent-${i#st-}.log" | tail -14 | sed 's/^/    /'; done
}

test_failing_pushes_cease_sampling() {
    # every push is over the rate (429) while heartbeats are answered
    AT_SERVER_ARGS="--ingest-rate 1 --ingest-burst 1"
    start_server
    start_agent --simulate --labels node=failing-1 --interval 1 --duration 25
    local tries=250 state=""
    while [ $tries -gt 0 ]; do
        state=$(agents_json | jq -r '.agents[] | select(.id == "failing-1") | .state')
        [ "$state" = ceased ] && break
        sleep 0.1
        tries=$((tries - 1))
    done
    assert_eq "state listed by the server" ceased "$state"
    assert_contains "last error listed" "$(agents_json | jq -r '.agents[0].last_error')" "429"
    wait_agent 40
    assert_eq "agent exit status" 0 "$ARC"
    assert_contains "agent log" "$(cat "$ALOG")" "sampling ceased"
}

test_unreachable_server_samples_and_spools() {
    start_server
    stop_server                      # nothing listens on $PORT now
    start_agent --simulate --labels node=alone-1 --interval 1 --duration 3 --spool "$AT_TMP/spool"
    wait_agent 30
    assert_eq "agent exit status" 0 "$ARC"
    assert_ge "profiles spooled" 2 "$(find "$AT_TMP/spool" -type f | wc -l)"
    assert_contains "agent log" "$(cat "$ALOG")" "sampling as configured"
}

test_agents_listed_per_tenant() {
    # --auth: a heartbeat needs the write scope, the listing read; each
    # tenant lists its own agents only (the registry is one, the plan too)
    local tok_a tok_b
    tok_a=$(printf %s token-a | sha256sum | cut -d' ' -f1)
    tok_b=$(printf %s token-b | sha256sum | cut -d' ' -f1)
    printf 'a write,read sha256:%s\nb write,read sha256:%s\nr read sha256:%s\n' "$tok_a" "$tok_b" \
        "$(printf %s token-r | sha256sum | cut -d' ' -f1)" >"$AT_TMP/tokens"
    printf 'token-a\n' >"$AT_TMP/token-a"
    printf 'token-b\n' >"$AT_TMP/token-b"
    AT_SERVER_ARGS="--auth $AT_TMP/tokens"
    start_server
    "$AGENT" --server "$BASE" --simulate --service sim --labels node=agent-a --token-file "$AT_TMP/token-a" \
        --interval 1 --duration 2 >"$AT_TMP/a.log" 2>&1 &
    local pa=$!
    "$AGENT" --server "$BASE" --simulate --service sim --labels node=agent-b --token-file "$AT_TMP/token-b" \
        --interval 1 --duration 2 >"$AT_TMP/b.log" 2>&1 &
    local pb=$!
    wait "$pa" || fail "agent a exited non-zero: $(tail -3 "$AT_TMP/a.log")"
    wait "$pb" || fail "agent b exited non-zero: $(tail -3 "$AT_TMP/b.log")"
    assert_eq "tenant a's agents" agent-a \
        "$(curl -sS -H 'Authorization: Bearer token-a' "$BASE/api/v1/agents" | jq -r '[.agents[].id] | join(",")')"
    assert_eq "tenant b's agents" agent-b \
        "$(curl -sS -H 'Authorization: Bearer token-b' "$BASE/api/v1/agents" | jq -r '[.agents[].id] | join(",")')"
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/agents")
    assert_eq "the listing without a token" 401 "$code"
    code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer token-r' -X POST \
        -H 'Content-Type: application/json' -d '{"id":"x"}' "$BASE/api/v1/agents/heartbeat")
    assert_eq "a heartbeat with a read-only token" 403 "$code"
}
