# test_cors.sh — CORS for browser clients (flamedb serve --cors-origin):
# nothing by default, preflights answered for the configured origins only,
# every answer to them (errors included) naming the origin, bad origins
# refused at start.  And the checks on browser requests (issue 12): a POST
# or DELETE from a page of another origin is refused, and so is a browser
# request whose Host is not a name of the server (DNS rebinding); clients
# that are no browser are not affected.

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
    # a page from another origin may not write (issue 12): 403, nothing stored
    ingest 'service=off' $'a;b 1\n' -H "Origin: $CORS_A"
    assert_error "ingest with another Origin, no flag" 403 "origin '$CORS_A' may not send POST" "--cors-origin"
    assert_eq "ingest: no Access-Control-* headers" "" "$(cors_headers)"
    get /api/v1/series from=now-1d
    assert_json "nothing stored" '.series|length' 0
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

# A page on another site can send a form POST or a no-cors fetch without any
# preflight: before issue 12 the profile was stored, or the series deleted.
test_cors_writes_from_other_origins_refused() {
    start_server
    local port=${BASE##*:} o
    put 'service=keep' $'main;a 5\n'
    for o in https://evil.example http://localhost:3000 "http://127.0.0.1:$((port == 65535 ? 1 : port + 1))" null \
        "https://127.0.0.1:$port.evil.example"; do
        ingest 'service=evil' $'main;b 1\n' -H "Origin: $o" -H 'Content-Type: text/plain'
        assert_error "ingest from origin $o" 403 "origin '$o' may not send POST" "--cors-origin"
        post '/ingest?name=evil' --data-binary $'main;b 1\n' -H "Origin: $o"
        assert_error "Pyroscope ingest from origin $o" 403 "may not send POST"
        _curl DELETE "$BASE/api/v1/series?query=keep" -H "Origin: $o"
        assert_error "DELETE from origin $o" 403 "may not send DELETE"
    done
    # no Origin, only Sec-Fetch-Site (a browser that left Origin out)
    _curl DELETE "$BASE/api/v1/series?query=keep" -H 'Sec-Fetch-Site: cross-site'
    assert_error "DELETE with Sec-Fetch-Site: cross-site" 403 "Sec-Fetch-Site: cross-site"
    ingest 'service=evil' $'main;b 1\n' -H 'Sec-Fetch-Site: same-site'
    assert_error "ingest with Sec-Fetch-Site: same-site" 403 "Sec-Fetch-Site: same-site"
    # refused before the body is read: a body over --max-body is not what is said
    ingest 'service=evil' "$(head -c 70000 /dev/zero | tr '\0' a) 1" -H 'Origin: https://evil.example'
    assert_error "a large body from another origin" 403 "may not send POST"
    get /api/v1/series from=now-1d
    assert_json "nothing stored, nothing deleted" '[.series[].labels.service]|join(",")' "keep"

    # the server's own pages (the viewer), curl and agents: as before
    ingest 'service=own' $'main;c 2\n' -H "Origin: http://127.0.0.1:$port" -H 'Sec-Fetch-Site: same-origin'
    assert_status "ingest from the server's own origin" 200
    ingest 'service=own' $'main;c 2\n' -H "Origin: http://localhost:$port" -H "Host: localhost:$port"
    assert_status "ingest from the server's own origin, by the name localhost" 200
    ingest 'service=own' $'main;c 2\n' -H 'Sec-Fetch-Site: same-origin'
    assert_status "ingest with Sec-Fetch-Site: same-origin and no Origin" 200
    ingest 'service=own' $'main;c 2\n'
    assert_status "ingest without Origin (curl, agents)" 200
    # GETs from other origins are answered as before (the browser keeps the
    # answer from the page: no Access-Control-Allow-Origin)
    oget https://evil.example /api/v1/labels from=now-1d
    assert_status "GET from another origin" 200
    _curl DELETE "$BASE/api/v1/series?query=own"
    assert_status "DELETE without Origin" 200
    get /metrics
    assert_eq "403s counted" 7 "$(metric 'flamedb_http_requests_total{route="/api/v1/ingest",code="403"}')"
}

test_cors_listed_origin_may_write() {
    start_server --cors-origin "$CORS_A"
    ingest 'service=ok' $'main;a 1\n' -H "Origin: $CORS_A" -H 'Sec-Fetch-Site: cross-site'
    assert_status "ingest from a --cors-origin" 200
    assert_allowed "ingest from a --cors-origin" "$CORS_A"
    _curl DELETE "$BASE/api/v1/series?query=ok" -H "Origin: $CORS_A"
    assert_status "DELETE from a --cors-origin" 200
    ingest 'service=no' $'main;a 1\n' -H "Origin: $CORS_B"
    assert_error "ingest from another origin" 403 "origin '$CORS_B' may not send POST"
    assert_eq "refusal: no Access-Control-* headers" "" "$(cors_headers)"
}

# DNS rebinding: a page at http://evil.example:PORT whose name then
# resolves to 127.0.0.1 is same-origin with the server; only its Host
# header tells.
# hget PATH [curl args...] — a GET with headers (get url-encodes its args).
hget() {
    local path=$1
    shift
    _curl GET "$BASE$path" "$@"
}

test_cors_host_check_dns_rebinding() {
    start_server --allowed-host flamedb.example.com --allowed-host Other.Example.
    local port=${BASE##*:} h
    put 'service=secret' $'main;a 1\n'
    for h in "evil.example:$port" "evil.example" "127.0.0.1.evil.example:$port" "flamedb.example.com.evil:$port"; do
        hget /api/v1/labels -H "Host: $h" -H 'Sec-Fetch-Site: same-origin' -H 'Sec-Fetch-Mode: cors'
        assert_error "GET with Host $h from a browser" 403 "Host '$h' is not a name of this server" "--allowed-host"
        ingest 'service=rebound' $'main;b 1\n' -H "Host: $h" -H "Origin: http://$h"
        assert_error "same-origin POST with Host $h" 403 "Host '$h'"
        hget / -H "Host: $h" -H 'Sec-Fetch-Site: none' -H 'Sec-Fetch-Mode: navigate'
        assert_error "the viewer's page by Host $h" 403 "--allowed-host"
    done
    # names of the server: IP literals, localhost, --allowed-host, the machine's name
    for h in "127.0.0.1:$port" "localhost:$port" "LOCALHOST" "app.localhost:$port" "[::1]:$port" \
        "flamedb.example.com:$port" "FLAMEDB.example.com." "other.example:$port" "10.1.2.3" "$(hostname):$port"; do
        hget '/api/v1/labels?from=now-1d' -H "Host: $h" -H 'Sec-Fetch-Site: same-origin'
        assert_status "GET with Host $h from a browser" 200
    done
    ingest 'service=named' $'main;c 1\n' -H "Host: flamedb.example.com:$port" \
        -H "Origin: http://flamedb.example.com:$port"
    assert_status "same-origin POST by an --allowed-host name" 200
    ingest 'service=named' $'main;c 1\n' -H "Host: flamedb.example.com" -H "Origin: https://flamedb.example.com"
    assert_status "same-origin POST behind a proxy that ends TLS" 200
    # not a browser (no Origin, no Sec-Fetch-Site): no Host check
    hget '/api/v1/labels?from=now-1d' -H "Host: evil.example:$port"
    assert_status "curl with any Host" 200
    get /api/v1/series from=now-1d
    assert_json "nothing of the refused requests stored" '[.series[].labels.service]|sort|join(",")' "named,secret"
}

test_cors_allowed_host_flag_values() {
    it_tmp
    local h rc
    for h in 'http://x.example' 'x.example:4040' 'x/y' '' 'a b'; do
        timeout 20 "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --allowed-host "$h" --threads 0 \
            >/dev/null 2>"$IT_TMP/err" </dev/null
        rc=$?
        assert_eq "--allowed-host '$h': exit code" 2 "$rc"
        assert_contains "--allowed-host '$h': message" "$(cat "$IT_TMP/err")" "--allowed-host '$h'"
    done
}
