# test_equiv_layout.sh — answers are a function of the data, not of how it
# lies on disk (issue 10: a cluster's front ends must answer byte for byte
# what a single node answers).  Two servers with different layouts — one
# writer and day partitions, four writers and 6 h partitions — get the same
# seeded workload (tests/cluster/equiv.py workload: a few hundred series,
# three days of windows crossing partition and roll-up boundaries, rates,
# units, gauges, folded, Pyroscope and pprof pushes), the second in another
# order; then equiv.py compare sends the same few hundred random queries
# (every read endpoint, every format, selectors with = != =~ !~, ranges
# inside, across and outside the data) to both and byte-compares status and
# body.  Reader node and string ids differ between the two (they follow
# partitions, shards and push order); anything an answer ordered or
# numbered by them shows here.

EQUIV_PY="$REPO/tests/cluster/equiv.py"
EQUIV_SEED=20261125

# equiv_two_servers — A (1 writer, 1 d partitions) and B (4 writers, 6 h),
# the workload pushed to A in its order and to B shuffled.  Sets A, B,
# EQUIV_BASE and A_PID (B is the lib's $PID, stopped by it_cleanup).
equiv_two_servers() {
    command -v python3 >/dev/null || die "python3 is required (tests/cluster/equiv.py)"
    start_server --writers 1
    A=$BASE A_PID=$PID A_LOG=$LOG
    PID=""
    trap 'if [ -n "${A_PID:-}" ]; then kill -TERM "$A_PID" 2>/dev/null; wait "$A_PID" 2>/dev/null; fi; it_cleanup' EXIT
    start_server --writers 4 --partition 6h
    B=$BASE
    EQUIV_BASE=$(( ($(now) / 86400 - 3) * 86400 ))
    local out
    out=$(python3 "$EQUIV_PY" workload --seed $EQUIV_SEED --base $EQUIV_BASE --urls "$A" 2>&1) ||
        { fail "workload to A: $out"; return 1; }
    out=$(python3 "$EQUIV_PY" workload --seed $EQUIV_SEED --base $EQUIV_BASE --urls "$B" --shuffle 7 2>&1) ||
        { fail "workload to B: $out"; return 1; }
}

# partitions_at URL — flamedb_partitions of that server's /metrics.
partitions_at() {
    curl -s "$1/metrics" | awk '$1 == "flamedb_partitions" { print $2 }'
}

# stop_a — SIGTERM A, require exit code 0 (as stop_server does for B).
stop_a() {
    local pid=$A_PID rc
    A_PID=""
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 0 ] || fail "server A exited with code $rc after SIGTERM; log: $(tail -3 "$A_LOG" | tr '\n' '|')"
}

test_equiv_layout_answers_do_not_depend_on_layout() {
    equiv_two_servers || return
    # the data is there and the layouts differ: hundreds of series, more partitions on B
    get /api/v1/series 'query={}' from=$((EQUIV_BASE - 2 * 86400)) until=$((EQUIV_BASE + 2 * 86400))
    assert_status "series on B" 200
    assert_ge "B holds a few hundred series" 200 "$(jqb '.series|length')"
    local series_b
    series_b=$(sha1sum <"$BODY_FILE")
    local save=$BASE
    BASE=$A
    get /api/v1/series 'query={}' from=$((EQUIV_BASE - 2 * 86400)) until=$((EQUIV_BASE + 2 * 86400))
    BASE=$save
    assert_eq "A and B list the same series, in the same order (sha1 of the answers)" "$series_b" \
        "$(sha1sum <"$BODY_FILE")"
    assert_eq "A: day partitions" 4 "$(partitions_at "$A")"
    assert_ge "B: 6 h partitions" 12 "$(partitions_at "$B")"
    local out rc
    out=$(python3 "$EQUIV_PY" compare --seed $EQUIV_SEED --n 400 --base $EQUIV_BASE "$A" "$B" 2>&1)
    rc=$?
    assert_contains "compare's summary" "$out" "equiv: 400 queries, 0 differ"
    [ $rc -eq 0 ] || fail "equiv.py compare exited $rc:
$(grep -A3 '^DIFF' <<<"$out" | head -40)"
    # every endpoint family was asked, and most answers were answers (not errors)
    local fam
    for fam in query/json query/levels query/folded query/speedscope query/pprof top compare diff timeline \
        stability variance series labels values render render-diff grafana/SelectMergeStacktraces \
        grafana/SelectMergeProfile grafana/SelectSeries grafana/Series; do
        assert_contains "queries asked of $fam" "$out" "$fam "
    done
    stop_a
}

# The harness sees a difference: one more profile on B, and compare must
# name answers that differ (so a pass above is not a vacuous one).
test_equiv_layout_compare_sees_a_difference() {
    equiv_two_servers || return
    printf 'main;api.handle;api.extra 7\n' >"$IT_TMP/extra.folded"
    ingest_file "service=api&instance=i-1&region=eu&build=v1&rate=100&from=$EQUIV_BASE&until=$((EQUIV_BASE + 10))" \
        "$IT_TMP/extra.folded"
    assert_status "one more profile on B" 200
    local out rc
    out=$(python3 "$EQUIV_PY" compare --seed $EQUIV_SEED --n 200 --base $EQUIV_BASE "$A" "$B" 2>&1)
    rc=$?
    assert_eq "compare exits 1 when answers differ" 1 "$rc"
    assert_contains "a difference is printed with its URL" "$out" "DIFF "
    assert_contains "and its first differing byte" "$out" "first difference at byte"
    local d
    d=$(sed -n 's/^equiv: 200 queries, \([0-9]*\) differ$/\1/p' <<<"$out")
    assert_ge "several answers see the extra profile" 5 "${d:-0}"
    stop_a
}
