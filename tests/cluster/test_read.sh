# test_read.sh — reads in cluster mode (issue 10, the read path): front
# ends on ClickHouse answer every read endpoint byte for byte as a single
# node holding the same data (tests/cluster/equiv.py: a seeded workload
# crossing day partitions and roll-up boundaries, random queries over every
# endpoint); a shard that is down is a 503 naming it, partial=true an answer
# that says so; a replica killed changes nothing.
#
# FLAMEDB: the server binary (make cluster-test passes it).

test_read_equivalence_one_server() {
    ch_cluster_start single
    sn_start
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms
    equiv_load 11 "$(fe_url 1)" || return
    equiv_check "one ClickHouse server, 200 queries" 200 101 "$(fe_url 1)"
    # both read paths ran: profiles loaded (short ranges, per-profile
    # analyses) and merges summed in ClickHouse (ranges of an hour or more)
    local m
    m=$(curl -s "$(fe_url 1)/metrics")
    assert_ge "profile loads" 1 "$(awk '$1 == "flamedb_clickhouse_read_loads_total" { print $2 }' <<<"$m")"
    assert_ge "merges summed in ClickHouse" 1 "$(awk '$1 == "flamedb_clickhouse_read_merges_total" { print $2 }' <<<"$m")"
    assert_eq "read errors" 0 "$(awk '$1 == "flamedb_clickhouse_read_errors_total" { print $2 }' <<<"$m")"
    # the units of variance and stability: windows under an hour read raw
    # profiles, loaded for the whole range in one statement, not one a
    # window (288 of them here: 15 s on two shards before)
    local kind q before
    for kind in variance stability; do
        q="/api/v1/$kind?from=$((EQ_BASE - 86400))&until=$((EQ_BASE + 86400))&query=%7B%7D&step=600"
        before=$(read_loads 1)
        assert_eq "$kind of 10-minute windows" "$(curl -s "$(sn_url)$q")" "$(curl -s "$(fe_url 1)$q")"
        assert_eq "$kind of 10-minute windows: its loads" 1 $(( $(read_loads 1) - before ))
    done
    assert_eq "variance: every window is a unit" 288 "$(curl -s "$(fe_url 1)/api/v1/variance?from=$((EQ_BASE - 86400))&until=$((EQ_BASE + 86400))&query=%7B%7D&step=600" | jq .units)"
    # windows of an hour or more are summed in ClickHouse, every window in
    # one merge (at most 256 a merge): 47 windows with ragged edges (raw
    # rows and 10-minute rollups at both ends of each), then 288 of them
    local span
    for kind in variance stability; do
        for span in "$((EQ_BASE - 86400 + 1234)) $((EQ_BASE + 86400)) 1" "$((EQ_BASE - 10 * 86400)) $((EQ_BASE + 2 * 86400)) 2"; do
            set -- $span
            q="/api/v1/$kind?from=$1&until=$2&query=%7B%7D&step=3600"
            before=$(read_merges 1)
            assert_eq "$kind of hours from $1" "$(curl -s "$(sn_url)$q")" "$(curl -s "$(fe_url 1)$q")"
            # and one merge of the whole range, for the answer's unit
            assert_eq "$kind of hours from $1: its merges" $(($3 + 1)) $(( $(read_merges 1) - before ))
        done
    done
    # a grouped query or top over two days: one merge of every group's
    # series, not their raw profiles loaded to size the groups' trees
    local loads
    for kind in query top; do
        q="/api/v1/$kind?from=$((EQ_BASE - 86400))&until=$((EQ_BASE + 86400))&query=%7B%7D&group_by=instance"
        before=$(read_merges 1)
        loads=$(read_loads 1)
        assert_eq "$kind grouped by instance" "$(curl -s "$(sn_url)$q")" "$(curl -s "$(fe_url 1)$q")"
        assert_eq "$kind grouped by instance: its merges" 1 $(( $(read_merges 1) - before ))
        assert_eq "$kind grouped by instance: its loads" 0 $(( $(read_loads 1) - loads ))
    done
    sn_stop
}

# read_loads I, read_merges I: front end I's profile loads and merges from
# ClickHouse so far.
read_loads() {
    curl -s "$(fe_url "$1")/metrics" | awk '$1 == "flamedb_clickhouse_read_loads_total" { print $2 }'
}
read_merges() {
    curl -s "$(fe_url "$1")/metrics" | awk '$1 == "flamedb_clickhouse_read_merges_total" { print $2 }'
}

test_read_equivalence_two_shards() {
    ch_cluster_start two_shards
    sn_start
    fe_start 1 "${CH_URL[1]},${CH_URL[2]}" --clickhouse-cluster two_shards --flush-every 100ms
    fe_start 2 "${CH_URL[2]},${CH_URL[1]}" --clickhouse-cluster two_shards --flush-every 100ms
    equiv_load 12 "$(fe_url 1),$(fe_url 2)" || return
    equiv_check "two shards, front end 1" 200 102 "$(fe_url 1)"
    equiv_check "two shards, front end 2" 60 103 "$(fe_url 2)"
    sn_stop
}

test_read_shard_down_is_503_or_partial() {
    ch_cluster_start two_shards
    sn_start
    fe_start 1 "${CH_URL[1]},${CH_URL[2]}" --clickhouse-cluster two_shards --flush-every 100ms
    equiv_load 13 "$(fe_url 1)" || return
    local q="/api/v1/query?query=%7B%7D&from=$((EQ_BASE - 2 * 86400))&until=$((EQ_BASE + 2 * 86400))"
    local all code
    all=$(curl -s "$(sn_url)$q" | jq .total)
    assert_eq "the front end's total before" "$all" "$(curl -s "$(fe_url 1)$q" | jq .total)"
    ch_stop 2
    # ingest goes on into the spool
    code=$(push 1 "/api/v1/ingest?service=late&from=$EQ_BASE&until=$((EQ_BASE + 10))" --data-binary $'a;b 5\n')
    assert_eq "a push while shard 2 is down" 200 "$code"
    curl -s -o /dev/null "$(sn_url)/api/v1/ingest?service=late&from=$EQ_BASE&until=$((EQ_BASE + 10))" --data-binary $'a;b 5\n'
    # a read is a 503 naming the shard, never a silent partial answer
    code=$(curl -s -o "$CT_TMP/q.json" -w '%{http_code}' "$(fe_url 1)$q")
    assert_eq "a query while shard 2 is down" 503 "$code"
    assert_contains "its error names the shard" "$(jq -r .error "$CT_TMP/q.json")" "shard 2 (127.0.0.1:${CH_TCP[2]})"
    assert_contains "and says how to get a partial answer" "$(jq -r .error "$CT_TMP/q.json")" "partial=true"
    code=$(curl -s -o "$CT_TMP/q.json" -w '%{http_code}' "$(fe_url 1)/api/v1/top?query=%7B%7D&from=$((EQ_BASE - 2 * 86400))&until=$((EQ_BASE + 2 * 86400))")
    assert_eq "top while shard 2 is down" 503 "$code"
    assert_eq "metrics: reads stopped for ClickHouse" 2 \
        "$(curl -s "$(fe_url 1)/metrics" | awk '$1 == "flamedb_queries_stopped_total{reason=\"clickhouse_unavailable\"}" { print $2 }')"
    # partial=true: the shards that answer, and the answer says so
    code=$(curl -s -D "$CT_TMP/h.txt" -o "$CT_TMP/q.json" -w '%{http_code}' "$(fe_url 1)$q&partial=true")
    assert_eq "a partial query" 200 "$code"
    assert_eq "it says partial" true "$(jq .partial "$CT_TMP/q.json")"
    assert_contains "and in a header" "$(tr -d '\r' <"$CT_TMP/h.txt")" "X-Flamedb-Partial: true"
    local part
    part=$(jq .total "$CT_TMP/q.json")
    [ "$part" -gt 0 ] && [ "$part" -lt "$all" ] || fail "a partial total $part, not between 0 and the whole $all"
    code=$(curl -s -o "$CT_TMP/q.json" -w '%{http_code}' "$(fe_url 1)$q&partial=maybe")
    assert_eq "partial=maybe" 400 "$code"
    # back: the spool drains and the answers are the single node's again
    ch_start 2
    fe_drained 1 || return
    code=$(curl -s -D "$CT_TMP/h.txt" -o "$CT_TMP/q.json" -w '%{http_code}' "$(fe_url 1)$q&partial=true")
    assert_eq "partial=true with every shard up" 200 "$code"
    assert_eq "is not partial" null "$(jq .partial "$CT_TMP/q.json")"
    assert_eq "and whole" "$(curl -s "$(sn_url)$q" | jq .total)" "$(jq .total "$CT_TMP/q.json")"
    equiv_check "two shards, after shard 2 came back" 80 104 "$(fe_url 1)"
    sn_stop
}

# 1 shard x 2 replicas, two front ends listing the replicas in opposite
# orders: the workload round robin through both, so each replica takes
# half of the inserts and must fetch the other half from the other one;
# then the replica front end 1 reads first is killed (SIGKILL, with idle
# clients on it in front end 1's pool), and front end 1's answers, from
# its other URL now, are still the single node's from the first query on.
test_read_equivalence_replicas_one_killed() {
    ch_cluster_start one_shard_two_replicas
    sn_start
    fe_start 1 "${CH_URL[1]},${CH_URL[2]}" --clickhouse-cluster one_shard_two_replicas --flush-every 100ms
    fe_start 2 "${CH_URL[2]},${CH_URL[1]}" --clickhouse-cluster one_shard_two_replicas --flush-every 100ms
    equiv_load 15 "$(fe_url 1),$(fe_url 2)" || return
    ch_sync_replicas || return
    equiv_check "one shard, two replicas, front end 1" 200 106 "$(fe_url 1)"
    equiv_check "one shard, two replicas, front end 2" 60 107 "$(fe_url 2)"
    # a front end under load holds several idle clients on the replica it
    # reads: concurrent reads leave them in its pool for the kill to find
    local q="/api/v1/query?query=%7B%7D&from=$((EQ_BASE - 2 * 86400))&until=$((EQ_BASE + 2 * 86400))" pids=()
    for _ in 1 2 3 4 5 6; do
        curl -s -o /dev/null "$(fe_url 1)$q" &
        pids+=($!)
    done
    wait "${pids[@]}"
    ch_kill 1
    equiv_check "one shard, replica 1 killed, front end 1 on replica 2" 80 108 "$(fe_url 1)"
    sn_stop
}

test_read_sample_labels_as_on_a_single_node() {
    ch_cluster_start single
    sn_start
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms
    ct_tmp
    cat >"$CT_TMP/spec.json" <<JSON
{"types": [["samples", "count"], ["cpu", "nanoseconds"]],
 "samples": [
  {"stack": "main;work", "values": [10, 100000000], "labels": {"span_id": "a1", "endpoint": "/api"}},
  {"stack": "main;work", "values": [5, 50000000], "labels": {"span_id": "b2", "endpoint": "/api"}},
  {"stack": "main;idle", "values": [7, 70000000], "labels": {"span_id": "a1"}},
  {"stack": "main;io;read", "values": [3, 30000000]}
 ]}
JSON
    python3 "$REPO/tests/integration/pprof_labels.py" "$CT_TMP/spec.json" "$CT_TMP/lab.pb" || die "pprof_labels.py failed"
    local t=$EQ_BASE u code a b q
    for u in "$(sn_url)" "$(fe_url 1)"; do
        code=$(curl -s -o "$CT_TMP/push.json" -w '%{http_code}' "$u/api/v1/ingest?format=pprof&service=lab&from=$t&until=$((t + 10))" --data-binary @"$CT_TMP/lab.pb")
        assert_eq "pprof with sample labels into $u" 200 "$code"
        assert_eq "labels kept by $u" 5 "$(jq .sample_labels.kept "$CT_TMP/push.json")"
    done
    fe_drained 1 || return
    # queries, and the labels discovered and ranked (the same scan over the
    # remote reader), as on a single node
    for q in 'query?query=%7Bservice%3D%22lab%22%7D&format=folded' \
        'query?query=%7Bservice%3D%22lab%22%2Cspan_id%3D%22a1%22%7D&format=folded' \
        'query?query=%7Bservice%3D%22lab%22%2Cendpoint%21%3D%22%2Fapi%22%7D&format=json' \
        'query?query=%7Bservice%3D%22lab%22%7D&group_by_sample=span_id&format=json' \
        "labels?query=%7Bservice%3D%22lab%22%7D&sample_labels=1" "label/span_id/values?query=%7Bservice%3D%22lab%22%7D" \
        "label/service/values?query=%7Bendpoint%3D%22%2Fapi%22%7D" \
        "top?query=%7Bservice%3D%22lab%22%7D&group_by_sample=span_id" \
        "series?query=%7Bservice%3D%22lab%22%2Cspan_id%3D%22a1%22%7D" \
        "series?query=%7Bservice%3D%22lab%22%7D&limit=1" \
        "labels?query=%7Bservice%3D%22lab%22%7D&sample_labels=1&limit=1" \
        "label/span_id/values?query=%7Bservice%3D%22lab%22%7D&limit=1"; do
        a=$(curl -s "$(sn_url)/api/v1/$q&from=$((t - 60))&until=$((t + 60))")
        b=$(curl -s "$(fe_url 1)/api/v1/$q&from=$((t - 60))&until=$((t + 60))")
        assert_eq "sample labels: $q" "$a" "$b"
    done
    assert_eq "the front end lists the sample labels" "endpoint,span_id" \
        "$(curl -s "$(fe_url 1)/api/v1/labels?query=%7Bservice%3D%22lab%22%7D&sample_labels=1&from=$((t - 60))&until=$((t + 60))" |
            jq -r '[.sample_labels[].name]|join(",")')"
    assert_eq "the front end lists the series holding span a1's stacks, with their totals" \
        "lab/cpu=170000000,lab/samples=17" \
        "$(curl -s "$(fe_url 1)/api/v1/series?query=%7Bspan_id%3D%22a1%22%7D&from=$((t - 60))&until=$((t + 60))" |
            jq -r '[.series[]|"\(.labels.service)/\(.labels.type)=\(.total)"]|join(",")')"
    assert_eq "the span filter keeps span a1's stacks (type cpu)" $'main;idle 70000000\nmain;work 100000000' \
        "$(curl -s "$(fe_url 1)/api/v1/query?query=%7Bservice%3D%22lab%22%2Cspan_id%3D%22a1%22%7D&format=folded&from=$((t - 60))&until=$((t + 60))")"
}
