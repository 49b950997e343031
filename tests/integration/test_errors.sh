# test_errors.sh — every refusal: status, JSON {"error"}, a message naming
# what is wrong, and nothing stored by a refused ingest.

# Totals of everything stored, as one line, to compare before and after.
snapshot() {
    local t
    get /api/v1/series from=now-1d
    assert_status "snapshot: series" 200
    t=$(jqd '[.series[]|"\(.labels|tojson)=\(.profiles)/\(.samples)"]|sort|join(";")')
    query '{}' from=now-1d format=folded
    assert_status "snapshot: query" 200
    printf '%s\n%s' "$t" "$BODY"
}

test_errors_malformed_line_stores_nothing() {
    start_server
    ingest 'service=m' $'a;b 5\n'
    assert_status "baseline" 200
    local before
    before=$(snapshot)
    assert_eq "baseline snapshot" $'{"service":"m","type":"cpu"}=1/5\na;b 5' "$before"

    local body want
    while IFS='@' read -r body want; do
        ingest 'service=m' "$(printf '%b' "$body")"
        assert_error "malformed body [$body]" 400 "$want"
        ingest 'service=m&fresh=label' "$(printf '%b' "$body")"
        assert_error "malformed body, new series [$body]" 400 "$want"
    done <<'EOF'
a;b 1\nc;d 2\na;b\n@line 3
a;b 1\n\nc;d 0\n@line 3
x 1\ny -4\n@line 2
x abc\n@line 1
x 1.5\n@line 1
x 9007199254740992\n@line 1
 12\n@line 1
a;;b 1\n@line 1
;a 1\n@line 1
a; 1\n@line 1
ok 1\nbad\xff\xfeutf8 1\n@line 2
x 9007199254740991\ny 1\n@line 2
EOF
    ingest 'service=m&format=lines' $'a;b\na;;c\n'
    assert_error "lines format, empty frame" 400 "line 2"
    it_tmp
    printf 'ok 1\na\000b 1\n' >"$IT_TMP/nul.folded"
    ingest_file 'service=m' "$IT_TMP/nul.folded"
    assert_error "NUL byte in a frame" 400 "line 2" "NUL"
    assert_eq "nothing of a refused request stored" "$before" "$(snapshot)"
    get /api/v1/label/fresh/values from=now-1d
    assert_json "no series created by refused requests" '.values|length' 0
    get /metrics
    assert_eq "refused samples not counted" 5 "$(metric flamedb_ingested_samples_total)"
}

test_errors_missing_service() {
    start_server
    ingest 'env=prod' $'a 1\n'
    assert_error "no service" 400 "service"
    ingest '' $'a 1\n'
    assert_error "no params" 400 "service"
    ingest 'service=' $'a 1\n'
    assert_error "empty service" 400 "service"
    get /api/v1/series from=now-1d
    assert_json "nothing stored" '.series|length' 0
}

test_errors_bad_labels() {
    start_server
    ingest 'service=s&bad-name=x' $'a 1\n'
    assert_error "bad label name" 400 "bad-name"
    ingest 'service=s&9lives=x' $'a 1\n'
    assert_error "label starting with a digit" 400 "9lives"
    ingest 'service=s&env=' $'a 1\n'
    assert_error "empty label value" 400 "env"
    ingest 'service=s&env' $'a 1\n'
    assert_error "label without value" 400 "env"
    ingest 'service=s&env=a&env=b' $'a 1\n'
    assert_error "label given twice" 400 "env"
    ingest "service=s&$(printf 'n%.0s' $(seq 1 129))=x" $'a 1\n'
    assert_error "label name over 128 bytes" 400 "label name"
    ingest "service=s&v=$(head -c 1025 /dev/zero | tr '\0' v)" $'a 1\n'
    assert_error "label value over 1024 bytes" 400 "'v'"
    local qs='service=s&type=cpu' i
    for i in $(seq 1 31); do qs+="&l$i=v"; done
    ingest "$qs" $'a 1\n'
    assert_error "33 labels" 400 "32"
    qs='service=s'
    for i in $(seq 1 40); do qs+="&l$i=v"; done
    ingest "$qs" $'a 1\n'
    assert_error "41 labels" 400 "32"
    get /api/v1/series from=now-1d
    assert_json "nothing stored" '.series|length' 0
}

test_errors_ingest_params() {
    start_server
    ingest 'service=s&format=protobuf' $'a 1\n'
    assert_error "unknown format" 400 "format" "folded" "lines"
    ingest 'service=s&rate=fast' $'a 1\n'
    assert_error "bad rate" 400 "rate"
    ingest 'service=s&rate=0' $'a 1\n'
    assert_error "zero rate" 400 "rate"
    ingest 'service=s&rate=-5' $'a 1\n'
    assert_error "negative rate" 400 "rate"
    ingest 'service=s&unit=no%20spaces' $'a 1\n'
    assert_error "bad unit" 400 "unit"
    ingest 'service=s&from=yesterday' $'a 1\n'
    assert_error "bad from" 400 "from"
    ingest 'service=s&until=2026-13-45T99:00:00Z' $'a 1\n'
    assert_error "bad until" 400 "until"
    ingest 'service=s&from=now&until=now-1m' $'a 1\n'
    assert_error "from after until" 400 "from" "until"
    local t=$(( $(now) - 100 ))
    ingest "service=s&from=$t&until=$t" $'a 1\n'
    assert_error "from == until" 400 "from"
    get /api/v1/series from=now-1d
    assert_json "nothing stored" '.series|length' 0
}

test_errors_frame_length() {
    start_server
    local f4096 f4097
    f4096=$(head -c 4096 /dev/zero | tr '\0' f)
    f4097=${f4096}f
    ingest 'service=fl' "main;$f4097 1"
    assert_error "frame of 4097 bytes" 400 "line 1" "4096"
    ingest 'service=fl' "main;$f4096 2"
    assert_status "frame of 4096 bytes" 200
    query 'fl{}' format=folded
    assert_eq "4096-byte frame kept whole" "main;$f4096 2" "$BODY"
}

test_errors_body_limits() {
    start_server --max-body 1k
    it_tmp
    local line big
    big=$(head -c 2000 /dev/zero | tr '\0' a)
    ingest 'service=mb' "$big 1"
    assert_error "body over --max-body" 413 "1024"
    ingest 'service=mb' "$big 1" -H 'Transfer-Encoding: chunked'
    assert_error "chunked body over --max-body" 413
    # decompresses to 200 kB: a small gzip bomb
    head -c 200000 /dev/zero | tr '\0' '\n' | gzip -9 -c >"$IT_TMP/bomb.gz"
    assert_le "bomb is small" 1024 "$(stat -c %s "$IT_TMP/bomb.gz")"
    ingest_file 'service=mb' "$IT_TMP/bomb.gz" -H 'Content-Encoding: gzip'
    assert_error "gzip body decompressing beyond --max-body" 413
    # and a real folded body that grows past the limit
    seq -f 'main;function_number_%g 1' 1 100 | gzip -c >"$IT_TMP/folded.gz"
    ingest_file 'service=mb' "$IT_TMP/folded.gz" -H 'Content-Encoding: gzip'
    assert_error "gzip folded beyond --max-body" 413
    # just under the limit is fine, plain and gzip
    line=$(head -c 1000 /dev/zero | tr '\0' b)
    ingest 'service=mb' "$line 3"
    assert_status "1005 bytes" 200
    printf '%s 4\n' "$line" | gzip -c >"$IT_TMP/ok.gz"
    ingest_file 'service=mb' "$IT_TMP/ok.gz" -H 'Content-Encoding: gzip'
    assert_status "gzip within limit" 200
    query 'mb{}'
    assert_json "only the accepted bodies stored" '"\(.total) \(.profiles)"' '7 2'
    # the server still works after refusing bodies
    get /healthz
    assert_status "healthz after 413s" 200
}

test_errors_bad_gzip() {
    start_server
    ingest 'service=gz' 'this is not gzip' -H 'Content-Encoding: gzip'
    assert_error "garbage gzip" 400 "gzip"
    it_tmp
    printf 'a;b 5\nc;d 6\n' | gzip -c | head -c 20 >"$IT_TMP/trunc.gz"
    ingest_file 'service=gz' "$IT_TMP/trunc.gz" -H 'Content-Encoding: gzip'
    assert_error "truncated gzip" 400 "gzip"
    get /api/v1/series from=now-1d
    assert_json "nothing stored" '.series|length' 0
}

test_errors_methods_and_paths() {
    start_server
    get /api/v1/ingest
    assert_error "GET on ingest" 405 "GET"
    assert_contains "Allow on ingest" "$(header Allow)" "POST"
    post /api/v1/query --data-binary ''
    assert_error "POST on query" 405 "POST"
    assert_contains "Allow on query" "$(header Allow)" "GET"
    post /api/v1/series --data-binary ''
    assert_error "POST on series" 405
    post /api/v1/labels --data-binary ''
    assert_error "POST on labels" 405
    _curl PUT "$BASE/api/v1/ingest?service=x" --data-binary 'a 1'
    assert_error "PUT on ingest" 405
    _curl DELETE "$BASE/api/v1/query"
    assert_error "DELETE on query" 405
    get /ingest
    assert_error "GET on /ingest" 405
    get /api/v1/nope
    assert_error "unknown API path" 404 "/api/v1/nope"
    get /api/v2/query
    assert_error "unknown API version" 404
    post /api/v1/nope --data-binary 'x'
    assert_error "POST to unknown API path" 404
    get /api/v1/series from=now-1d
    assert_json "nothing stored" '.series|length' 0
}

test_errors_query_params() {
    start_server
    local path
    for path in /api/v1/query /api/v1/labels /api/v1/series /api/v1/label/service/values; do
        get "$path" 'from=last tuesday'
        assert_error "$path bad from" 400 "from"
        get "$path" 'until=12:00'
        assert_error "$path bad until" 400 "until"
        get "$path" from=now until=now-1h
        assert_error "$path from after until" 400 "from" "until"
        get "$path" from=1700000000 until=1700000000
        assert_error "$path from == until" 400 "from"
        get "$path" 'query={service=x}'
        assert_error "$path bad selector" 400 "query" "column 10"
    done
    get /api/v1/query max_nodes=-1
    assert_error "negative max_nodes" 400 "max_nodes"
    get /api/v1/query max_nodes=ten
    assert_error "max_nodes not a number" 400 "max_nodes"
    get /api/v1/query max_nodes=99999999999999999999
    assert_error "max_nodes overflow" 400 "max_nodes"
    get /api/v1/query format=xml
    assert_error "unknown format" 400 "format" "json" "folded"
    query '{service="x"'
    assert_error "unterminated selector" 400 "query" "column"
    query '{service="x}'
    assert_error "unterminated string" 400 "query" "column 10"
    query '{a=~"("}'
    assert_error "bad regex" 400 "query" "column"
    query '{1a="x"}'
    assert_error "bad label name in selector" 400 "query" "column 2"
    query '{a=="x"}'
    assert_error "bad operator" 400 "query" "column"
    query 'svc{a="x"} trailing'
    assert_error "trailing text" 400 "query" "column"
}

test_errors_are_json() {
    start_server
    get /api/v1/nope
    assert_contains "content type of an error" "$(header Content-Type)" "application/json"
    assert_json "only an error member" 'keys|join(",")' 'error'
    # user input with invalid UTF-8 quoted in a message stays valid JSON
    query "$(printf '{a="\xff"')"
    assert_status "invalid UTF-8 in the selector" 400
    jq -e '.error|strings' <<<"$BODY" >/dev/null || fail "error body with invalid UTF-8 input is not valid JSON: $BODY"
}

# Regexes that glibc's regcomp paid for in gigabytes and seconds (issue 12)
# are refused with a 400 naming the pattern, or run at once (RE2).
test_errors_costly_regexes() {
    start_server
    put "service=rx&instance=i-1" $'main;a 1\n'
    get /api/v1/query 'query={service=~"a+++++++++++++++++++++"}'
    assert_error "nested repetition" 400 "'query'" "invalid regular expression" "bad repetition operator"
    get /api/v1/series 'query={service=~"((x{1,100}){1,100}){1,100}"}'
    assert_error "repetition beyond 1000" 400 "invalid repetition size"
    get /api/v1/top "query={service=~\"$(printf 'a%.0s' $(seq 1 1100))\"}"
    assert_error "a pattern over 1024 bytes" 400 "at most 1024"
    get /api/v1/query 'query={service=~"(.*){1,600}", instance=~"i-\\d+"}'
    assert_status "what RE2 runs in linear time" 200
    assert_json "and matches" '.total' '1'
}

# Totals past 2^63 (1,025 profiles of 2^53 - 1 ns) answered 422 with what to
# do, not a negative number (issue 12).
test_errors_totals_past_2_63() {
    start_server
    local t=$(( $(now) - 1800 )) i
    for i in $(seq 0 1024); do
        printf 'main;a 9007199254740991\n' | curl -sf -o /dev/null --data-binary @- \
            "$BASE/api/v1/ingest?service=big&unit=nanoseconds&from=$((t + i))&until=$((t + i + 1))" ||
            fail "push $i"
    done
    query 'big{}' "from=$t" "until=$((t + 1100))"
    assert_error "1025 x (2^53 - 1)" 422 "2^63" "narrow the range"
    query 'big{}' "from=$t" "until=$((t + 1000))"
    assert_status "1000 of them fit" 200
    assert_json "exact" '.total' "$((9007199254740991 * 1000))"
    # the timeline's step sums and the listing's series totals are checked too
    get /api/v1/timeline 'query=big{}' "from=$t" "until=$((t + 1100))" step=2000
    assert_error "timeline: one step of 1025" 422 "2^63" "narrow the range"
    get /api/v1/timeline 'query=big{}' "from=$t" "until=$((t + 1100))" step=100
    assert_status "timeline: steps of 100 fit" 200
    assert_json "timeline: exact (100 pushes a step)" '.points[0][1]' "$((9007199254740991 * 100))"
    get /api/v1/series 'query=big{}' "from=$t" "until=$((t + 1100))"
    assert_error "series listing: total of 1025" 422 "2^63" "narrow the range"
    get /api/v1/series 'query=big{}' "from=$t" "until=$((t + 1000))"
    assert_status "series listing: 1000 fit" 200
    assert_json "series listing: exact" '.series[0].total' "$((9007199254740991 * 1000))"
}

# group_by is bounded before any merge (issue 12, point 6): more groups than
# --max-groups is a 400 naming group_by, the count and the flag, on every
# endpoint that groups.
test_errors_group_by_bounded() {
    start_server --max-groups 3
    local t=$(( $(now) - 600 )) i ep
    for i in 1 2 3 4; do
        ingest "service=g&instance=i$i&from=$t&until=$((t + 10))" $'main;work 2\n'
        assert_status "push $i" 200
    done
    for ep in query:group_by top:group_by timeline:group_by stability:group_by variance:by; do
        get "/api/v1/${ep%%:*}" 'query=g{}' "from=$t" "until=$((t + 60))" "${ep#*:}=instance"
        assert_error "$ep=instance" 400 "'${ep#*:}'" "4 groups" "--max-groups"
        get "/api/v1/${ep%%:*}" 'query=g{}' "from=$t" "until=$((t + 60))" "${ep#*:}=service"
        assert_status "$ep=service (1 group)" 200
    done
    get /api/v1/hotspots/metrics 'query=g{}' range=1h group_by=instance
    assert_error "hotspots group_by=instance" 400 "'group_by'" "--max-groups"
    get /api/v1/hotspots/metrics 'query=g{}' range=1h
    assert_status "hotspots by service (1 group)" 200
}

# 414 and 431 as JSON naming the limit (issue 12, point 9), not
# libmicrohttpd's HTML page; the server goes on answering.
test_errors_request_head_limits() {
    start_server
    local long
    long=$(head -c 12000 /dev/zero | tr '\0' a)
    _curl GET "$BASE/api/v1/labels?x=$long"
    assert_error "a 12 kB request target" 414 "12017 bytes" "limit of 8192"
    assert_contains "414: content type" "$(header Content-Type)" "application/json"
    _curl GET "$BASE/api/v1/query?query=$(head -c 8000 /dev/zero | tr '\0' a)"
    assert_status "an 8 kB target is within the limit (a service name, no data)" 200
    local qs i
    qs=$(for i in $(seq 1 600); do printf 'p%d=v&' "$i"; done)
    _curl GET "$BASE/api/v1/labels?${qs%&}"
    assert_error "600 parameters" 414 "600 parameters" "limit of 256"
    # a flood of parameters: before, libmicrohttpd closed the connection with no answer
    _curl GET "$BASE/api/v1/labels?$(head -c 8000 /dev/zero | tr '\0' '&')"
    assert_error "8000 empty parameters" 414 "parameters" "limit of 256"
    # nothing of a cut query string is acted on
    _curl DELETE "$BASE/api/v1/series?query=x&${qs%&}"
    assert_error "a DELETE with 601 parameters" 414 "601 parameters"
    _curl GET "$BASE/healthz" -H "X-Big: $(head -c 12000 /dev/zero | tr '\0' b)"
    assert_error "12 kB of header fields" 431 "limit of 8192"
    assert_contains "431: content type" "$(header Content-Type)" "application/json"
    _curl GET "$BASE/healthz" -H "X-Big: $(head -c 7900 /dev/zero | tr '\0' b)"
    assert_status "7.9 kB of header fields" 200
    get /healthz
    assert_status "healthz after the refusals" 200
    get /metrics
    assert_eq "414s counted" 3 "$(metric 'flamedb_http_requests_total{route="/api/v1/labels",code="414"}')"
    assert_eq "431s counted" 1 "$(metric 'flamedb_http_requests_total{route="/healthz",code="431"}')"
}

# --query-timeout (issue 12, point 6): a read that runs past it answers 503
# naming the flag, never a partial answer.  A timeline of 95,000 steps over
# three series is 285,000 scans: far past 1 ms on any machine.
test_errors_query_timeout() {
    start_server --query-timeout 1ms
    local t=$(( $(now) - 1800 )) i
    for i in 1 2 3; do
        ingest "service=slow&instance=i$i&from=$t&until=$((t + 10))" $'main;work 2\n'
        assert_status "push $i" 200
    done
    get /api/v1/timeline 'query=slow{}' "from=$((t - 950000))" "until=$((t + 10))" step=10s
    assert_error "a long timeline" 503 "--query-timeout"
    restart_server --query-timeout 0
    get /api/v1/timeline 'query=slow{}' "from=$((t - 950000))" "until=$((t + 10))" step=10s
    assert_status "the same without the limit (default 30s)" 200
    assert_json "complete" '[.points[][1]] | add' 6
}
