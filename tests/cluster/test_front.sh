# test_front.sh — flamedb serve --store clickhouse=... (issue 10, the write
# path): every ingest format through a front end lands in ClickHouse
# exactly; an acknowledged profile survives kill -9 of the front end before
# its flush; while ClickHouse is down the front end answers 200 from its
# spool until the spool is full, then 503, and drains once ClickHouse is
# back; a spool file sent twice (the front end died after the insert and
# before removing the file) counts once on replicated tables; two front
# ends serve one cluster.
#
# FLAMEDB: the server binary (make cluster-test passes it).

test_front_stores_every_format_exactly() {
    ch_cluster_start single
    fe_start 1 "${CH_URL[1]}"
    local t0=1767225600 code
    # folded, native endpoint: 3 profiles of 50 lines, totals 1275 each
    for s in 1 2 3; do
        code=$(push 1 "/api/v1/ingest?service=api&instance=i$s&type=cpu&from=$((t0 + 10 * s))&until=$((t0 + 10 * s + 10))" \
            --data-binary "$(fold_body 50 "$s")")
        assert_eq "folded push $s" 200 "$code"
    done
    # Pyroscope's /ingest, and a real Go pprof (two sample types)
    code=$(push 1 "/ingest?name=web.cpu%7Bregion%3Deu%7D&from=$((t0 + 100))&until=$((t0 + 110))&sampleRate=100" \
        --data-binary $'a;b;c 7\na;b;d 5\n')
    assert_eq "pyroscope push" 200 "$code"
    code=$(push 1 "/ingest?name=gojson&format=pprof&from=$((t0 + 200))&until=$((t0 + 210))" \
        --data-binary @"$REPO/../shared/data/go-json-sort.cpu.pb.gz")
    assert_eq "pprof push" 200 "$code"
    local pprof_answer
    pprof_answer=$(cat "$CT_TMP/push.json")
    fe_drained 1 || return
    # every profile, every value, every stack, every series
    assert_eq "profiles" 6 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    assert_eq "folded total" $((3 * 1275)) \
        "$(chq 1 "SELECT sum(value) FROM flamedb.samples WHERE series IN (SELECT series FROM flamedb.labels WHERE name = 'service' AND value = 'api') FORMAT TSV")"
    assert_eq "pyroscope total" 12 \
        "$(chq 1 "SELECT sum(value) FROM flamedb.samples WHERE series IN (SELECT series FROM flamedb.labels WHERE name = 'region' AND value = 'eu') FORMAT TSV")"
    local u want got
    for u in $(jq -r '.profiles[].unit' <<<"$pprof_answer"); do
        want=$(jq -r --arg u "$u" '[.profiles[] | select(.unit == $u) | .total] | add' <<<"$pprof_answer")
        got=$(chq 1 "SELECT sum(value) FROM flamedb.samples WHERE unit = '$u' AND window_start = $(((t0 + 200) * 1000)) FORMAT TSV")
        assert_eq "pprof total in $u" "$want" "$got"
    done
    assert_eq "stacks of the folded pushes, by frames" 150 \
        "$(chq 1 "SELECT uniqExact(stack) FROM flamedb.stacks WHERE frames LIKE 'main;work_%' FORMAT TSV")"
    assert_eq "a stack's frames" "main;work_2;leaf_2_17" \
        "$(chq 1 "SELECT any(frames) FROM flamedb.stacks WHERE stack IN (SELECT stack FROM flamedb.samples WHERE value = 17 AND series IN (SELECT series FROM flamedb.labels WHERE name = 'instance' AND value = 'i2')) FORMAT TSV")"
    assert_eq "series labels, sorted by name" $'[\'instance\',\'service\',\'type\']\t[\'i1\',\'api\',\'cpu\']' \
        "$(chq 1 "SELECT label_names, label_values FROM flamedb.series WHERE has(label_values, 'i1') FORMAT TSV")"
    assert_eq "window and rate of the Pyroscope push" "$(((t0 + 100) * 1000))	10000	100" \
        "$(chq 1 "SELECT DISTINCT window_start, window_ms, rate FROM flamedb.samples WHERE series IN (SELECT series FROM flamedb.labels WHERE value = 'eu') FORMAT TSV")"
    assert_eq "samples known for folded counts" "1275	1" \
        "$(chq 1 "SELECT samples, samples_known FROM flamedb.profiles WHERE series IN (SELECT series FROM flamedb.labels WHERE value = 'i3') FORMAT TSV")"
    # the rollups the views fill count the same
    assert_eq "10 min rollup total" "$(chq 1 "SELECT sum(value) FROM flamedb.samples FORMAT TSV")" \
        "$(chq 1 "SELECT sum(value) FROM flamedb.samples_10m FORMAT TSV")"
    # and the front end reads them back
    code=$(curl -s -o "$CT_TMP/q.json" -w '%{http_code}' "$(fe_url 1)/api/v1/query?query=%7Bservice%3D%22api%22%7D&from=$t0&until=$((t0 + 300))")
    assert_eq "a query in cluster mode" 200 "$code"
    assert_eq "its total" $((3 * 1275)) "$(jq .total "$CT_TMP/q.json")"
    # bad input stores nothing and says why, as in single-node mode
    code=$(push 1 "/api/v1/ingest?service=api&from=$t0" --data-binary $'a;b notanumber\n')
    assert_eq "a malformed push" 400 "$code"
    assert_contains "its error names the line" "$(jq -r .error "$CT_TMP/push.json")" "line 1"
    fe_drained 1
    assert_eq "profiles after the malformed push" 6 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    # the health check says where the data goes
    assert_eq "healthz: ClickHouse reachable" true "$(curl -s "$(fe_url 1)/healthz" | jq .clickhouse.reachable)"
    # /metrics: the spool and the flusher, no LMDB figures
    local m
    m=$(curl -s "$(fe_url 1)/metrics")
    assert_eq "metrics: ClickHouse up" 1 "$(awk '$1 == "flamedb_clickhouse_up" { print $2 }' <<<"$m")"
    assert_eq "metrics: profiles inserted" 6 "$(awk '$1 == "flamedb_clickhouse_inserted_profiles_total" { print $2 }' <<<"$m")"
    assert_eq "metrics: sample rows inserted" "$(chq 1 "SELECT count() FROM flamedb.samples FORMAT TSV")" \
        "$(awk '$1 == "flamedb_clickhouse_inserted_rows_total" { print $2 }' <<<"$m")"
    assert_eq "metrics: spool empty" "0 0.000" \
        "$(awk '$1 == "flamedb_spool_bytes" { b = $2 } $1 == "flamedb_spool_oldest_age_seconds" { a = $2 } END { print b, a }' <<<"$m")"
    assert_eq "metrics: profiles accepted by ingest" 6 "$(awk '$1 == "flamedb_ingested_profiles_total" { print $2 }' <<<"$m")"
    assert_eq "metrics: no LMDB figures" 0 "$(grep -c '^flamedb_\(series\|partitions\|commit_duration_seconds_count\) ' <<<"$m")"
}

test_front_kill9_before_flush_loses_nothing() {
    ch_cluster_start single
    fe_start 1 "${CH_URL[1]}" --flush-every 1h
    local t0=1767225600 s code ok=0 want=0
    for s in $(seq 1 40); do
        code=$(push 1 "/api/v1/ingest?service=k9&instance=i$((s % 5))&from=$((t0 + s))&until=$((t0 + s + 1))" \
            --data-binary "$(fold_body 20 "$s")")
        [ "$code" = 200 ] && { ok=$((ok + 1)); want=$((want + 210)); }
    done
    assert_eq "pushes acknowledged" 40 "$ok"
    assert_eq "nothing flushed yet (--flush-every 1h)" 0 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    # a read says how old the oldest acknowledged profile it cannot see is
    local q="/api/v1/query?query=%7Bservice%3D%22k9%22%7D&from=$t0&until=$((t0 + 100))" h
    h=$(curl -s -D - -o "$CT_TMP/q.json" "$(fe_url 1)$q" | tr -d '\r')
    assert_eq "a read before the flush" 0 "$(jq .total "$CT_TMP/q.json")"
    assert_contains "says the spool's age" "$h" "X-Flamedb-Staleness-Ms: "
    fe_kill 1
    local files
    files=$(find "${FE_DIR[1]}/spool" -name '*.spool' | wc -l)
    assert_ge "spool files left by the killed front end" 1 "$files"
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms
    fe_drained 1 || return
    assert_eq "profiles after the restart" 40 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    assert_eq "total after the restart" "$want" "$(chq 1 "SELECT sum(value) FROM flamedb.samples FORMAT TSV")"
    h=$(curl -s -D - -o "$CT_TMP/q.json" "$(fe_url 1)$q" | tr -d '\r')
    assert_eq "the read's total after the restart" "$want" "$(jq .total "$CT_TMP/q.json")"
    assert_eq "no staleness once the spool drained" 0 "$(grep -c '^X-Flamedb-Staleness-Ms' <<<"$h")"
    assert_eq "spool files after the flush" 0 "$(find "${FE_DIR[1]}/spool" -name '*.spool' | wc -l)"
}

test_front_spools_while_clickhouse_is_down() {
    ch_cluster_start single
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms --spool-max 256k
    local t0=1767225600 s code ok=0 want=0 full=0
    ch_stop 1
    # 200 from the spool until it is full, then 503 saying why
    for s in $(seq 1 200); do
        code=$(push 1 "/api/v1/ingest?service=down&from=$((t0 + s))&until=$((t0 + s + 1))" --data-binary "$(fold_body 30 "$s")")
        if [ "$code" = 200 ]; then
            ok=$((ok + 1))
            want=$((want + 465))
        elif [ "$code" = 503 ]; then
            full=1
            break
        else
            fail "push $s while ClickHouse is down: HTTP $code $(cat "$CT_TMP/push.json")"
            return
        fi
    done
    assert_ge "pushes answered 200 from the spool" 10 "$ok"
    assert_eq "a push past the spool's limit is refused" 1 "$full"
    assert_contains "the 503 says why" "$(jq -r .error "$CT_TMP/push.json")" "--spool-max"
    assert_eq "healthz: ClickHouse unreachable" false "$(curl -s "$(fe_url 1)/healthz" | jq .clickhouse.reachable)"
    assert_contains "healthz names the failure" "$(curl -s "$(fe_url 1)/healthz" | jq -r .clickhouse.last_error)" "127.0.0.1"
    local m
    m=$(curl -s "$(fe_url 1)/metrics")
    assert_eq "metrics: ClickHouse down" 0 "$(awk '$1 == "flamedb_clickhouse_up" { print $2 }' <<<"$m")"
    assert_ge "metrics: errors counted" 1 "$(awk '$1 == "flamedb_clickhouse_errors_total" { print $2 }' <<<"$m")"
    assert_ge "metrics: spool bytes held" 1 "$(awk '$1 == "flamedb_spool_bytes" { print $2 }' <<<"$m")"
    ch_start 1
    # the flusher backs off up to 30 s between tries: wake it with a push
    # (that one also counts once it is taken)
    local tries=400
    while [ $tries -gt 0 ]; do
        [ "$(curl -s "$(fe_url 1)/healthz" | jq .clickhouse.reachable)" = true ] && break
        sleep 0.1
        tries=$((tries - 1))
    done
    fe_drained 1 || return
    assert_eq "profiles once ClickHouse is back" "$ok" "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    assert_eq "total once ClickHouse is back" "$want" "$(chq 1 "SELECT sum(value) FROM flamedb.samples FORMAT TSV")"
    code=$(push 1 "/api/v1/ingest?service=down&from=$((t0 + 900))&until=$((t0 + 901))" --data-binary $'x;y 3\n')
    assert_eq "pushes are taken again" 200 "$code"
}

test_front_replayed_spool_counts_once_on_replicas() {
    ch_cluster_start one_shard_two_replicas
    # two front ends, one on each replica, both holding their spools
    fe_start 1 "${CH_URL[1]}" --clickhouse-cluster one_shard_two_replicas --flush-every 1h
    fe_start 2 "${CH_URL[2]},${CH_URL[1]}" --clickhouse-cluster one_shard_two_replicas --flush-every 1h
    local t0=1767225600 s code want=0
    for s in $(seq 1 30); do
        code=$(push $((s % 2 + 1)) "/api/v1/ingest?service=rep&instance=i$s&from=$((t0 + 60 * s))&until=$((t0 + 60 * s + 10))" \
            --data-binary "$(fold_body 10 "$s")")
        assert_eq "push $s" 200 "$code"
        want=$((want + 55))
    done
    # front end 1 dies after ClickHouse took its file and before it removed
    # it: keep a copy of its spool, let it flush, put the copy back
    fe_kill 1
    cp -a "${FE_DIR[1]}/spool" "$CT_TMP/spool-copy"
    assert_ge "spool files to replay" 1 "$(find "$CT_TMP/spool-copy" -name '*.spool' -size +0 | wc -l)"
    fe_start 1 "${CH_URL[1]}" --clickhouse-cluster one_shard_two_replicas --flush-every 100ms
    fe_drained 1 || return
    fe_stop 1
    cp -a "$CT_TMP/spool-copy/." "${FE_DIR[1]}/spool/"
    fe_start 1 "${CH_URL[1]}" --clickhouse-cluster one_shard_two_replicas --flush-every 100ms
    fe_drained 1 || return
    assert_eq "the replayed files were sent (and removed)" 0 "$(find "${FE_DIR[1]}/spool" -name '*.spool' | wc -l)"
    fe_stop 2
    fe_start 2 "${CH_URL[2]},${CH_URL[1]}" --clickhouse-cluster one_shard_two_replicas --flush-every 100ms
    fe_drained 2 || return
    # the same profile in three requests, each flushed alone (so each alone
    # in its spool file): three profiles, not one block seen thrice
    local k
    for k in 1 2 1; do
        code=$(push "$k" "/api/v1/ingest?service=rep&instance=same&from=$t0&until=$((t0 + 10))" --data-binary $'x;y 5\n')
        assert_eq "identical push to front end $k" 200 "$code"
        fe_drained "$k" || return
        want=$((want + 5))
    done
    local i
    for i in 1 2; do
        assert_ok "sync replica $i" "$i" "SYSTEM SYNC REPLICA flamedb.samples_local" >/dev/null
        assert_ok "sync replica $i" "$i" "SYSTEM SYNC REPLICA flamedb.profiles_local" >/dev/null
        assert_eq "profiles on replica $i (the replayed file counted once, identical pushes each)" 33 \
            "$(chq "$i" "SELECT count() FROM flamedb.profiles FORMAT TSV")"
        assert_eq "total on replica $i" "$want" "$(chq "$i" "SELECT sum(value) FROM flamedb.samples FORMAT TSV")"
    done
}

test_front_retention_drops_whole_days() {
    ch_cluster_start single
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms
    local now old1 old2 code
    now=$(date +%s)
    old1=$((now - 5 * 86400))
    old2=$((now - 4 * 86400))
    for t in $old1 $old2 $((now - 3600)); do
        code=$(push 1 "/api/v1/ingest?service=ret&from=$t&until=$((t + 10))" --data-binary $'a;b 4\na;c 6\n')
        assert_eq "push at $t" 200 "$code"
    done
    fe_drained 1 || return
    assert_eq "three profiles before retention" 3 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    fe_stop 1
    # retention runs when the front end starts, then every 10 minutes
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms --retention 2d
    local tries=300
    while [ $tries -gt 0 ] && ! grep -q "retention dropped day" "$CT_TMP/fe-1.log" 2>/dev/null; do
        sleep 0.1
        tries=$((tries - 1))
    done
    tries=100
    while [ $tries -gt 0 ] && [ "$(grep -c "retention dropped day" "$CT_TMP/fe-1.log")" -lt 2 ]; do
        sleep 0.1
        tries=$((tries - 1))
    done
    assert_eq "days dropped (logged)" 2 "$(grep -c "retention dropped day" "$CT_TMP/fe-1.log")"
    local t
    for t in profiles samples samples_10m samples_1h profiles_10m profiles_1h; do
        assert_eq "$t: only the recent day's partition" "$(date -u -d "@$((now - 3600))" +%Y%m%d)" \
            "$(chq 1 "SELECT DISTINCT partition FROM system.parts WHERE database = 'flamedb' AND table = '$t' AND active FORMAT TSV")"
    done
    assert_eq "the recent profile's total" 10 "$(chq 1 "SELECT sum(value) FROM flamedb.samples FORMAT TSV")"
    # a push older than the retention is refused, as on a single node
    code=$(push 1 "/api/v1/ingest?service=ret&from=$old1&until=$((old1 + 10))" --data-binary $'a;b 4\n')
    assert_eq "a push older than the retention" 400 "$code"
}

test_front_delete_series_is_a_mutation() {
    ch_cluster_start single
    fe_start 1 "${CH_URL[1]}" --flush-every 1h
    local t0=1767225600 code s
    for s in eu us ap; do
        code=$(push 1 "/api/v1/ingest?service=shop&region=$s&from=$t0&until=$((t0 + 10))" --data-binary $'a;b 4\na;c 6\n')
        assert_eq "push $s" 200 "$code"
        code=$(push 1 "/api/v1/ingest?service=shop&region=$s&from=$((t0 + 10))&until=$((t0 + 20))" --data-binary $'a;b 1\n')
    done
    # nothing flushed yet: the deletion waits for what was acknowledged
    assert_eq "before: nothing in ClickHouse" 0 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    code=$(curl -s -o "$CT_TMP/del.json" -w '%{http_code}' -X DELETE -G "$(fe_url 1)/api/v1/series" \
        --data-urlencode 'query=shop{region=~"e.|a."}')
    assert_eq "DELETE in cluster mode" 202 "$code"
    assert_eq "what matched" "2 4" "$(jq -r '"\(.deleted_series) \(.deleted_profiles)"' "$CT_TMP/del.json")"
    code=$(curl -s -o "$CT_TMP/del.json" -w '%{http_code}' -X DELETE -G "$(fe_url 1)/api/v1/series" --data-urlencode 'query={}')
    assert_eq "{} without all=true" 400 "$code"
    # the mutation runs in the background: wait (bounded) for it
    local tries=300
    while [ $tries -gt 0 ] && [ "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")" != 2 ]; do
        sleep 0.1
        tries=$((tries - 1))
    done
    assert_eq "profiles left: us only" 2 "$(chq 1 "SELECT count() FROM flamedb.profiles FORMAT TSV")"
    local t
    for t in samples samples_10m samples_1h; do
        tries=100
        while [ $tries -gt 0 ] && [ "$(chq 1 "SELECT sum(value) FROM flamedb.$t FORMAT TSV")" != 11 ]; do
            sleep 0.1
            tries=$((tries - 1))
        done
        assert_eq "$t: us's values only" 11 "$(chq 1 "SELECT sum(value) FROM flamedb.$t FORMAT TSV")"
    done
    assert_eq "the series kept are us's" "['region','service','type']	['us','shop','cpu']" \
        "$(chq 1 "SELECT DISTINCT label_names, label_values FROM flamedb.samples AS s ANY INNER JOIN flamedb.series USING series FORMAT TSV")"
    # pushed again, a deleted series has data again
    code=$(push 1 "/api/v1/ingest?service=shop&region=eu&from=$((t0 + 30))&until=$((t0 + 40))" --data-binary $'a;b 2\n')
    assert_eq "push eu again" 200 "$code"
    curl -s -X DELETE -G "$(fe_url 1)/api/v1/series" --data-urlencode 'query={region="nowhere"}' -o "$CT_TMP/del.json"
    assert_eq "deleting nothing" "0 0" "$(jq -r '"\(.deleted_series) \(.deleted_profiles)"' "$CT_TMP/del.json")"
    assert_eq "eu's new profile arrived (flushed by the deletion)" 2 \
        "$(chq 1 "SELECT sum(value) FROM flamedb.samples WHERE series IN (SELECT series FROM flamedb.labels WHERE value = 'eu') FORMAT TSV")"
}

test_front_selectors_match_as_on_a_single_node() {
    # the same series pushed to a single-node flamedb and through a front
    # end; each selector's series in ClickHouse (chselect.c's SQL) must be
    # those the single node answers (/api/v1/series), label set for label set
    ch_cluster_start single
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms
    local port t0=1767225600 code
    port=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:$port" --data "$CT_TMP/single" --retention 0 >"$CT_TMP/single.log" 2>&1 &
    local single=$!
    local tries=200
    until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 || [ $tries -eq 0 ]; do sleep 0.05; tries=$((tries - 1)); done
    local labels
    for labels in "service=api&region=eu&env=prod" "service=api&region=us&env=prod" "service=api&env=dev" \
                  "service=web&region=eu" "service=web&region=eu-west&zone=a" "service=db" \
                  "service=q%27uote&region=back%5Cslash"; do
        code=$(push 1 "/api/v1/ingest?$labels&from=$t0&until=$((t0 + 10))" --data-binary $'a;b 1\n')
        assert_eq "push $labels to the front end" 200 "$code"
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/ingest?$labels&from=$t0&until=$((t0 + 10))" --data-binary $'a;b 1\n')
        assert_eq "push $labels to the single node" 200 "$code"
    done
    fe_drained 1 || return
    local sel want got where
    for sel in '{}' '{service="api"}' '{service!="api"}' '{region="eu"}' '{region!="eu"}' '{region=""}' \
               '{region!=""}' '{region=~"eu.*"}' '{region!~"eu.*"}' '{region=~""}' '{region=~"e|u"}' \
               '{service=~"a.i",env!="dev"}' '{zone!~"a"}' '{service="q'"'"'uote"}' '{region="back\\slash"}' \
               '{service=~"(?i)API"}' '{nothere=""}' '{nothere!=""}'; do
        want=$(curl -s -G "http://127.0.0.1:$port/api/v1/series" --data-urlencode "query=$sel" -d from=$t0 -d until=$((t0 + 10)) |
            jq -c '[.series[].labels | to_entries | map(select(.key != "type")) | from_entries] | sort')
        tool_ok "where $sel" where "$sel" || continue
        where=$OUT
        got=$(chq 1 "SELECT DISTINCT label_names, label_values FROM flamedb.series WHERE $where FORMAT JSONEachRow" |
            jq -sc '[.[] | [.label_names, .label_values] | transpose | map(select(.[0] != "type")) | map({(.[0]): .[1]}) | add // {}] | sort')
        assert_eq "series of $sel" "$want" "$got"
    done
    kill "$single" 2>/dev/null
    wait "$single" 2>/dev/null
}

test_front_merge_pushdown_equals_single_node() {
    # the read path's SQL (cluster/chread.c): a range read as raw rows at
    # its ragged edges and 1 h / 10 min rollups in between, summed on the
    # shards, answers the same stacks and values as a single node's merge
    ch_cluster_start two_shards
    fe_start 1 "${CH_URL[1]},${CH_URL[2]}" --clickhouse-cluster two_shards --flush-every 100ms
    local port t0=1767225600 code k i
    port=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:$port" --data "$CT_TMP/single" --retention 0 >"$CT_TMP/single.log" 2>&1 &
    local single=$! tries=200
    until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 || [ $tries -eq 0 ]; do sleep 0.05; tries=$((tries - 1)); done
    # a profile every 5 minutes for 3 hours, 3 instances, stacks that change with time
    for ((k = 0; k < 36; k++)); do
        for i in 1 2 3; do
            local body t=$((t0 + 300 * k))
            body=$(printf 'main;serve;handler_%s %s\nmain;gc %s\nmain;serve;io_%s %s\n' $((k % 7)) $((k + i)) $i $((k % 3)) $((2 * k + 1)))
            code=$(push 1 "/api/v1/ingest?service=roll&instance=i$i&from=$t&until=$((t + 10))" --data-binary "$body")
            [ "$code" = 200 ] || fail "front end push $k/$i: $code"
            code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/ingest?service=roll&instance=i$i&from=$t&until=$((t + 10))" --data-binary "$body")
            [ "$code" = 200 ] || fail "single node push $k/$i: $code"
        done
    done
    fe_drained 1 || return
    local range from until sel want got
    for range in "420 10380" "0 10800" "3780 3840" "1200 3000" "-600 20000" "3600 7200"; do
        from=$((t0 + ${range% *}))
        until=$((t0 + ${range#* }))
        for sel in '{service="roll"}' '{instance="i2"}' '{instance!="i2"}'; do
            want=$(curl -s -G "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$sel" -d from=$from -d until=$until -d format=folded | sort)
            tool_ok "merge $sel $range" merge "${CH_URL[2]}" "$sel" $((from * 1000)) $((until * 1000)) -c two_shards || continue
            got=$OUT
            assert_eq "merge of $sel over [$range) s" "$want" "$got"
        done
        [ "$range" = "420 10380" ] && assert_contains "the plan of [7 min, 2 h 53 min)" "$ERR" "samples_1h"
    done
    assert_ge "stacks in the longest answer" 8 "$(wc -l <<<"$want")"
    kill "$single" 2>/dev/null
    wait "$single" 2>/dev/null
}
