# test_hotspots.sh — GET /api/v1/hotspots/metrics: hotspot self shares in
# Prometheus text format, accepted by `promtool check metrics`.

# metric_raw NAME{LABELS} — like lib.sh's metric, without awk's escape
# processing of -v values (label values here hold backslashes).
metric_raw() {
    M="$1" awk '$1 == ENVIRON["M"] { print $2; exit }' <<<"$BODY"
}

test_hotspots_metrics() {
    start_server
    local t=$(( $(now) - 20 ))
    ingest "service=api&env=prod&from=$t&until=$((t + 10))" $'main;work 6\nmain;idle 3\nmain;gc 1\n'
    ingest "service=db&env=prod&x.y=a%22b&from=$t&until=$((t + 10))" $'main;scan 1\nmain;"q\\\\ 3\n'
    ingest "service=old&from=$(( $(now) - 7200 ))&until=$(( $(now) - 7190 ))" $'main;old 5\n'
    get /api/v1/hotspots/metrics 'query={env="prod"}' k=2 range=1m
    assert_status "hotspots" 200
    assert_contains "content type" "$(header Content-Type)" "text/plain"
    assert_contains "help" "$BODY" "# HELP flamedb_hotspot_self_share"
    assert_contains "type" "$BODY" "# TYPE flamedb_hotspot_self_share gauge"
    assert_eq "api work" 0.6 "$(metric 'flamedb_hotspot_self_share{service="api",function="work"}')"
    assert_eq "api idle" 0.3 "$(metric 'flamedb_hotspot_self_share{service="api",function="idle"}')"
    assert_eq "top k=2 per group" "" "$(metric 'flamedb_hotspot_self_share{service="api",function="gc"}')"
    assert_eq "escaped function name" 0.75 "$(metric_raw 'flamedb_hotspot_self_share{service="db",function="\"q\\\\"}')"
    assert_eq "lines" 4 "$(grep -c '^flamedb_hotspot_self_share{' <<<"$BODY")"
    assert_not_contains "outside the range" "$BODY" 'service="old"'
    printf '%s\n' "$BODY" >"$IT_TMP/m.txt"
    promtool check metrics <"$IT_TMP/m.txt" >"$IT_TMP/pt" 2>&1 || fail "promtool: $(cat "$IT_TMP/pt")"
    # group_by two labels; '.' in a label name becomes '_'
    get /api/v1/hotspots/metrics 'query={env="prod"}' k=1 range=5m group_by=service,x.y
    assert_eq "two keys" 0.75 \
        "$(metric_raw 'flamedb_hotspot_self_share{service="db",x_y="a\"b",function="\"q\\\\"}')"
    assert_eq "absent label is empty" 0.6 "$(metric 'flamedb_hotspot_self_share{service="api",x_y="",function="work"}')"
    printf '%s\n' "$BODY" >"$IT_TMP/m2.txt"
    promtool check metrics <"$IT_TMP/m2.txt" >"$IT_TMP/pt" 2>&1 || fail "promtool (group_by): $(cat "$IT_TMP/pt")"
    # the whole range: old is included
    get /api/v1/hotspots/metrics range=3h
    assert_eq "range" 1 "$(metric 'flamedb_hotspot_self_share{service="old",function="old"}')"
    get /api/v1/hotspots/metrics range=nope
    assert_error "bad range" 400 "range"
    get /api/v1/hotspots/metrics 'query={'
    assert_error "bad selector" 400 "query"
}

test_hotspots_empty() {
    start_server
    get /api/v1/hotspots/metrics
    assert_status "empty store" 200
    assert_eq "only the header" 2 "$(wc -l <<<"$BODY")"
    printf '%s\n' "$BODY" >"$IT_TMP/m.txt"
    promtool check metrics <"$IT_TMP/m.txt" >"$IT_TMP/pt" 2>&1 || fail "promtool: $(cat "$IT_TMP/pt")"
}
