# test_metrics_tenant.sh — /metrics per tenant (issue 12, point 2: "every
# ... metric is scoped to its tenant; no request can read or count another
# tenant's data"), server/metrics.c.
#
# * --metrics-auth: a token of tenant T (read or admin) sees T's labelled
#   series only, each figure equal to what T pushed, queried, was refused
#   and registered, and never the other tenant's name or figures nor a
#   server-wide sum; the operator (an admin token of "*", no X-Scope-OrgID)
#   sees the server-wide figures and every tenant's, the server-wide ones
#   the sum of the tenants'.
# * Without --metrics-auth /metrics is open and shows no tenant at all, the
#   same metric names and values as a server without --auth given the same
#   traffic.
# * SIGHUP rebuilds the tenants' table keeping the counts of those that stay;
#   tenants met through a "*" token are counted too.

M_A=mt-tok-a-write-read
M_A_READ=mt-tok-a-read
M_B=mt-tok-b-write-read
M_OP=mt-tok-operator
M_ANY_W=mt-tok-any-write
M_ANY_R=mt-tok-any-read

# m_tokens FILE [TENANT-OF-B]: tenants a and b (or another name for b's
# tokens), the operator's "*" admin token, "*" write and read tokens.
m_tokens() {
    local b=${2:-b}
    {
        m_line a write,read "$M_A"
        m_line a read "$M_A_READ"
        m_line "$b" write,read "$M_B"
        m_line '*' admin "$M_OP"
        m_line '*' write "$M_ANY_W"
        m_line '*' read "$M_ANY_R"
    } >"$1"
}

m_line() { printf '%s %s sha256:%s\n' "$1" "$2" "$(printf %s "$3" | sha256sum | cut -d' ' -f1)"; }

# mreq METHOD TOKEN PATH [curl args...] — with a Bearer token ("" for none)
# and $ORG as X-Scope-OrgID when set.
mreq() {
    local method=$1 token=$2 path=$3
    shift 3
    local args=()
    [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
    [ -n "${ORG:-}" ] && args+=(-H "X-Scope-OrgID: $ORG")
    _curl "$method" "$BASE$path" "${args[@]}" "$@"
}

# mpush TOKEN QS BODY — a push that must succeed.
mpush() {
    mreq POST "$1" "/api/v1/ingest?$2" --data-binary "$3"
    assert_status "push $2" 200
}

# scrape TOKEN — GET /metrics into BODY.
scrape() {
    mreq GET "$1" /metrics
    assert_status "/metrics (token ${1:0:10})" 200
}

# The sample lines (not comments) of the last answer.
samples() { grep -v '^#' <<<"$BODY"; }

# Two tenants' traffic, different in every figure: a pushes 2 profiles of
# 12 samples (2 series) and queries once; b pushes 3 profiles of 111
# samples (1 series), one refused push, 2 queries, and registers 1 agent
# to a's 2.
T0=""
m_traffic() {
    T0=$(($(now) - 600))
    A_BODY1=$'main;a 2\nmain;b 3\n' A_BODY2=$'main;c 7\n'
    B_BODY=$'x;y 37\n'
    mpush "$M_A" "service=sa&from=$T0&until=$((T0 + 10))" "$A_BODY1"
    mpush "$M_A" "service=sa2&from=$T0&until=$((T0 + 10))" "$A_BODY2"
    local i
    for i in 1 2 3; do mpush "$M_B" "service=sb&from=$((T0 + i * 20))&until=$((T0 + i * 20 + 10))" "$B_BODY"; done
    mreq POST "$M_B" "/api/v1/ingest?service=sb" --data-binary $'x;y 1\nbad\n'
    assert_status "b's bad push" 400
    mreq GET "$M_A" "/api/v1/query?query=sa%7B%7D&from=$((T0 - 1))&until=$((T0 + 100))"
    assert_json "a's query" .total 5
    for i in 1 2; do
        mreq GET "$M_B" "/api/v1/query?query=sb%7B%7D&from=$((T0 - 1))&until=$((T0 + 100))"
        assert_json "b's query" .total 111
    done
    for i in x y; do
        mreq POST "$M_A" /api/v1/agents/heartbeat --data-binary "{\"id\":\"agent-$i\"}"
        assert_status "a's agent $i" 200
    done
    mreq POST "$M_B" /api/v1/agents/heartbeat --data-binary '{"id":"agent-x"}'
    assert_status "b's agent" 200
}

# check_tenant NAME SAMPLES PROFILES BYTES SERIES INGEST200 INGEST400 QUERY200 AGENTS
check_tenant() {
    local n=$1
    assert_eq "$n: samples" "$2" "$(metric "flamedb_ingested_samples_total{tenant=\"$n\"}")"
    assert_eq "$n: profiles" "$3" "$(metric "flamedb_ingested_profiles_total{tenant=\"$n\"}")"
    assert_eq "$n: bytes" "$4" "$(metric "flamedb_ingested_bytes_total{tenant=\"$n\"}")"
    assert_eq "$n: series" "$5" "$(metric "flamedb_series{tenant=\"$n\"}")"
    assert_eq "$n: ingest 200s" "$6" "$(metric "flamedb_http_requests_total{tenant=\"$n\",route=\"/api/v1/ingest\",code=\"200\"}")"
    assert_eq "$n: ingest 400s" "$7" "$(metric "flamedb_http_requests_total{tenant=\"$n\",route=\"/api/v1/ingest\",code=\"400\"}")"
    assert_eq "$n: query 200s" "$8" "$(metric "flamedb_http_requests_total{tenant=\"$n\",route=\"/api/v1/query\",code=\"200\"}")"
    assert_eq "$n: agents" "$9" "$(metric "flamedb_agents{tenant=\"$n\"}")"
    assert_eq "$n: rate-limited" 0 "$(metric "flamedb_ingest_rate_limited_total{tenant=\"$n\"}")"
    assert_eq "$n: stopped" 0 "$(metric "flamedb_queries_stopped_total{tenant=\"$n\",reason=\"timeout\"}")"
}

# Every sample line of the last answer is tenant NAME's; the other tenant's
# name appears nowhere.
only_tenant() {
    local n=$1 other=$2 stray
    stray=$(samples | grep -v "{tenant=\"$n\"[,}]" | head -3)
    assert_eq "$n's /metrics: only its own labelled series" "" "$stray"
    assert_not_contains "$n's /metrics: nothing of $other" "$BODY" "\"$other\""
    assert_not_contains "$n's /metrics: no server-wide figure" "$BODY" "flamedb_commit_duration_seconds"
}

test_metrics_tenant_each_sees_its_own() {
    it_tmp
    m_tokens "$IT_TMP/tokens"
    start_server --auth "$IT_TMP/tokens" --metrics-auth
    m_traffic
    local a_bytes=$((${#A_BODY1} + ${#A_BODY2})) b_bytes=$((3 * ${#B_BODY}))
    scrape "$M_A_READ" # a read token: tenant a
    check_tenant a 12 2 "$a_bytes" 2 2 "" 1 2
    only_tenant a b
    command -v promtool >/dev/null && { promtool check metrics <"$BODY_FILE" >/dev/null 2>&1 ||
        fail "promtool check metrics (a's view): $(promtool check metrics <"$BODY_FILE" 2>&1 | head -3)"; }
    scrape "$M_B"
    check_tenant b 111 3 "$b_bytes" 1 3 1 2 1
    only_tenant b a
    ORG=a scrape "$M_OP" # the operator acting for a: a's view
    only_tenant a b
    ORG=b scrape "$M_ANY_R"
    only_tenant b a

    # the operator: the server-wide figures, each the sum of the tenants'
    scrape "$M_OP"
    check_tenant a 12 2 "$a_bytes" 2 2 "" 1 2
    check_tenant b 111 3 "$b_bytes" 1 3 1 2 1
    assert_eq "server-wide samples = a + b" 123 "$(metric flamedb_ingested_samples_total)"
    assert_eq "server-wide profiles = a + b" 5 "$(metric flamedb_ingested_profiles_total)"
    assert_eq "server-wide bytes = a + b" $((a_bytes + b_bytes)) "$(metric flamedb_ingested_bytes_total)"
    assert_eq "server-wide series = a + b" 3 "$(metric flamedb_series)"
    assert_eq "server-wide ingest 200s = a + b" 5 \
        "$(metric 'flamedb_http_requests_total{route="/api/v1/ingest",code="200"}')"
    assert_contains "server-wide figures" "$BODY" "flamedb_commit_duration_seconds_count"
    if command -v promtool >/dev/null; then
        promtool check metrics <"$BODY_FILE" >/dev/null 2>&1 ||
            fail "promtool check metrics (operator): $(promtool check metrics <"$BODY_FILE" 2>&1 | head -3)"
    fi
    # a family's samples stay together: one TYPE line each
    assert_eq "one TYPE line per family" "" "$(grep '^# TYPE' <<<"$BODY" | sort | uniq -d)"

    # who may not
    mreq GET "" /metrics
    assert_error "no token" 401 "needs a token with the 'read' or 'admin' scope"
    mreq GET "$M_ANY_W" /metrics
    assert_error "a write-only token" 403 "needs the 'read' or 'admin' scope"
    mreq GET "$M_ANY_R" /metrics
    assert_error "a read token of every tenant without X-Scope-OrgID" 400 "X-Scope-OrgID is required"
    ORG=b mreq GET "$M_A_READ" /metrics
    assert_error "a's token asking for b" 403 "not for tenant 'b'"
}

# Refusals per tenant: a's 429 (--ingest-rate) and a's query stopped past
# --max-pairs are a's; b has none.
test_metrics_tenant_refusals() {
    it_tmp
    m_tokens "$IT_TMP/tokens"
    start_server --auth "$IT_TMP/tokens" --metrics-auth --ingest-rate 10 --ingest-burst 2k --max-pairs 2
    local t big
    t=$(($(now) - 600))
    big=$(printf 'main;f%04d 1\n' $(seq 1 150)) # 1950 bytes: the second one waits (3 min)
    mpush "$M_A" "service=r&from=$t&until=$((t + 10))" "$big"
    mreq POST "$M_A" "/api/v1/ingest?service=r&from=$t&until=$((t + 10))" --data-binary "$big"
    assert_status "a over its rate" 429
    mpush "$M_B" "service=r&from=$t&until=$((t + 10))" $'main;x 1\n'
    mreq GET "$M_A" "/api/v1/query?query=r%7B%7D&from=$((t - 1))&until=$((t + 100))"
    assert_status "a's query past --max-pairs" 422
    mreq GET "$M_B" "/api/v1/query?query=r%7B%7D&from=$((t - 1))&until=$((t + 100))"
    assert_status "b's query of 1 pair" 200
    scrape "$M_A"
    assert_eq "a: rate-limited" 1 "$(metric 'flamedb_ingest_rate_limited_total{tenant="a"}')"
    assert_eq "a: 429 by route" 1 "$(metric 'flamedb_http_requests_total{tenant="a",route="/api/v1/ingest",code="429"}')"
    assert_eq "a: stopped past --max-pairs" 1 "$(metric 'flamedb_queries_stopped_total{tenant="a",reason="max_pairs"}')"
    assert_eq "a: query 422s" 1 "$(metric 'flamedb_http_requests_total{tenant="a",route="/api/v1/query",code="422"}')"
    only_tenant a b
    scrape "$M_B"
    assert_eq "b: rate-limited" 0 "$(metric 'flamedb_ingest_rate_limited_total{tenant="b"}')"
    assert_eq "b: stopped" 0 "$(metric 'flamedb_queries_stopped_total{tenant="b",reason="max_pairs"}')"
    scrape "$M_OP"
    assert_eq "server-wide rate-limited" 1 "$(metric flamedb_ingest_rate_limited_total)"
    assert_eq "server-wide stopped" 1 "$(metric 'flamedb_queries_stopped_total{reason="max_pairs"}')"
}

# The figures of /metrics that the same requests make the same whoever
# sends them: names and values, without the timings, sizes, background work
# (compaction) and gauges of the moment; and every sample's name alone.
stable_figures() {
    samples | grep -Ev '^flamedb_(commit_duration_seconds|commit_wait|database_bytes|dictionary_memory|catalog_memory|call_tree_nodes|http_connections|partitions|rollups_built|retention|ingest_queue_bytes|http_requests_total\{route="/metrics")' | sort
}
sample_names() { samples | awk '{ print $1 }'; }

# Without --metrics-auth /metrics is open and server-wide: no tenant's name
# or label, with or without a token; and it is what a server without
# --auth answers for the same traffic (pushed there without tokens).
test_metrics_tenant_open_shows_no_tenant() {
    it_tmp
    m_tokens "$IT_TMP/tokens"
    start_server --auth "$IT_TMP/tokens"
    m_traffic
    get /metrics
    assert_status "/metrics open" 200
    assert_not_contains "no tenant label" "$BODY" "tenant="
    assert_not_contains "no tenant a" "$BODY" '"a"'
    assert_not_contains "no tenant b" "$BODY" '"b"'
    assert_not_contains "no agents family (per tenant only)" "$BODY" "flamedb_agents"
    assert_eq "server-wide samples" 123 "$(metric flamedb_ingested_samples_total)"
    local with_auth with_auth_names
    with_auth=$(stable_figures)
    with_auth_names=$(sample_names)
    scrape "$M_A" # a token changes nothing here
    assert_not_contains "a token: still no tenant label" "$BODY" "tenant="
    stop_server

    # the same traffic to a server without --auth
    start_server
    M_A="" M_B="" m_traffic
    get /metrics
    assert_status "/metrics without --auth" 200
    assert_not_contains "no --auth: no tenant label" "$BODY" "tenant="
    local without
    without=$(stable_figures)
    assert_eq "values as without --auth" "$without" "$with_auth"
    assert_eq "every sample's name as without --auth" "$(sample_names)" "$with_auth_names"
    assert_ge "figures compared" 10 "$(wc -l <<<"$without")"
}

# SIGHUP: the file now names a, c (b's token is c's): a's counts stay, b is
# gone, c starts at zero; a tenant met through a "*" token is counted and
# stays while the file has one.
test_metrics_tenant_reload_keeps_counts() {
    it_tmp
    m_tokens "$IT_TMP/tokens"
    start_server --auth "$IT_TMP/tokens" --metrics-auth
    m_traffic
    ORG=zz mpush "$M_ANY_W" "service=z" $'q 4\n'
    scrape "$M_OP"
    assert_eq "zz (through \"*\"): samples" 4 "$(metric 'flamedb_ingested_samples_total{tenant="zz"}')"
    assert_eq "zz: series" 1 "$(metric 'flamedb_series{tenant="zz"}')"
    m_tokens "$IT_TMP/tokens" c
    kill -HUP "$PID"
    local tries=200
    while ! grep -q "SIGHUP: reloaded" "$LOG" && [ $tries -gt 0 ]; do sleep 0.05; tries=$((tries - 1)); done
    scrape "$M_OP"
    assert_eq "a's samples kept" 12 "$(metric 'flamedb_ingested_samples_total{tenant="a"}')"
    assert_eq "a's ingest 200s kept" 2 "$(metric 'flamedb_http_requests_total{tenant="a",route="/api/v1/ingest",code="200"}')"
    assert_eq "zz kept" 4 "$(metric 'flamedb_ingested_samples_total{tenant="zz"}')"
    assert_not_contains "b is gone" "$BODY" 'tenant="b"'
    assert_eq "c from zero" 0 "$(metric 'flamedb_ingested_samples_total{tenant="c"}')"
    assert_eq "server-wide samples kept" 127 "$(metric flamedb_ingested_samples_total)"
    mpush "$M_B" "service=sc" $'k 9\n'
    scrape "$M_B"
    assert_eq "c counts" 9 "$(metric 'flamedb_ingested_samples_total{tenant="c"}')"
    only_tenant c a
}

# The tenant "default": its series are those without a tenant label, data
# pushed before --auth included; its figures are labelled "default".
test_metrics_tenant_default() {
    it_tmp
    start_server
    ingest "service=old" $'o 1\n'
    assert_status "a push before --auth" 200
    stop_server
    local tokens="$IT_TMP/tokens"
    { m_line default write,read "$M_B"; m_line a write,read "$M_A"; } >"$tokens"
    launch_server --auth "$tokens" --metrics-auth
    mpush "$M_B" "service=d1" $'d 2\n'
    mpush "$M_B" "service=d2" $'d 3\n'
    mpush "$M_A" "service=d1" $'d 40\n'
    scrape "$M_B"
    assert_eq "default: its series, the one from before --auth too" 3 "$(metric 'flamedb_series{tenant="default"}')"
    assert_eq "default: samples" 5 "$(metric 'flamedb_ingested_samples_total{tenant="default"}')"
    only_tenant default a
    scrape "$M_A"
    assert_eq "a: its one series" 1 "$(metric 'flamedb_series{tenant="a"}')"
    assert_eq "a: samples" 40 "$(metric 'flamedb_ingested_samples_total{tenant="a"}')"
    only_tenant a default
}
