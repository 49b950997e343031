# test_cors.sh — CORS for browser clients (flamedb serve --cors-origin):
# nothing by default, preflights answered for the configured origins only,
# every answer to them (errors included) naming the origin, bad origins
# refused at start.

CORS_A=https://grafana.example.com
CORS_B=http://localhost:3000

# The Access-Control-* header lines of the last answer, lowercased names,
# sorted; empty when there are none.
cors_headers() {
    tr -d '\r' <"$HEADERS_FILE" | grep -i '^access-control-' | sort
}

# oget ORIGIN PATH [name=value ...] — get, with an Origin header.
oget() {
    local origin=$1 path=$2 kv
    shift 2
    local args=(-G -H "Origin: $origin")
    for kv in "$@"; do args+=(--data-urlencode "$kv"); done
    _curl GET "$BASE$path" "${args[@]}"
}

# preflight PATH ORIGIN METHOD [REQUESTED-HEADERS]
preflight() {
    local args=(-H "Origin: $2" -H "Access-Control-Request-Method: $3")
    [ $# -ge 4 ] && args+=(-H "Access-Control-Request-Headers: $4")
    _curl OPTIONS "$BASE$1" "${args[@]}"
}

# assert_allowed desc ORIGIN — the last answer grants ORIGIN.
assert_allowed() {
    assert_eq "$1: Access-Control-Allow-Origin" "$2" "$(header Access-Control-Allow-Origin)"
    assert_eq "$1: Vary" "Origin" "$(header Vary)"
}

test_cors_off_by_default() {
    start_server
    oget "$CORS_A" /healthz
    assert_status "GET with an Origin, no flag" 200
    assert_eq "no Access-Control-* headers without the flag" "" "$(cors_headers)"
    assert_eq "no Vary without the flag" "" "$(header Vary)"
    ingest 'service=off' $'a;b 1\n' -H "Origin: $CORS_A"
    assert_status "ingest with an Origin, no flag" 200
    assert_eq "ingest: no Access-Control-* headers" "" "$(cors_headers)"
    preflight /api/v1/ingest "$CORS_A" POST content-type
    if [ "$STATUS" = 204 ] || [ "${STATUS:0:1}" = 2 ]; then
        fail "preflight without the flag: expected a refusal, got HTTP $STATUS"
    fi
    assert_eq "preflight without the flag: no Access-Control-* headers" "" "$(cors_headers)"
    # OPTIONS that is no preflight: as before the flag existed
    _curl OPTIONS "$BASE/api/v1/query"
    assert_error "OPTIONS without Origin" 405 "OPTIONS"
    assert_eq "OPTIONS without Origin: Allow" "GET" "$(header Allow)"
    assert_eq "OPTIONS without Origin: no Access-Control-* headers" "" "$(cors_headers)"
}

test_cors_preflight() {
    start_server --cors-origin "$CORS_A" --cors-origin "$CORS_B"
    local o
    for o in "$CORS_A" "$CORS_B"; do
        preflight /api/v1/ingest "$o" POST 'content-type, Content-Encoding'
        assert_status "preflight ingest from $o" 204
        assert_allowed "preflight ingest from $o" "$o"
        assert_eq "preflight ingest from $o: methods" "POST" "$(header Access-Control-Allow-Methods)"
        assert_eq "preflight ingest from $o: headers" "Content-Type, Content-Encoding" \
            "$(header Access-Control-Allow-Headers)"
        assert_eq "preflight ingest from $o: max age" "600" "$(header Access-Control-Max-Age)"
        assert_eq "preflight: empty body" "" "$BODY"
    done
    preflight /api/v1/series "$CORS_A" DELETE
    assert_status "preflight DELETE series" 204
    assert_allowed "preflight DELETE series" "$CORS_A"
    assert_eq "series: the route's methods" "GET, DELETE" "$(header Access-Control-Allow-Methods)"
    assert_eq "nothing requested, no Allow-Headers" "" "$(header Access-Control-Allow-Headers)"
    preflight /api/v1/query "$CORS_B" GET 'X-Evil, authorization, x-requested-with'
    assert_status "preflight query" 204
    assert_eq "query: methods" "GET" "$(header Access-Control-Allow-Methods)"
    assert_eq "requested headers limited to the safe list" "Authorization" \
        "$(header Access-Control-Allow-Headers)"
    preflight /api/v1/label/service/values "$CORS_B" GET
    assert_status "preflight label values" 204
    assert_eq "label values: methods" "GET" "$(header Access-Control-Allow-Methods)"

    # origins not configured: 403 naming them, nothing granted
    for o in https://evil.example http://localhost:3001 https://localhost:3000 \
        https://grafana.example.com.evil.example null; do
        preflight /api/v1/ingest "$o" POST content-type
        assert_error "preflight from $o" 403 "origin '$o' is not allowed" "--cors-origin"
        assert_eq "preflight from $o: no Access-Control-* headers" "" "$(cors_headers)"
    done
    # an OPTIONS without Origin is no preflight: as before
    _curl OPTIONS "$BASE/api/v1/query" -H "Access-Control-Request-Method: GET"
    assert_error "OPTIONS without Origin" 405 "OPTIONS"
    assert_eq "OPTIONS without Origin: no Access-Control-* headers" "" "$(cors_headers)"
}

test_cors_actual_requests() {
    start_server --cors-origin "$CORS_A" --cors-origin "$CORS_B"
    ingest 'service=web' $'main;work 7\n' -H "Origin: $CORS_B" -H 'Content-Type: text/plain'
    assert_status "ingest from an allowed origin" 200
    assert_allowed "ingest from $CORS_B" "$CORS_B"
    oget "$CORS_A" /api/v1/labels from=now-1d
    assert_status "GET labels from an allowed origin" 200
    assert_allowed "GET labels from $CORS_A" "$CORS_A"
    oget "$CORS_A" /api/v1/query "query=web{}" from=now-1d format=folded
    assert_status "query" 200
    assert_eq "the ingest from the browser origin was stored" "main;work 7" "$BODY"
    assert_allowed "folded query" "$CORS_A"

    # errors carry the headers too, or the page cannot read why
    oget "$CORS_A" /api/v1/query "query={"
    assert_error "bad selector from an allowed origin" 400 "query"
    assert_allowed "400 from $CORS_A" "$CORS_A"
    ingest 'env=x' $'a 1\n' -H "Origin: $CORS_B"
    assert_error "ingest without service" 400 "service"
    assert_allowed "ingest 400 from $CORS_B" "$CORS_B"
    oget "$CORS_B" /api/v1/nope
    assert_error "unknown endpoint" 404 "/api/v1/nope"
    assert_allowed "404 from $CORS_B" "$CORS_B"
    _curl PUT "$BASE/api/v1/query" -H "Origin: $CORS_B"
    assert_error "PUT on query" 405 "PUT"
    assert_allowed "405 from $CORS_B" "$CORS_B"
    assert_eq "405: Allow exposed to the page" "Allow" "$(header Access-Control-Expose-Headers)"

    # another origin: answered as before, nothing granted
    oget "http://localhost:3001" /api/v1/labels from=now-1d
    assert_status "GET from another origin still answered" 200
    assert_json "same answer" '[.labels[].name]|join(",")' "service,type"
    assert_eq "another origin: no Access-Control-* headers" "" "$(cors_headers)"
    oget "https://evil.example" /api/v1/query "query={"
    assert_error "error for another origin" 400 "query"
    assert_eq "error for another origin: no Access-Control-* headers" "" "$(cors_headers)"
    # no Origin (curl, the agent, the same-origin viewer): nothing granted
    get /api/v1/labels from=now-1d
    assert_status "GET without Origin" 200
    assert_eq "no Origin: no Access-Control-* headers" "" "$(cors_headers)"
    get /
    assert_status "the viewer's page" 200
    assert_contains "the viewer's page is HTML" "$(header Content-Type)" "text/html"
}

test_cors_origin_canonical_form() {
    # the form browsers send: lowercase, default port left out
    start_server --cors-origin 'HTTPS://Grafana.Example.COM:443' --cors-origin 'http://[::1]:8080'
    oget "https://grafana.example.com" /healthz
    assert_status "healthz" 200
    assert_allowed "canonical origin" "https://grafana.example.com"
    oget "http://[::1]:8080" /healthz
    assert_allowed "IPv6 origin" "http://[::1]:8080"
    oget "https://grafana.example.com:8443" /healthz
    assert_eq "another port: no Access-Control-* headers" "" "$(cors_headers)"
}

test_cors_bad_origins() {
    it_tmp
    local o rc err
    while read -r o; do
        # --threads 0 after it: should the origin be accepted, serve stops
        # there at once (with a message not naming --cors-origin)
        timeout 20 "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --cors-origin "$o" --threads 0 \
            >"$IT_TMP/out" 2>"$IT_TMP/err" </dev/null
        rc=$?
        err=$(cat "$IT_TMP/err")
        assert_eq "--cors-origin '$o': exit code" 2 "$rc"
        assert_contains "--cors-origin '$o': message names the flag" "$err" "--cors-origin"
        assert_contains "--cors-origin '$o': message quotes the value" "$err" "'$o'"
    done <<'EOF'
*
ftp://x
http://x/path
http://x/
localhost:3000
http://x:0
http://x:99999
http://user@x
http://
EOF
    timeout 20 "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --cors-origin '*' --threads 0 \
        >/dev/null 2>"$IT_TMP/err" </dev/null
    err=$(cat "$IT_TMP/err")
    assert_contains "'*': says it is refused" "$err" "not accepted"
    assert_contains "'*': says why" "$err" "any web page"
    timeout 20 "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --cors-origin 'http://x/path' --threads 0 \
        >/dev/null 2>"$IT_TMP/err" </dev/null
    assert_contains "a path: says so" "$(cat "$IT_TMP/err")" "path"
}
