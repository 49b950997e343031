# test_schema.sh — cluster/chschema.c on real servers: tables created when
# missing, idempotent, safe when two processes run it at once, on one
# server and ON CLUSTER over both topologies; other schema versions and
# foreign tables refused with a message saying what to do.

# names of the tables of database DB on server I, sorted, one line
_tables_of() {
    chq "$1" "SELECT name FROM system.tables WHERE database = '$2' ORDER BY name FORMAT TSV" | tr '\n' ' ' | sed 's/ $//'
}

test_single_idempotent_and_concurrent() {
    ch_cluster_start single
    # two processes at once on an empty server, then once more
    "$CHTOOL" schema "${CH_URL[1]}" >"$CT_TMP/a.out" 2>&1 &
    local p1=$!
    "$CHTOOL" schema "${CH_URL[1]}" >"$CT_TMP/b.out" 2>&1 &
    local p2=$!
    wait $p1 || fail "first concurrent schema run failed: $(cat "$CT_TMP/a.out")"
    wait $p2 || fail "second concurrent schema run failed: $(cat "$CT_TMP/b.out")"
    tool_ok "third run" schema "${CH_URL[1]}"
    assert_eq "the output" "schema ok" "$OUT"
    local want
    want=$(for t in $CT_TABLES $CT_VIEWS; do echo "$t"; done | sort | tr '\n' ' ' | sed 's/ $//')
    assert_eq "tables on one server" "$want" "$(_tables_of 1 flamedb)"
    assert_eq "engine of samples" "MergeTree" \
        "$(chq 1 "SELECT engine FROM system.tables WHERE database='flamedb' AND name='samples' FORMAT TSV")"
    assert_eq "engine of stacks" "ReplacingMergeTree" \
        "$(chq 1 "SELECT engine FROM system.tables WHERE database='flamedb' AND name='stacks' FORMAT TSV")"
    assert_eq "engine of samples_1h" "SummingMergeTree" \
        "$(chq 1 "SELECT engine FROM system.tables WHERE database='flamedb' AND name='samples_1h' FORMAT TSV")"
    # each run that found no version row wrote one: all say 2
    assert_eq "schema versions" "2" \
        "$(chq 1 "SELECT DISTINCT value FROM flamedb.meta WHERE name='schema_version' FORMAT TSV")"
    # another database name is another schema
    tool_ok "database -d other" schema "${CH_URL[1]}" -d other
    assert_eq "tables of other" "$want" "$(_tables_of 1 other)"
}

test_version_refused() {
    ch_cluster_start single
    tool_ok "version 2" schema "${CH_URL[1]}"
    # a newer flamedb on it: refused, nothing changed
    tool schema "${CH_URL[1]}" -v 3
    assert_eq "exit of version 3 on a version-2 schema" 1 "$RC"
    assert_contains "refusal" "$ERR" "holds flamedb schema version 2, older than this flamedb's 3: migrate it first"
    # an older flamedb on a newer schema
    tool_ok "version 3 on a fresh database" schema "${CH_URL[1]}" -d newer -v 3
    tool schema "${CH_URL[1]}" -d newer
    assert_eq "exit of version 2 on a version-3 schema" 1 "$RC"
    assert_contains "refusal" "$ERR" "holds flamedb schema version 3, newer than this flamedb's 2: upgrade this flamedb"
    assert_eq "versions untouched" "3" \
        "$(chq 1 "SELECT DISTINCT value FROM newer.meta WHERE name='schema_version' FORMAT TSV")"
    # two versions at once (front ends of two versions raced): refused
    chq 1 "INSERT INTO newer.meta VALUES ('schema_version', '1')" >/dev/null || fail "insert a second version row"
    tool schema "${CH_URL[1]}" -d newer -v 3
    assert_eq "exit with two versions" 1 "$RC"
    assert_contains "refusal" "$ERR" "several flamedb schema versions"
}

test_foreign_tables_refused() {
    ch_cluster_start single
    # a database that has a samples table of someone else's making
    assert_ok "create db" 1 "CREATE DATABASE fdb" >/dev/null
    assert_ok "create foreign samples" 1 \
        "CREATE TABLE fdb.samples (tenant String, series UInt32, ts DateTime) ENGINE = MergeTree() ORDER BY series" >/dev/null
    tool schema "${CH_URL[1]}" -d fdb
    assert_eq "exit on a foreign samples table" 1 "$RC"
    assert_contains "refusal names the column" "$ERR" "fdb.samples has column series of type UInt32, flamedb schema 2 wants UInt64"
    assert_eq "nothing created beside it" "samples" "$(_tables_of 1 fdb)"
    # a table lacking a column
    assert_ok "create db2" 1 "CREATE DATABASE fdb2" >/dev/null
    assert_ok "create short stacks" 1 \
        "CREATE TABLE fdb2.stacks (stack FixedString(16)) ENGINE = MergeTree() ORDER BY stack" >/dev/null
    tool schema "${CH_URL[1]}" -d fdb2
    assert_eq "exit on a short stacks table" 1 "$RC"
    assert_contains "refusal" "$ERR" "fdb2.stacks lacks 1 of its 2 columns"
    # a bad database name never reaches ClickHouse
    tool schema "${CH_URL[1]}" -d "x; DROP"
    assert_eq "exit on a bad name" 1 "$RC"
    assert_contains "refusal" "$ERR" "must be letters, digits and _"
}

# _on_cluster TOPOLOGY: both servers run the schema at once ON CLUSTER;
# every server then has every _local table (Replicated), its Distributed
# face and the views.
_on_cluster() {
    ch_cluster_start "$1"
    "$CHTOOL" schema "${CH_URL[1]}" -c "$CT_CLUSTER" >"$CT_TMP/a.out" 2>&1 &
    local p1=$!
    "$CHTOOL" schema "${CH_URL[2]}" -c "$CT_CLUSTER" >"$CT_TMP/b.out" 2>&1 &
    local p2=$!
    wait $p1 || fail "schema ON CLUSTER from server 1 failed: $(cat "$CT_TMP/a.out")"
    wait $p2 || fail "schema ON CLUSTER from server 2 failed: $(cat "$CT_TMP/b.out")"
    tool_ok "again from server 2" schema "${CH_URL[2]}" -c "$CT_CLUSTER"
    local want t i
    want=$(for t in $CT_TABLES; do echo "$t"; echo "${t}_local"; done; for t in $CT_VIEWS; do echo "$t"; done)
    want=$(sort <<<"$want" | tr '\n' ' ' | sed 's/ $//')
    for i in 1 2; do
        assert_eq "tables on server $i" "$want" "$(_tables_of "$i" flamedb)"
        assert_eq "engines of the _local tables on server $i" \
            "ReplicatedMergeTree ReplicatedReplacingMergeTree ReplicatedSummingMergeTree" \
            "$(chq "$i" "SELECT DISTINCT engine FROM system.tables WHERE database='flamedb' AND name LIKE '%\\_local' ORDER BY engine FORMAT TSV" | tr '\n' ' ' | sed 's/ $//')"
        assert_eq "Distributed faces on server $i" "10" \
            "$(chq "$i" "SELECT count() FROM system.tables WHERE database='flamedb' AND engine='Distributed' FORMAT TSV")"
    done
    # the rollups' replicated tables keep no block hashes (see chschema.c)
    assert_contains "samples_10m_local settings" \
        "$(chq 1 "SHOW CREATE TABLE flamedb.samples_10m_local FORMAT TSVRaw")" "replicated_deduplication_window = 0"
    # the version, read through the Distributed meta
    assert_eq "schema versions" "2" \
        "$(chq 1 "SELECT DISTINCT value FROM flamedb.meta WHERE name='schema_version' FORMAT TSV")"
    # a newer version is refused on the cluster too
    tool schema "${CH_URL[1]}" -c "$CT_CLUSTER" -v 3
    assert_eq "exit of version 3" 1 "$RC"
    assert_contains "refusal" "$ERR" "older than this flamedb's 3"
}

test_on_cluster_two_shards() {
    _on_cluster two_shards
}

test_on_cluster_one_shard_two_replicas() {
    _on_cluster one_shard_two_replicas
}
