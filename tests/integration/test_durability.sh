# test_durability.sh — restarts, kill -9 after acknowledged writes and while
# compaction runs, SIGTERM with requests in flight, retention.

# Answers to compare across a restart, with absolute time ranges.
durable_answers() {
    local from=$1 until=$2 sel
    for sel in '{}' 'system{}' 'web{}' 'web{env="prod"}' '{service=~"w.*",type="wall"}' 'rated{}'; do
        query "$sel" from="$from" until="$until"
        printf '%s %s\n%s\n' "$sel" "$STATUS" "$BODY"
        query "$sel" from="$from" until="$until" format=folded
        printf '%s folded %s\n%s\n' "$sel" "$STATUS" "$BODY"
        query "$sel" from="$from" until="$until" max_nodes=5
        printf '%s max_nodes %s\n%s\n' "$sel" "$STATUS" "$BODY"
    done
    get /api/v1/series from="$from" until="$until"
    printf 'series %s\n%s\n' "$STATUS" "$BODY"
    get /api/v1/labels from="$from" until="$until"
    printf 'labels %s\n%s\n' "$STATUS" "$BODY"
    get /api/v1/label/env/values from="$from" until="$until"
    printf 'env %s\n%s\n' "$STATUS" "$BODY"
}

test_restart_keeps_everything() {
    need_system_mix
    start_server
    local t=$(( $(now) - 1800 ))
    ingest_file "service=system&from=$t&until=$((t + 10))" "$SYSTEM_MIX"
    assert_status "system-mix" 200
    ingest "service=web&env=prod&from=$((t + 10))&until=$((t + 20))" $'main;handle;parse 30\nmain;handle;render 12\n'
    ingest "service=web&env=dev&from=$((t + 20))&until=$((t + 30))" $'main;handle;parse 3\n'
    ingest "service=web&env=prod&type=wall&from=$((t + 30))&until=$((t + 40))" $'main;sleep 99\n'
    ingest "service=rated&rate=99&from=$((t + 40))&until=$((t + 50))" $'a;b 7\n'
    local before after
    before=$(durable_answers $((t - 60)) $((t + 600)))
    assert_contains "answers before" "$before" '"total":8873'
    stop_server || return
    launch_server
    after=$(durable_answers $((t - 60)) $((t + 600)))
    if [ "$before" != "$after" ]; then
        fail "answers differ after a SIGTERM restart:"
        diff <(echo "$before") <(echo "$after") | head -c 1500 | sed 's/^/      /' >>"$IT_FAILS"
    fi
    # the dictionaries survive too: the same stacks merge into the same nodes
    ingest "service=web&env=prod&from=$((t + 50))&until=$((t + 60))" $'main;handle;parse 70\n'
    assert_status "ingest after restart" 200
    query 'web{env="prod"}' from=$((t - 60)) until=$((t + 600))
    assert_eq "merged with pre-restart data" "<root> 0 112
main 0 112
main;handle 0 112
main;handle;parse 100 100
main;handle;render 12 12" "$(tree_lines)"
    # and a second restart keeps the post-restart write
    restart_server
    query 'web{env="prod"}' from=$((t - 60)) until=$((t + 600))
    assert_json "after a second restart" '"\(.total) \(.profiles)"' '112 2'
}

# burst_worker W N BASEURL — N ingests of stack "wW;rI" with count I, one
# line "I STATUS" per request in $IT_TMP/acks.W.
burst_worker() {
    local w=$1 n=$2 i
    BASE=$3
    for i in $(seq 1 "$n"); do
        ingest "service=burst&worker=$w" "w$w;r$i $i"
        echo "$i $STATUS" >>"$IT_TMP/acks.$w"
    done
}

# Checks, after a restart, that every acknowledged request of worker W is
# stored exactly once, and that nothing else is (an unacknowledged request
# may or may not be there, but only as itself).  $1 = W, $2 = "exact" when
# every request must have been acknowledged.
check_worker() {
    local w=$1 mode=$2 i st acked=0 sum=0 stored missing=""
    query "burst{worker=\"$w\"}" from=now-1h format=folded
    assert_status "folded for worker $w" 200 || return
    stored=$BODY
    while read -r i st; do
        if [ "$st" = 200 ]; then
            acked=$((acked + 1))
            sum=$((sum + i))
            grep -qx "w$w;r$i $i" <<<"$stored" || missing+=" r$i"
        elif [ "$mode" = exact ]; then
            fail "worker $w request $i answered HTTP $st before the kill (expected 200)"
        fi
    done <"$IT_TMP/acks.$w"
    [ -z "$missing" ] || fail "worker $w: acknowledged but lost after kill -9:$missing"
    local bad
    bad=$(grep -vxE "w$w;r([0-9]+) [0-9]+" <<<"$stored" | head -3)
    [ -z "$bad" ] || fail "worker $w: unexpected stored lines: $bad"
    bad=$(awk '{ split($1, f, ";r"); if (f[2] != $2) print }' <<<"$stored" | head -3)
    [ -z "$bad" ] || fail "worker $w: stored with a wrong count (duplicated?): $bad"
    if [ "$mode" = exact ]; then
        query "burst{worker=\"$w\"}" from=now-1h
        assert_json "worker $w exact total after kill -9" '"\(.total) \(.profiles)"' "$sum $acked"
    fi
    echo "$acked"
}

test_kill9_after_burst_keeps_acknowledged() {
    start_server
    it_tmp
    local pids=() w
    for w in 1 2 3 4; do
        burst_worker "$w" 50 "$BASE" &
        pids+=($!)
    done
    wait "${pids[@]}"
    kill9_server
    launch_server
    local total=0 n
    for w in 1 2 3 4; do
        n=$(check_worker "$w" exact)
        assert_eq "worker $w acknowledged" 50 "$n"
    done
    query 'burst{}' from=now-1h
    assert_json "all 200 acknowledged ingests survive kill -9" '"\(.total) \(.profiles) \(.series)"' "$((4 * 1275)) 200 4"
    # writing goes on after the crash: old frames and series are reused,
    # new ones do not collide with what was stored before the kill
    ingest 'service=burst&worker=1' $'w1;r1 1\nw1;fresh 9\n'
    assert_status "ingest after kill -9 restart" 200
    ingest 'service=burst&worker=5' $'w5;r1 2\n'
    assert_status "new series after kill -9 restart" 200
    query 'burst{worker="1"}' from=now-1h format=folded
    assert_eq "same stack merges, new frame separate" "w1;fresh 9|w1;r1 2|w1;r10 10" \
        "$(grep -E '^w1;(r1|r10|fresh) ' <<<"$BODY" | paste -sd '|')"
    query 'burst{}' from=now-1h
    assert_json "totals after more writes" '"\(.total) \(.profiles) \(.series)"' "$((4 * 1275 + 12)) 202 5"
    get /api/v1/series 'query=burst{worker="5"}' from=now-1h
    assert_json "new series has only its own data" '[.series[]|"\(.labels.worker):\(.samples)"]|join(",")' '5:2'
}

test_kill9_mid_burst_keeps_acknowledged() {
    start_server
    it_tmp
    local pids=() w tries=600
    for w in 1 2 3 4; do
        burst_worker "$w" 100 "$BASE" &
        pids+=($!)
    done
    # kill once some requests were acknowledged, while others are in flight
    while [ $tries -gt 0 ] && [ "$(cat "$IT_TMP"/acks.* 2>/dev/null | grep -c ' 200$')" -lt 60 ]; do
        sleep 0.02
        tries=$((tries - 1))
    done
    kill9_server
    wait "${pids[@]}"
    launch_server
    local acked=0 n
    for w in 1 2 3 4; do
        n=$(check_worker "$w" partial)
        acked=$((acked + ${n:-0}))
    done
    assert_ge "acknowledged before the kill" 60 "$acked"
}

test_sigterm_with_requests_in_flight() {
    start_server
    it_tmp
    local pids=() w tries=600
    for w in 1 2 3; do
        burst_worker "$w" 60 "$BASE" &
        pids+=($!)
    done
    while [ $tries -gt 0 ] && [ "$(cat "$IT_TMP"/acks.* 2>/dev/null | grep -c ' 200$')" -lt 30 ]; do
        sleep 0.02
        tries=$((tries - 1))
    done
    stop_server    # asserts exit code 0
    wait "${pids[@]}"
    launch_server
    for w in 1 2 3; do check_worker "$w" partial >/dev/null; done
}

test_sigterm_exits_zero_and_logs() {
    start_server
    ingest 'service=x' $'a 1\n'
    stop_server
    assert_contains "log says it stopped" "$(cat "$LOG")" "stopped"
    launch_server
    query 'x{}'
    assert_json "data back" '.total' 1
    stop_server
}

test_retention_deletes_old_profiles() {
    start_server --retention 0
    local t old recent
    t=$(now)
    old=$((t - 3 * 3600))
    recent=$((t - 600))
    ingest "service=ret&age=old&from=$old&until=$((old + 10))" $'old;frame 5\n'
    assert_status "old profile" 200
    ingest "service=ret&age=recent&from=$recent&until=$((recent + 10))" $'new;frame 7\n'
    assert_status "recent profile" 200
    query 'ret{}' from=now-4h
    assert_json "both stored while retention is off" '"\(.total) \(.profiles)"' '12 2'
    # retention runs at startup: restart with --retention 1h
    restart_server --retention 1h
    local tries=200
    while [ $tries -gt 0 ]; do
        query 'ret{age="old"}' from=now-4h
        [ "$(jqb .profiles)" = 0 ] && break
        sleep 0.1
        tries=$((tries - 1))
    done
    query 'ret{}' from=now-4h
    assert_json "old profile deleted, recent kept" '"\(.total) \(.profiles)"' '7 1'
    assert_eq "what is left" "new;frame 7" "$(query 'ret{}' from=now-4h format=folded; echo "$BODY")"
    get /api/v1/series 'query=ret{}' from=now-4h
    assert_json "series with profiles in range" '[.series[].labels.age]|join(",")' 'recent'
    get /metrics
    assert_eq "deleted profiles counted" 1 "$(metric flamedb_retention_deleted_profiles_total)"
    # and stays deleted after another restart
    restart_server
    query 'ret{}' from=now-4h
    assert_json "after another restart" '"\(.total) \(.profiles)"' '7 1'
}

# A series whose every partition retention dropped leaves the catalog
# (issue 9): gone from the label values, counted in /metrics, and a push
# of the same labels makes it again.
test_retention_expires_series() {
    start_server --retention 0 --partition 1h
    local t old
    t=$(now)
    old=$((t - 5 * 3600))
    ingest "service=exp&age=old&from=$old&until=$((old + 10))" $'old;frame 5\n'
    assert_status "old profile" 200
    ingest "service=exp&age=recent&from=$((t - 60))&until=$((t - 50))" $'new;frame 7\n'
    assert_status "recent profile" 200
    restart_server --retention 1h
    local tries=200 m
    while [ $tries -gt 0 ]; do
        get /metrics
        m=$(metric flamedb_series_expired_total)
        [ "$m" = 1 ] && break
        sleep 0.1
        tries=$((tries - 1))
    done
    assert_eq "series expired (metrics)" 1 "$m"
    assert_eq "series left (metrics)" 1 "$(metric flamedb_series)"
    get /api/v1/label/age/values
    assert_json "the expired series' label value is gone" '.values|join(",")' 'recent'
    ingest "service=exp&age=old&from=$((t - 30))&until=$((t - 20))" $'old;frame 2\n'
    assert_status "the same labels pushed again" 200
    query 'exp{age="old"}' from=now-1h
    assert_json "the new series holds only the new profile" '.total' 2
}

# SIGTERM while a request is in flight: the server stops accepting new
# connections, finishes the request (answered and durable), then exits 0.
test_sigterm_drains_in_flight_and_stops_accepting() {
    start_server
    it_tmp
    local fifo="$IT_TMP/fifo" port=${BASE##*:} cpid tries pid
    mkfifo "$fifo"
    exec 3<>"$fifo"
    # -T streams the body as it comes (chunked); the request stays in flight
    curl -sS -g --max-time 30 -X POST -T "$fifo" -H 'Expect:' -o "$IT_TMP/slow.body" -w '%{http_code}' \
        "$BASE/api/v1/ingest?service=slow" >"$IT_TMP/slow.status" 2>"$IT_TMP/slow.err" 3>&- &
    cpid=$!
    printf 'a;b 5\n' >&3
    tries=200
    until ss -Htn state established "( dport = :$port )" 2>/dev/null | grep -q .; do
        tries=$((tries - 1))
        [ $tries -gt 0 ] || break
        sleep 0.05
    done
    sleep 0.3   # let the server read the request head
    pid=$PID
    kill -TERM "$pid"
    tries=200
    until grep -q 'SIGTERM' "$LOG"; do
        tries=$((tries - 1))
        [ $tries -gt 0 ] || break
        sleep 0.05
    done
    # a new connection during the drain must not be served
    local st
    st=$(curl -sS -g --max-time 5 -o /dev/null -w '%{http_code}' "$BASE/healthz" 2>/dev/null)
    assert_eq "new request while draining is refused (no HTTP answer)" "000" "${st:-000}"
    # finish the in-flight request
    printf 'c;d 7\n' >&3
    exec 3>&-
    wait "$cpid"
    assert_eq "in-flight ingest answered" 200 "$(cat "$IT_TMP/slow.status")"
    assert_eq "in-flight ingest answer" 12 "$(jq -r .samples "$IT_TMP/slow.body" 2>/dev/null)"
    PID=$pid
    stop_server    # already signalled: waits and checks the exit code
    launch_server
    query 'slow{}'
    assert_json "in-flight ingest durable" '"\(.total) \(.profiles)"' '12 1'
}

# ---- kill -9 while compaction runs --------------------------------------

KC_HOSTS=12
KC_BUCKETS=144   # one 10-minute bucket each, a whole day
KC_ROLLUPS_ALL=$((KC_HOSTS * (KC_BUCKETS + KC_BUCKETS / 6)))   # 10-minute and 1-hour buckets

# Answers over ranges that the planner covers differently: the whole day
# (1-hour rollups once built), ranges with 10-minute buckets and raw
# blocks at their edges, a range inside one bucket, and a wider one.
kc_answers() {
    local d=$1 r
    query 'backfill{}' from=$d until=$((d + 86400)) format=folded
    printf 'day %s\n' "$STATUS"
    fold_canon_exact "$BODY_FILE"
    for r in "$d $((d + 86400))" "$((d + 1800)) $((d + 45000))" "$((d + 3001)) $((d + 5400))" "$((d + 7260)) $((d + 7500))" \
             "$((d - 3600)) $((d + 90000))"; do
        set -- $r
        query 'backfill{}' from=$1 until=$2
        printf '%s %s %s\n' "$r" "$STATUS" "$(jqb '"\(.total) \(.samples) \(.profiles)"')"
        query 'backfill{node="h3"}' from=$1 until=$2 format=folded
        printf 'h3 %s %s\n' "$r" "$STATUS"
        fold_canon_exact "$BODY_FILE"
    done
    get /api/v1/series 'query=backfill{}' from=$((d - 3600)) until=$((d + 90000))
    printf 'series %s %s\n' "$STATUS" "$(jqb '[.series[]|"\(.labels.node):\(.samples):\(.profiles)"]|sort|join(",")')"
}

# KC_ROLLUPS and KC_PENDING from `flamedb check` of $DATA, which must be sound.
kc_check() {
    local out
    out=$("$FLAMEDB" check "$DATA" 2>&1) || fail "$1: flamedb check: $(tail -3 <<<"$out")"
    KC_ROLLUPS=$(grep -o '[0-9]* rollups,' <<<"$out" | cut -d' ' -f1)
    KC_PENDING=$(grep -o '[0-9]* pending,' <<<"$out" | cut -d' ' -f1)
}

# A day a week ago backfilled through OTLP (the buckets closed long ago:
# compaction builds them 10 s after their last write), then killed as soon
# as compaction has built something, restarted, killed again while buckets
# are left: every kill must leave a sound store where each bucket is either
# rolled up or still marked (rollups + pending marks = every bucket), and
# every answer equal to the answers before compaction; at the end every
# bucket is built and the answers are still the same.
test_kill9_during_compaction_keeps_answers() {
    start_server --retention 0
    it_tmp
    local day0 h
    day0=$(( ($(now) / 86400 - 7) * 86400 ))
    python3 "$REPO/tests/integration/backfill_otlp.py" "$day0" $KC_HOSTS $KC_BUCKETS 60 "$IT_TMP" ||
        die "backfill_otlp.py failed"
    for ((h = 0; h < KC_HOSTS; h++)); do
        post /v1development/profiles -H 'Content-Type: application/json' --data-binary "@$IT_TMP/host-$h.json"
        assert_status "backfill of host h$h" 200 || return
    done
    kc_answers "$day0" >"$IT_TMP/before"
    assert_eq "the day's stacks, as sent" "$(cat "$IT_TMP/expected.folded")" \
        "$(sed -n '/^day 200$/,/ 200 /p' "$IT_TMP/before" | sed '1d;$d')"
    local sum
    sum=$(awk '{ s += $NF } END { printf "%.0f", s }' "$IT_TMP/expected.folded")
    assert_contains "the whole day's total, samples and profiles" "$(cat "$IT_TMP/before")" \
        "$day0 $((day0 + 86400)) 200 $sum $((sum / 10000000)) $((KC_HOSTS * KC_BUCKETS))"
    kc_check "after the backfill"
    assert_eq "every bucket built or marked, after the backfill" $KC_ROLLUPS_ALL $((KC_ROLLUPS + KC_PENDING))

    local kills=0 mid=0 tries built
    while [ $kills -lt 5 ]; do
        tries=3000
        while [ $tries -gt 0 ]; do
            get /metrics
            built=$(metric flamedb_rollups_built_total)
            [ "${built:-0}" -gt 0 ] && break
            sleep 0.005
            tries=$((tries - 1))
        done
        kill9_server
        kills=$((kills + 1))
        kc_check "after kill $kills"
        assert_eq "every bucket built or marked, after kill $kills" $KC_ROLLUPS_ALL $((KC_ROLLUPS + KC_PENDING))
        [ "$KC_PENDING" -gt 0 ] && [ "$KC_ROLLUPS" -gt 0 ] && mid=$((mid + 1))
        launch_server --retention 0
        kc_answers "$day0" >"$IT_TMP/after"
        assert_eq "answers after kill $kills ($KC_ROLLUPS built, $KC_PENDING marked)" \
            "$(cat "$IT_TMP/before")" "$(cat "$IT_TMP/after")"
        [ "$KC_PENDING" -eq 0 ] && break
    done
    assert_ge "kills that landed with buckets built and buckets left" 1 "$mid"
    tries=600
    while [ $tries -gt 0 ]; do
        kc_check "while compaction finishes"
        [ "$KC_PENDING" -eq 0 ] && break
        sleep 0.05
        tries=$((tries - 1))
    done
    assert_eq "every bucket built at the end" "$KC_ROLLUPS_ALL 0" "$KC_ROLLUPS $KC_PENDING"
    kc_answers "$day0" >"$IT_TMP/after"
    assert_eq "answers with every bucket built" "$(cat "$IT_TMP/before")" "$(cat "$IT_TMP/after")"
    stop_server
    kc_check "after the last stop"
}
