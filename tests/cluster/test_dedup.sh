# test_dedup.sh — retried inserts: a Replicated*MergeTree drops a block it
# has seen (same rows, same order), on any replica, and so do the rollups
# fed from it; distinct blocks that aggregate to identical rollup blocks
# are both kept; a plain MergeTree (no cluster) counts a retry twice.

test_replicated_retry_counted_once() {
    ch_cluster_start one_shard_two_replicas
    tool_ok "schema" schema "${CH_URL[1]}" -c one_shard_two_replicas || return
    tool_ok "block" samples "${CH_URL[1]}" flamedb.samples_local 11 4000 q-first
    local sum=$OUT t
    # the retry: same block, to the same replica, then to the other one
    tool_ok "retry on replica 1" samples "${CH_URL[1]}" flamedb.samples_local 11 4000 q-retry-1
    tool_ok "retry on replica 2" samples "${CH_URL[2]}" flamedb.samples_local 11 4000 q-retry-2
    tool_ok "sum" u64 "${CH_URL[2]}" "SELECT sum(value) FROM flamedb.samples_local"
    assert_eq "raw sum on replica 2" "$sum" "$OUT"
    # replication is asynchronous: wait (bounded) for replica 1 to have
    # what replica 2 took, then both agree
    tool_ok "sync" exec "${CH_URL[1]}" "SYSTEM SYNC REPLICA flamedb.samples_local"
    for t in samples_local samples_10m_local samples_1h_local; do
        tool_ok "sync $t" exec "${CH_URL[1]}" "SYSTEM SYNC REPLICA flamedb.$t"
        tool_ok "$t" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.$t"
        assert_eq "$t counted once after two retries" "$sum" "$OUT"
    done
    # a different block is not a retry
    tool_ok "another block" samples "${CH_URL[1]}" flamedb.samples_local 12 4000
    local sum2=$OUT
    tool_ok "sum" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "both blocks" "$((sum + sum2))" "$OUT"
    tool_ok "10m" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples_10m"
    assert_eq "both blocks in the rollup" "$((sum + sum2))" "$OUT"
    # a killed replica: the other answers, exactly
    ch_kill 1
    tool_ok "sum with replica 1 killed" u64 "${CH_URL[2]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "exact with one replica" "$((sum + sum2))" "$OUT"
}

test_identical_rollup_blocks_kept() {
    ch_cluster_start one_shard_two_replicas
    tool_ok "schema" schema "${CH_URL[1]}" -c one_shard_two_replicas || return
    # two profiles of one series 10 s apart, same stack, same value: two
    # distinct raw blocks whose 10 min (and 1 h) rollup blocks are equal.
    # 18.16 keeps both even with block hashes on the rollups (measured);
    # chschema.c turns them off anyway (replicated_deduplication_window =
    # 0), and this test holds any ClickHouse to it.
    local w0=1767225600000 t
    assert_ok "window 1" 1 "INSERT INTO flamedb.samples_local VALUES ('t', 9, $w0, 10000, 'samples', 100, 0, 'abcdefghijklmnop', 5, 1)" >/dev/null
    assert_ok "window 2" 1 "INSERT INTO flamedb.samples_local VALUES ('t', 9, $((w0 + 10000)), 10000, 'samples', 100, 0, 'abcdefghijklmnop', 5, 1)" >/dev/null
    for t in samples samples_10m samples_1h; do
        assert_eq "$t keeps both" 10 "$(chq 1 "SELECT sum(value) FROM flamedb.$t FORMAT TSV")"
    done
}

test_plain_mergetree_counts_retry_twice() {
    ch_cluster_start single
    tool_ok "schema" schema "${CH_URL[1]}"
    tool_ok "block" samples "${CH_URL[1]}" flamedb.samples 3 1000
    local sum=$OUT
    tool_ok "retry" samples "${CH_URL[1]}" flamedb.samples 3 1000
    tool_ok "sum" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "a single server's plain MergeTree counts the retry" "$((2 * sum))" "$OUT"
    # replicated on one server (with -r yes, ZooKeeper needed): not started
    # here; test_replicated_retry_counted_once covers Replicated tables
}
