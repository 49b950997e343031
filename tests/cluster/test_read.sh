# test_read.sh — reads in cluster mode (issue 10, the read path): front
# ends on ClickHouse answer every read endpoint byte for byte as a single
# node holding the same data (tests/cluster/equiv.py: a seeded workload
# crossing day partitions and roll-up boundaries, random queries over every
# endpoint); a shard that is down is a 503 naming it, partial=true an answer
# that says so; a replica down changes nothing.
#
# FLAMEDB: the server binary (make cluster-test passes it).

EQUIV="$REPO/tests/cluster/equiv.py"
SN_PID=""

# sn_start: a single-node flamedb beside the cluster, data in $CT_TMP/sn.
sn_start() {
    local tries=200
    SN_PORT=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:$SN_PORT" --data "$CT_TMP/sn" --retention 0 >>"$CT_TMP/sn.log" 2>&1 &
    SN_PID=$!
    while [ $tries -gt 0 ]; do
        curl -sf "http://127.0.0.1:$SN_PORT/healthz" >/dev/null 2>&1 && return 0
        sleep 0.05
        tries=$((tries - 1))
    done
    die "the single node did not start: $(tail -5 "$CT_TMP/sn.log")"
}

sn_url() { echo "http://127.0.0.1:$SN_PORT"; }

sn_stop() {
    [ -n "$SN_PID" ] || return 0
    _ct_stop_pid "single node" "$SN_PID"
    SN_PID=""
}

# equiv_load SEED FRONT-URLS: the workload into the single node and, round
# robin, into the front ends; waits until their spools drained.
equiv_load() {
    local seed=$1 fronts=$2 i out
    out=$(python3 "$EQUIV" workload --seed "$seed" --base "$EQ_BASE" --urls "$(sn_url)" 2>&1) ||
        { fail "workload into the single node: $out"; return 1; }
    out=$(python3 "$EQUIV" workload --seed "$seed" --base "$EQ_BASE" --shuffle 7 --urls "$fronts" 2>&1) ||
        { fail "workload into the front ends: $out"; return 1; }
    for i in "${!FE_PID[@]}"; do [ -n "${FE_PID[$i]}" ] && { fe_drained "$i" || return 1; }; done
    return 0
}

# equiv_check LABEL N SEED FRONT: N random queries, the single node against
# one front end; every difference is a failure.
equiv_check() {
    local label=$1 n=$2 seed=$3 url=$4 out
    if ! out=$(python3 "$EQUIV" compare --seed "$seed" --base "$EQ_BASE" --n "$n" "$(sn_url)" "$url" 2>&1); then
        fail "$label: $(tail -c 3000 <<<"$out")"
        return 1
    fi
    assert_contains "$label" "$(tail -1 <<<"$out")" "equiv: $n queries, 0 differ"
}

# A day boundary well inside the data's retention: three days ago (UTC).
EQ_BASE=$(( ($(date +%s) / 86400 - 3) * 86400 ))

test_read_equivalence_one_server() {
    ch_cluster_start single
    sn_start
    fe_start 1 "${CH_URL[1]}" --flush-every 100ms
    equiv_load 11 "$(fe_url 1)" || return
    equiv_check "one ClickHouse server, 200 queries" 200 101 "$(fe_url 1)"
    sn_stop
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

test_read_replica_down_changes_nothing() {
    ch_cluster_start one_shard_two_replicas
    sn_start
    fe_start 1 "${CH_URL[1]},${CH_URL[2]}" --clickhouse-cluster one_shard_two_replicas --flush-every 100ms
    equiv_load 14 "$(fe_url 1)" || return
    ch_kill 2
    equiv_check "one shard, one of its two replicas killed" 80 105 "$(fe_url 1)"
    sn_stop
}
