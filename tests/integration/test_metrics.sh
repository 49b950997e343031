# test_metrics.sh — GET /metrics (Prometheus text, promtool-clean, exact
# counters) and GET /healthz.

test_healthz() {
    start_server
    get /healthz
    assert_status "healthz" 200
    assert_json "body" '.|tojson' '{"status":"ok"}'
    assert_contains "content type" "$(header Content-Type)" "application/json"
    _curl HEAD "$BASE/healthz" -I
    assert_status "HEAD healthz" 200
}

test_metrics_promtool_clean() {
    command -v promtool >/dev/null || die "promtool is not installed"
    start_server
    it_tmp
    get /metrics
    assert_status "metrics on a fresh server" 200
    local out
    out=$(promtool check metrics <"$BODY_FILE" 2>&1) || fail "promtool check metrics (fresh server): $out"
    ingest 'service=m' $'a;b 2\n'
    query 'm{}'
    get /api/v1/nope
    get /api/v1/ingest
    ingest 'service=m' 'bad line'
    get /metrics
    out=$(promtool check metrics <"$BODY_FILE" 2>&1) || fail "promtool check metrics (after traffic): $out"
    assert_contains "content type" "$(header Content-Type)" "text/plain"
}

test_metrics_required_families() {
    start_server
    ingest 'service=m' $'a 1\n'
    get /metrics
    assert_status "metrics" 200
    local fam
    for fam in 'flamedb_http_requests_total counter' 'flamedb_ingested_samples_total counter' \
        'flamedb_commit_duration_seconds histogram' 'flamedb_database_bytes gauge' 'flamedb_series gauge'; do
        assert_contains "TYPE line" "$BODY" "# TYPE $fam"
    done
}

test_metrics_exact_counters() {
    start_server
    ingest 'service=m1' $'a;b 2\na;c 3\n'
    ingest 'service=m1' $'a;b 10\n'
    ingest 'service=m2&env=x' $'z 100\n'
    ingest 'service=m2&env=x' $'z 1\nz\n'      # 400: line 2
    ingest 'env=x' $'z 1\n'                     # 400: no service
    query 'm1{}'
    query 'm2{}'
    query 'm2{' # 400
    get /api/v1/series
    get /api/v1/nope
    _curl POST "$BASE/api/v1/query"              # 405
    get /metrics
    assert_status "metrics" 200
    assert_eq "ingested samples" 115 "$(metric flamedb_ingested_samples_total)"
    assert_eq "ingest 200s" 3 "$(metric 'flamedb_http_requests_total{route="/api/v1/ingest",code="200"}')"
    assert_eq "ingest 400s" 2 "$(metric 'flamedb_http_requests_total{route="/api/v1/ingest",code="400"}')"
    assert_eq "query 200s" 2 "$(metric 'flamedb_http_requests_total{route="/api/v1/query",code="200"}')"
    assert_eq "query 400s" 1 "$(metric 'flamedb_http_requests_total{route="/api/v1/query",code="400"}')"
    assert_eq "series 200s" 1 "$(metric 'flamedb_http_requests_total{route="/api/v1/series",code="200"}')"
    assert_eq "series" 2 "$(metric flamedb_series)"
    local count inf sum bytes
    count=$(metric flamedb_commit_duration_seconds_count)
    inf=$(metric 'flamedb_commit_duration_seconds_bucket{le="+Inf"}')
    sum=$(metric flamedb_commit_duration_seconds_sum)
    assert_ge "commits" 1 "$count"
    assert_le "commits (group commit never adds)" 3 "$count"
    assert_eq "+Inf bucket = count" "$count" "$inf"
    assert_eq "sum is a number" ok "$(awk -v s="$sum" 'BEGIN { print (s ~ /^[0-9.e+-]+$/ && s + 0 >= 0) ? "ok" : "bad: " s }')"
    assert_eq "buckets cumulative" "" "$(awk -F'[ ]' '/^flamedb_commit_duration_seconds_bucket/ { if ($2 + 0 < prev) print "decreasing at " $1; prev = $2 + 0 }' <<<"$BODY")"
    bytes=$(metric flamedb_database_bytes)
    assert_ge "database bytes" 1 "$bytes"
    # the request for /metrics itself is counted by the next scrape
    get /metrics
    assert_eq "metrics 200s" 1 "$(metric 'flamedb_http_requests_total{route="/metrics",code="200"}')"
}

# --commit-wait never holds a client that pushes one request after the
# other on one connection (a closed loop: flamedb import, a benchmark): its
# next push cannot come before this answer, so a hold would only wait.
test_metrics_commit_wait_spares_one_connection() {
    start_server --commit-wait 300ms
    local i args=() t0=$(($(date +%s) - 3600))
    for i in $(seq 1 20); do
        ((i > 1)) && args+=(--next)
        args+=(-s -o /dev/null -w '%{http_code}:%{num_connects} ' -X POST --data-binary $'a;b 1\n'
            "$BASE/api/v1/ingest?service=cw&instance=i$((i % 3))&from=$((t0 + i * 10))&until=$((t0 + 10 + i * 10))")
    done
    local out
    out=$(curl "${args[@]}")
    assert_eq "20 pushes answered 200 over one connection" "200:1 $(printf '200:0 %.0s' $(seq 2 20))" "$out"
    get /metrics
    assert_eq "no commit held" 0 "$(metric flamedb_commit_waits_total)"
    assert_eq "a commit each" 20 "$(metric flamedb_commit_duration_seconds_count)"
    assert_eq "every push stored" 20 "$(metric flamedb_ingested_samples_total)"
}

# --commit-wait: pushes arriving 20 ms apart share commits (held 300 ms);
# each is still acknowledged only once durable, and all are stored.
test_metrics_commit_wait_groups_pushes() {
    start_server --commit-wait 300ms
    local i pids=() t0=$(($(date +%s) - 3600))
    for i in $(seq 1 30); do
        curl -s -o /dev/null -X POST --data-binary $'a;b 1\n' "$BASE/api/v1/ingest?service=cw&instance=i$((i % 3))&from=$((t0 + i * 10))&until=$((t0 + 10 + i * 10))" &
        pids+=($!)
        sleep 0.02
    done
    wait "${pids[@]}" # not a bare wait: the server is a child too
    get /metrics
    assert_ge "commits held" 1 "$(metric flamedb_commit_waits_total)"
    local commits
    commits=$(metric flamedb_commit_duration_seconds_count)
    assert_le "30 pushes, fewer commits" 20 "$commits"
    assert_eq "every push stored" 30 "$(metric flamedb_ingested_samples_total)"
    query 'cw{}' from=$t0 until=$((t0 + 1000))
    assert_status "query" 200
    assert_json "all 30 samples merged" '.total' 30
}

test_metrics_survive_restart_gauges() {
    start_server
    ingest 'service=g1' $'a 1\n'
    ingest 'service=g2' $'a 1\n'
    restart_server
    get /metrics
    assert_eq "series gauge after restart" 2 "$(metric flamedb_series)"
    assert_eq "counters start over" 0 "$(metric flamedb_ingested_samples_total)"
    assert_ge "database bytes after restart" 1 "$(metric flamedb_database_bytes)"
}

# The storage engine's own gauges: partitions stored, what retention
# dropped, the rollups compaction built, the writer's dictionary memory.
test_metrics_partitions_rollups_retention() {
    local day=86400 t
    t=$(now)
    start_server --retention 0
    # two days a week ago (closed buckets: compaction builds them) and today
    put "service=p&from=$((t - 8 * day))&until=$((t - 8 * day + 10))" $'a;b 1\n'
    put "service=p&from=$((t - 7 * day))&until=$((t - 7 * day + 10))" $'a;c 1\n'
    put "service=p&from=$((t - 5))&until=$t" $'a;d 1\n'
    get /metrics
    local parts
    parts=$(metric flamedb_partitions)
    # the three windows fall in three different days (two when today's began less than 5 s ago)
    assert_ge "partitions" 2 "$parts"
    assert_le "partitions" 3 "$parts"
    assert_ge "dictionary memory" 1 "$(metric flamedb_dictionary_memory_bytes)"
    assert_ge "rollup buckets built for the two old profiles (10 min and 1 h each)" 4 \
        "$(wait_metric flamedb_rollups_built_total 4)"
    restart_server --retention 2d
    local tries=100
    while [ $tries -gt 0 ]; do
        get /metrics
        [ "$(metric flamedb_retention_dropped_partitions_total)" = 2 ] && break
        sleep 0.05
        tries=$((tries - 1))
    done
    assert_eq "partitions dropped by retention" 2 "$(metric flamedb_retention_dropped_partitions_total)"
    assert_eq "partitions left" $((parts - 2)) "$(metric flamedb_partitions)"
}
