# test_concurrency.sh — parallel ingest while querying: every ingest
# acknowledged, final totals exact, every query a valid, consistent 200.

# ingest_client C N BASEURL SERVICE — N ingests; request I sends
# "cC;shared;fI%5 I" plus a stack shared by all clients.
ingest_client() {
    local c=$1 n=$2 svc=$4 i
    BASE=$3
    for i in $(seq 1 "$n"); do
        ingest "service=$svc&client=c$c" "$(printf 'c%s;shared;f%s %s\ncommon;path 1\n' "$c" $((i % 5)) "$i")"
        echo "$i $STATUS" >>"$IT_TMP/acks.$c"
    done
}

# query_client ID BASEURL SERVICE — queries until $IT_TMP/stop exists (and
# at least 5 times); one line per answer in $IT_TMP/queries.ID:
# "STATUS total tree_total sum_of_children samples truncated_nodes".
query_client() {
    local id=$1 svc=$3 k=0
    BASE=$2
    while [ ! -e "$IT_TMP/stop" ] || [ $k -lt 5 ]; do
        k=$((k + 1))
        query "$svc{}" from=now-1h
        local line
        line=$(jq -r '"\(.total) \(.tree.total) \([.tree.children[].total]|add // 0) \(.samples) \(.truncated.nodes)"' <<<"$BODY" 2>/dev/null) \
            || line="invalid-json"
        echo "$STATUS $line" >>"$IT_TMP/queries.$id"
        get /api/v1/series "query=$svc{}" from=now-1h
        jq -e '.series|type == "array"' <<<"$BODY" >/dev/null 2>&1 || echo "series $STATUS invalid" >>"$IT_TMP/queries.bad"
        [ "$STATUS" = 200 ] || echo "series $STATUS $BODY" >>"$IT_TMP/queries.bad"
        [ $k -lt 2000 ] || break
    done
}

test_parallel_ingest_while_querying() {
    start_server
    it_tmp
    local clients=6 n=30 c pids=() qpids=()
    query_client 1 "$BASE" conc &
    qpids+=($!)
    query_client 2 "$BASE" conc &
    qpids+=($!)
    for c in $(seq 1 $clients); do
        ingest_client "$c" "$n" "$BASE" conc &
        pids+=($!)
    done
    wait "${pids[@]}"
    : >"$IT_TMP/stop"
    wait "${qpids[@]}"

    local not_acked
    not_acked=$(cat "$IT_TMP"/acks.* | awk '$2 != 200' | head -5)
    assert_eq "every ingest acknowledged" "" "$not_acked"
    assert_eq "ingest answers recorded" $((clients * n)) "$(cat "$IT_TMP"/acks.* | wc -l)"

    # per request: sum I + 1 for the common stack
    local per_client=$(( n * (n + 1) / 2 + n ))
    query 'conc{}' from=now-1h
    assert_json "final totals exact" '"\(.total) \(.samples) \(.profiles) \(.series)"' \
        "$((clients * per_client)) $((clients * per_client)) $((clients * n)) $clients"
    assert_json "common stack from every request" '.tree.children[]|select(.name=="common")|.total' $((clients * n))
    for c in $(seq 1 $clients); do
        query "conc{client=\"c$c\"}" from=now-1h
        assert_json "client c$c total" '.total' $per_client
    done

    # every query during the ingest: 200, valid JSON, self-consistent, and
    # totals never going backwards within one client's sequence of queries
    local bad
    local q
    for q in "$IT_TMP"/queries.[0-9]*; do
        bad=$(awk '$1 != 200 || $2 == "invalid-json" || $2 != $3 || $2 != $4 || $2 != $5 || $6 != 0' "$q" | head -5)
        assert_eq "queries during ingest ($(basename "$q")): all 200, valid and consistent" "" "$bad"
        bad=$(awk '$2 + 0 < prev { print "total went from " prev " to " $2 } { prev = $2 + 0 }' "$q" | head -3)
        assert_eq "totals never go backwards ($(basename "$q"))" "" "$bad"
        assert_ge "queries made ($(basename "$q"))" 5 "$(wc -l <"$q")"
    done
    assert_eq "two query clients ran" 2 "$(ls "$IT_TMP"/queries.[0-9]* | wc -l)"
    [ -e "$IT_TMP/queries.bad" ] && fail "series listing during ingest: $(head -3 "$IT_TMP/queries.bad")"
    return 0
}

test_parallel_ingest_same_series_same_window() {
    start_server
    it_tmp
    local t=$(( $(now) - 900 )) c pids=()
    for c in $(seq 1 8); do
        (
            for i in $(seq 1 15); do
                ingest "service=same&from=$t&until=$((t + 10))" $'x;y 2\nx 1\n'
                echo "$STATUS" >>"$IT_TMP/same.$c"
            done
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    assert_eq "all acknowledged" "120" "$(cat "$IT_TMP"/same.* | grep -c '^200$')"
    query 'same{}' from=$((t - 1)) until=$((t + 1))
    assert_json "120 profiles in one series and window" '"\(.total) \(.profiles) \(.series)"' '360 120 1'
    assert_eq "tree" "<root> 0 360
x 120 360
x;y 240 240" "$(tree_lines)"
}

test_parallel_new_series_and_frames() {
    # many clients creating new series and new frames at once: the label
    # index and the dictionaries must not lose or mix anything
    start_server
    it_tmp
    local c pids=()
    for c in $(seq 1 8); do
        (
            for i in $(seq 1 10); do
                ingest "service=ns&client=c$c&req=r$i" "root;fn_c${c}_r$i $c"
                echo "$STATUS" >>"$IT_TMP/ns.$c"
            done
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    assert_eq "all acknowledged" 80 "$(cat "$IT_TMP"/ns.* | grep -c '^200$')"
    get /api/v1/series 'query=ns{}'
    assert_json "80 series" '.series|length' 80
    assert_json "each series its own totals" '[.series[]|(.labels.client|ltrimstr("c")|tonumber) == .samples]|all' true
    get /api/v1/label/req/values 'query=ns{}'
    assert_json "10 req values" '.values|length' 10
    query 'ns{}' format=folded
    local want
    want=$(for c in $(seq 1 8); do for i in $(seq 1 10); do echo "root;fn_c${c}_r$i $c"; done; done | LC_ALL=C sort)
    assert_eq "every new frame stored with its series" "$want" "$BODY"
    query 'ns{client="c3",req="r7"}' format=folded
    assert_eq "one series" "root;fn_c3_r7 3" "$BODY"
}
