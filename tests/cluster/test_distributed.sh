# test_distributed.sh — the Distributed tables chschema.c makes over two
# shards: a SELECT sums both shards, rollups agree with the raw rows, a
# synchronous Distributed INSERT splits by series, and a stopped shard is
# an error the client surfaces with ClickHouse's code (279), never a
# partial answer unless skip_unavailable_shards asks for one.

# _two_shards_loaded: two shards with the schema and one block on each
# shard's local table; sets S1 and S2 (their value sums).
_two_shards_loaded() {
    ch_cluster_start two_shards
    tool_ok "schema" schema "${CH_URL[1]}" -c two_shards || exit 1
    tool_ok "block on shard 1" samples "${CH_URL[1]}" flamedb.samples_local 1 3000 || exit 1
    S1=$OUT
    tool_ok "block on shard 2" samples "${CH_URL[2]}" flamedb.samples_local 2 3000 || exit 1
    S2=$OUT
}

test_sum_over_both_shards() {
    _two_shards_loaded
    local i t
    for i in 1 2; do
        tool_ok "Distributed sum via server $i" u64 "${CH_URL[$i]}" "SELECT sum(value) FROM flamedb.samples"
        assert_eq "sum via server $i = shard 1 + shard 2" "$((S1 + S2))" "$OUT"
    done
    tool_ok "local sum" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples_local"
    assert_eq "server 1's local table has only its block" "$S1" "$OUT"
    # the views filled both rollups on each shard as the rows arrived
    for t in samples_10m samples_1h; do
        tool_ok "$t sum" u64 "${CH_URL[2]}" "SELECT sum(value) FROM flamedb.$t"
        assert_eq "$t sums the same" "$((S1 + S2))" "$OUT"
    done
    # bucket by bucket, per series and stack, the rollups are the raw rows
    tool_ok "10 min buckets = raw rows grouped" u64 "${CH_URL[1]}" \
        "SELECT toUInt64(count()) FROM (SELECT series, intDiv(window_start, 600000) * 600000 AS bucket, stack, sum(value) AS v FROM flamedb.samples GROUP BY series, bucket, stack) ALL FULL OUTER JOIN (SELECT series, bucket, stack, sum(value) AS v2 FROM flamedb.samples_10m GROUP BY series, bucket, stack) USING (series, bucket, stack) WHERE v != v2"
    assert_eq "10 min buckets differing from the raw rows" 0 "$OUT"
    tool_ok "1 h buckets" u64 "${CH_URL[1]}" \
        "SELECT toUInt64(count()) FROM flamedb.samples_1h WHERE bucket % 3600000 != 0"
    assert_eq "1 h buckets not on the hour" 0 "$OUT"
    # days are UTC partitions: 3 days of windows from 2026-01-01
    assert_eq "partitions of samples_local on server 1" "20260101 20260102 20260103" \
        "$(chq 1 "SELECT DISTINCT partition FROM system.parts WHERE database='flamedb' AND table='samples_local' AND active ORDER BY partition FORMAT TSV" | tr '\n' ' ' | sed 's/ $//')"
    # retention: a day dropped whole, ON CLUSTER, from raw rows and rollups
    tool_ok "rest" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples WHERE window_start >= 1767312000000"
    local rest=$OUT
    for t in samples samples_10m samples_1h; do
        tool_ok "drop a day of $t" exec "${CH_URL[2]}" "ALTER TABLE flamedb.${t}_local ON CLUSTER two_shards DROP PARTITION 20260101"
        tool_ok "$t after" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.$t"
        assert_eq "$t without 2026-01-01" "$rest" "$OUT"
    done
}

test_distributed_insert_splits_by_series() {
    ch_cluster_start two_shards
    tool_ok "schema" schema "${CH_URL[1]}" -c two_shards || return
    # synchronous: the answer comes once both shards have their rows
    # (asynchronous by default: the rows would wait in a spool on server 1)
    tool_ok "insert into Distributed" samples "${CH_URL[1]}" "flamedb.samples" 5 2000 - insert_distributed_sync=1
    local sum=$OUT
    tool_ok "sum" u64 "${CH_URL[2]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "everything arrived at once" "$sum" "$OUT"
    # series % 2 picks the shard (weights 1 and 1): even on shard 1
    assert_eq "odd series on shard 1" 0 "$(chq 1 "SELECT count() FROM flamedb.samples_local WHERE series % 2 = 1 FORMAT TSV")"
    assert_eq "even series on shard 2" 0 "$(chq 2 "SELECT count() FROM flamedb.samples_local WHERE series % 2 = 0 FORMAT TSV")"
    assert_eq "rows on both" "1 1" \
        "$(echo "$(chq 1 "SELECT count() > 0 FROM flamedb.samples_local FORMAT TSV") $(chq 2 "SELECT count() > 0 FROM flamedb.samples_local FORMAT TSV")")"
}

test_stopped_shard_is_an_error() {
    _two_shards_loaded
    ch_stop 2
    tool u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "exit with a shard down" 3 "$RC"
    assert_contains "the code" "$ERR" "ClickHouse error: code 279: ClickHouse at ${CH_URL[1]} answered code 279: All connection tries failed"
    assert_eq "no partial sum printed" "" "$OUT"
    # again (a fresh connection attempt, not a stale pooled one): the
    # message names the shard that is down
    tool u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples"
    assert_contains "the shard named" "$ERR" "Connection refused (127.0.0.1:${CH_TCP[2]})"
    # skip_unavailable_shards: a partial answer, silently (what flamedb
    # must never pass on without saying "partial")
    tool exec "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples FORMAT TSV" skip_unavailable_shards=1
    assert_eq "exit with skip_unavailable_shards" 0 "$RC"
    assert_eq "the partial sum is shard 1's" "$S1" "$OUT"
    # the schema check reads through the Distributed meta: refused too
    tool schema "${CH_URL[1]}" -c two_shards -v 1
    assert_eq "schema with a shard down" 3 "$RC"
    # back up: whole again
    ch_start 2
    tool_ok "sum after restart" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "sum after restart" "$((S1 + S2))" "$OUT"
}
