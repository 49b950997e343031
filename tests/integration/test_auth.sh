# test_auth.sh — authentication and tenants (issue 12, points 1 and 2):
# `flamedb serve --auth FILE`.
#
# * Every endpoint of the server's routing table (server/http.c, read from
#   the source: a new endpoint is tried as soon as it is added there, and
#   the route enum must be covered by the table) answers 401 with JSON and
#   WWW-Authenticate without a token, 403 with a token lacking its scope,
#   and lets a token with the scope through; open routes stay open.
# * Bearer and basic auth (the token as the password); unknown tokens,
#   tenants a token is not for, X-Scope-OrgID required for a token of
#   several tenants; tokens never in the log.
# * SIGHUP reloads the file; a file that does not parse keeps the tokens in
#   use (and names its line); at start it is fatal.
# * Without --auth an address beyond loopback is refused unless
#   --insecure-no-auth; /metrics behind --metrics-auth.
# * Tenants: two tenants push the same service; on every read endpoint of
#   the routing table each tenant's answer equals the answer of a server
#   holding only that tenant's data (nothing of the other read or counted),
#   deletion stays in the tenant, the tenant label is never shown and never
#   taken from a client, data written before --auth is the tenant
#   "default"'s, and a series with the most labels a client may send still
#   takes the tenant's.

TOK_A=tok-a-write-read-admin
TOK_A_READ=tok-a-read-only
TOK_B=tok-b-write-read-admin
TOK_AB=tok-ab-read
TOK_ANY=tok-any-read-write
TOK_DEF=tok-default-all

token_line() { # TENANTS SCOPES TOKEN
    printf '%s %s sha256:%s\n' "$1" "$2" "$(printf %s "$3" | sha256sum | cut -d' ' -f1)"
}

# make_tokens FILE: the tokens every test uses.
make_tokens() {
    {
        echo "# tenant a"
        token_line a write,read,admin "$TOK_A"
        token_line a read "$TOK_A_READ"
        echo
        token_line b read,write,admin "$TOK_B"   # tenant b
        token_line 'a|b' read "$TOK_AB"
        token_line '*' read,write "$TOK_ANY"
        token_line default read,write,admin "$TOK_DEF"
    } >"$1"
}

start_auth_server() {
    it_tmp
    TOKENS="$IT_TMP/tokens"
    make_tokens "$TOKENS"
    start_server --auth "$TOKENS" "$@"
}

# areq METHOD TOKEN PATH [name=value ...] — a request with a Bearer token
# ("" for none) and $ORG as X-Scope-OrgID when set; GET parameters are
# url-encoded into the query string.
areq() {
    local method=$1 token=$2 path=$3 kv
    shift 3
    local args=()
    [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
    [ -n "${ORG:-}" ] && args+=(-H "X-Scope-OrgID: $ORG")
    [ -n "${CT:-}" ] && args+=(-H "Content-Type: $CT")
    if [ "$method" = GET ] || [ "$method" = DELETE ]; then
        args+=(-G)
        for kv in "$@"; do args+=(--data-urlencode "$kv"); done
    else
        args+=(--data-binary "${BODY_IN:-}")
    fi
    _curl "$method" "$BASE$path" "${args[@]}"
}

# apush TOKEN QS BODY — an ingest that must succeed.
apush() {
    BODY_IN=$3 areq POST "$1" "/api/v1/ingest?$2"
    assert_status "ingest $2 (token ${1:0:6}...)" 200
}

# The routing table: "path methods get_scope other_scope route" a line.
route_table() {
    sed -n '/^static const route_entry routes\[\] = {/,/^};/p' "$REPO/server/http.c" |
        sed -n 's/^ *{ "\([^"]*\)", \(ROUTE_[A-Z_]*\), "\([^"]*\)", \([A-Z_0-9]*\), \([A-Z_0-9]*\) },.*/\1|\3|\4|\5|\2/p'
}

test_auth_route_table_covers_every_route() {
    local table routes r
    table=$(route_table)
    [ "$(wc -l <<<"$table")" -ge 10 ] || die "could not read the routing table of server/http.c: [$table]"
    # every route the server dispatches (srv.h's enum) is in the table
    routes=$(sed -n '/^typedef enum {/,/} srv_route;/p' "$REPO/server/srv.h" | grep -o 'ROUTE_[A-Z_]*' |
        grep -vx 'ROUTE_UNKNOWN\|ROUTE_COUNT')
    [ -n "$routes" ] || die "could not read srv_route from server/srv.h"
    for r in $routes; do
        grep -q "|$r\$" <<<"$table" || fail "route $r is not in the routing table (no scope says who may use it)"
    done
    # and every method of every entry has a scope
    while IFS='|' read -r path methods gs os route; do
        if [[ "$methods" == *GET* ]] && [ "$gs" = 0 ]; then fail "$path: GET without a scope"; fi
        if [ -n "$(tr -d ' ,' <<<"${methods//GET/}")" ] && [ "$os" = 0 ]; then
            fail "$path: $methods without a scope for its methods other than GET"
        fi
    done <<<"$table"
}

# assert_401 desc — the last answer is a JSON 401 with a Bearer challenge.
assert_401() {
    assert_error "$1" 401 "$2"
    assert_eq "$1: WWW-Authenticate" 'Bearer realm="flamedb"' "$(header WWW-Authenticate)"
}

# One OTLP profile of one sample, in OTLP/JSON, for the OTLP route.
OTLP_MIN='{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},
"samples":[{"stackIndex":1,"values":[1]}]}]}]}],"dictionary":{"stringTable":["","samples","count","a"],
"functionTable":[{},{"nameStrindex":3}],"locationTable":[{},{"lines":[{"functionIndex":1}]}],
"stackTable":[{},{"locationIndices":[1]}]}}'

# A Connect call's errors are Connect's {"code", "message"}
# (server/connect.c): checked for the code of the status, then read as
# {"error": message}.
connect_as_error() {
    [[ "$1" == /querier.* ]] || return 0
    local code
    code=$(jq -r .code <<<"$BODY")
    case $STATUS in
    401) [ "$code" = unauthenticated ] || fail "$1: Connect code $code for HTTP 401" ;;
    403) [ "$code" = permission_denied ] || fail "$1: Connect code $code for HTTP 403" ;;
    esac
    BODY=$(jq -c '{error: .message}' <<<"$BODY")
}

test_auth_every_endpoint() {
    start_auth_server
    local table path methods gs os route m scope sname url good bad n=0 pushed=0 push_body
    table=$(route_table)
    while IFS='|' read -r path methods gs os route; do
        url=${path//\{name\}/service}
        # what each push route takes: folded text, or OTLP
        push_body=$'a;b 1\n' CT=
        [ "$path" = /v1development/profiles ] && push_body=$OTLP_MIN CT=application/json
        for m in ${methods//,/}; do
            [ "$m" = GET ] && scope=$gs || scope=$os
            # pushes that a token with the scope may make: a service, a name
            [ "$m" = POST ] && url="$url?service=s&name=s.cpu"
            n=$((n + 1))
            case $scope in
            SRV_SCOPE_OPEN | SRV_SCOPE_METRICS)
                areq "$m" "" "$url"
                [ "$STATUS" = 401 ] || [ "$STATUS" = 403 ] && fail "$m $url is open, got HTTP $STATUS"
                continue ;;
            SRV_SCOPE_READ) good=$TOK_A_READ bad="" ;;
            SRV_SCOPE_WRITE) good=$TOK_ANY bad=$TOK_A_READ ;;
            SRV_SCOPE_ADMIN) good=$TOK_A bad=$TOK_ANY ;;
            *) fail "$m $url: unknown scope '$scope' in the routing table"; continue ;;
            esac
            sname=$(tr A-Z a-z <<<"${scope#SRV_SCOPE_}")
            BODY_IN=$'a;b 1\n' areq "$m" "" "$url"
            connect_as_error "$path"
            assert_401 "$m $url without a token" "needs a token with the '$sname' scope"
            BODY_IN=$'a;b 1\n' areq "$m" "tok-not-in-the-file" "$url"
            connect_as_error "$path"
            assert_401 "$m $url, unknown token" "not known"
            if [ -n "$bad" ]; then
                ORG=a BODY_IN=$'a;b 1\n' areq "$m" "$bad" "$url"
                connect_as_error "$path"
                assert_error "$m $url, token without the scope" 403 "needs the '$sname' scope"
            fi
            ORG=a BODY_IN=$push_body areq "$m" "$good" "$url" query=nothing
            if [ "$STATUS" = 401 ] || [ "$STATUS" = 403 ]; then
                fail "$m $url with a token of scope $scope: HTTP $STATUS $BODY"
            fi
            [ "$scope" = SRV_SCOPE_WRITE ] && [ "$STATUS" = 200 ] && pushed=$((pushed + 1))
        done
    done <<<"$table"
    assert_ge "methods tried" 15 "$n"
    # the viewer's files and /healthz need no token, /metrics neither by default
    areq GET "" /
    assert_status "the viewer without a token" 200
    areq GET "" /app.js
    assert_status "the viewer's script without a token" 200
    areq GET "" /healthz
    assert_status "healthz" 200
    areq GET "" /metrics
    assert_status "metrics" 200
    # a CORS preflight carries no token
    _curl OPTIONS "$BASE/api/v1/query" -H "Origin: $BASE" -H "Access-Control-Request-Method: GET"
    [ "$STATUS" = 401 ] && fail "a preflight got 401"
    # what was refused stored nothing, and every push taken went to the
    # token's tenant (an ingest path that forgot the tenant would store in
    # the default one): tenant a holds exactly the pushes answered 200
    CT=
    assert_ge "write routes that took a push" 3 "$pushed"
    ORG=a areq GET "$TOK_ANY" /api/v1/series from=now-1d
    assert_json "tenant a: the pushes of the token with the write scope" '[.series[].profiles]|add' "$pushed"
    areq GET "$TOK_DEF" /api/v1/series from=now-1d
    assert_json "nothing in the default tenant" '.series|length' 0
}

test_auth_basic_and_header_errors() {
    start_auth_server
    # Pyroscope clients: basic auth, the token as the password
    _curl POST "$BASE/ingest?name=shop.cpu&from=$(($(now) - 10))&until=$(now)" -u "anyone:$TOK_A" --data-binary $'x;y 3\n'
    assert_status "Pyroscope push with basic auth" 200
    _curl GET "$BASE/api/v1/query?query=shop&from=now-1h" -u ":$TOK_A"
    assert_status "query with basic auth" 200
    assert_json "its total" .total 3
    _curl GET "$BASE/api/v1/query?query=shop" -u "user:wrong"
    assert_error "basic auth with another password" 401 "not known"
    _curl GET "$BASE/api/v1/query" -H "Authorization: Digest abc"
    assert_error "another scheme" 401 "scheme 'Digest' is not supported"
    _curl GET "$BASE/api/v1/query" -H "Authorization: Bearer"
    assert_error "Bearer without a token" 401 "without a token"
    # tenants: a token of several needs X-Scope-OrgID, and only its own
    areq GET "$TOK_AB" /api/v1/query query=shop
    assert_error "two tenants, no X-Scope-OrgID" 400 "X-Scope-OrgID is required"
    ORG=b areq GET "$TOK_A" /api/v1/query query=shop
    assert_error "a's token for tenant b" 403 "not for tenant 'b'"
    ORG=c areq GET "$TOK_AB" /api/v1/query query=shop
    assert_error "a|b's token for tenant c" 403 "not for tenant 'c'"
    ORG='x/y' areq GET "$TOK_ANY" /api/v1/query query=shop
    assert_error "a malformed tenant" 400 "X-Scope-OrgID 'x/y'"
    ORG=a areq GET "$TOK_AB" /api/v1/query query=shop from=now-1h
    assert_status "a|b's token for a" 200
    assert_json "a's total" .total 3
    ORG=a areq GET "$TOK_A" /api/v1/query query=shop from=now-1h
    assert_status "a's token naming its own tenant" 200
    # the tokens are never in the log, nor their hashes
    local t
    for t in "$TOK_A" "$TOK_AB" "$TOK_ANY" wrong abc; do
        assert_not_contains "the log holds no token" "$(cat "$LOG")" "$t"
    done
    assert_not_contains "the log holds no hash" "$(cat "$LOG")" "$(printf %s "$TOK_A" | sha256sum | cut -c1-16)"
    assert_contains "unknown tokens are logged (without the token)" "$(cat "$LOG")" "a request with a token not in"
}

# wait_log TEXT — until the server log holds TEXT (bounded).
wait_log() {
    local tries=200
    while ! grep -qF -- "$1" "$LOG" && [ $tries -gt 0 ]; do sleep 0.05; tries=$((tries - 1)); done
    grep -qF -- "$1" "$LOG" || fail "the log never said [$1]: $(tail -3 "$LOG")"
}

test_auth_sighup_reload() {
    start_auth_server
    areq GET "$TOK_A_READ" /api/v1/labels
    assert_status "before the reload" 200
    # the read-only token goes, a new one comes
    {
        token_line a write,read,admin "$TOK_A"
        token_line a read tok-new-reader
    } >"$TOKENS.new"
    mv "$TOKENS.new" "$TOKENS"
    kill -HUP "$PID"
    wait_log "SIGHUP: reloaded $TOKENS: 2 tokens"
    areq GET "$TOK_A_READ" /api/v1/labels
    assert_error "a token taken out of the file" 401 "not known"
    areq GET tok-new-reader /api/v1/labels
    assert_status "a token added to the file" 200
    # a file that does not parse: the tokens in use stay, the line is named
    printf '%s\nthis is not a token line\n' "$(token_line a read tok-other)" >"$TOKENS"
    kill -HUP "$PID"
    wait_log "line 2: expected 3 fields"
    assert_contains "kept" "$(cat "$LOG")" "keeping the 2 tokens loaded before"
    areq GET tok-new-reader /api/v1/labels
    assert_status "after a bad reload the tokens stay" 200
    areq GET tok-other /api/v1/labels
    assert_error "nothing of the bad file was taken" 401 "not known"
    # the server still runs and stops cleanly
    stop_server
}

# serve_fails EXPECTED_RC NEEDLE FLAGS... — the server refuses to start.
serve_fails() {
    local want=$1 needle=$2 out rc
    shift 2
    it_tmp
    out=$("$FLAMEDB" serve --data "$IT_TMP/refused" "$@" 2>&1 </dev/null)
    rc=$?
    assert_eq "serve $*: exit status" "$want" "$rc"
    assert_contains "serve $*: says why" "$out" "$needle"
}

test_auth_start_refusals() {
    it_tmp
    printf '# ok\n%s\nshop reed sha256:%s\n' "$(token_line a read x)" "$(printf x | sha256sum | cut -d' ' -f1)" \
        >"$IT_TMP/bad-tokens"
    serve_fails 2 "line 3: unknown scope 'reed'" --listen 127.0.0.1:0 --auth "$IT_TMP/bad-tokens"
    serve_fails 2 "cannot open: No such file or directory" --listen 127.0.0.1:0 --auth "$IT_TMP/none"
    serve_fails 2 "--metrics-auth needs --auth" --listen 127.0.0.1:0 --metrics-auth
    # beyond loopback without --auth: refused, whatever the address
    serve_fails 2 "refusing to listen on every interface without authentication" --listen 0.0.0.0:0
    serve_fails 2 "refusing to listen on every interface without authentication" --listen :0
    if [ -e /proc/net/if_inet6 ]; then
        serve_fails 2 "refusing to listen on every interface" --listen '[::]:0'
    fi
    # with --auth, or --insecure-no-auth, it listens (and says which)
    local flags
    make_tokens "$IT_TMP/tokens"
    for flags in "--auth $IT_TMP/tokens" "--insecure-no-auth"; do
        local out="$IT_TMP/every.log" pid line tries=300
        : >"$out"
        # shellcheck disable=SC2086
        "$FLAMEDB" serve --listen 0.0.0.0:0 --data "$IT_TMP/every" $flags >"$out" 2>&1 </dev/null &
        pid=$!
        line=""
        while [ -z "$line" ] && [ $tries -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
            line=$(grep -o 'listening on http://[^ ]*' "$out" | head -1)
            sleep 0.05
            tries=$((tries - 1))
        done
        [ -n "$line" ] || fail "0.0.0.0 with $flags: did not listen: $(tail -3 "$out")"
        tries=100
        while ! grep -q 'authentication' "$out" && [ $tries -gt 0 ]; do sleep 0.05; tries=$((tries - 1)); done
        if [ "$flags" = "--insecure-no-auth" ]; then
            assert_contains "--insecure-no-auth: the warning" "$(cat "$out")" \
                "listening on every interface with no authentication: anyone who can reach port"
        else
            assert_contains "--auth: says so" "$(cat "$out")" "authentication: 6 tokens from $IT_TMP/tokens"
            assert_not_contains "--auth: no warning" "$(cat "$out")" "no authentication"
            # requests still need a token there
            curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${line##*:}/api/v1/labels" >"$IT_TMP/code"
            assert_eq "0.0.0.0 with --auth: a request without a token" 401 "$(cat "$IT_TMP/code")"
        fi
        kill -TERM "$pid"
        wait "$pid"
        assert_eq "0.0.0.0 with $flags: exit status" 0 "$?"
    done
    # loopback without --auth says that authentication is off
    start_server
    assert_contains "loopback, no --auth" "$(cat "$LOG")" "authentication off (no --auth): loopback only"
}

test_auth_metrics_auth() {
    start_auth_server --metrics-auth
    areq GET "" /metrics
    assert_401 "/metrics with --metrics-auth, no token" "admin"
    # a tenant's token (read or admin) sees its tenant's series only
    # (tests/integration/test_metrics_tenant.sh)
    areq GET "$TOK_A_READ" /metrics
    assert_status "/metrics with a read token" 200
    assert_contains "/metrics: Prometheus text, tenant a's" "$BODY" 'flamedb_ingested_samples_total{tenant="a"} 0'
    areq GET "$TOK_A" /metrics
    assert_status "/metrics with an admin token of tenant a" 200
    assert_not_contains "/metrics: no other tenant" "$BODY" 'tenant="b"'
    areq GET "" /healthz
    assert_status "healthz stays open" 200
}

# ---- tenants ----------------------------------------------------------------

T0=""
# push_tenant TOKEN TENANT: three windows of the tenant's profiles, the
# same service as every tenant, with frames and a label of its own.
push_tenant() {
    local tok=$1 t=$2 w c
    local off=5 k=1
    # b's windows later in each minute (a "latest" that leaked would show), its counts higher
    [ "$t" = b ] && off=25 k=3
    for w in 0 1 2; do
        c=$(( (w + 1) * k + 4 ))
        apush "$tok" "service=shop&host=host-$t&only_$t=yes&from=$((T0 + 60 * w + off))&until=$((T0 + 60 * w + off + 10))" \
            "main;work_$t;leaf_$t $c
main;shared $((w + 2))
"
    done
}

# The read endpoints of the routing table, each with parameters that read
# the tenants' data.  A read endpoint added to the table without a case here
# fails test_tenant_isolation_every_read_endpoint.
declare -A ISO=(
    [/api/v1/query]='query=shop'
    [/api/v1/labels]='query={}'
    [/api/v1/label/{name}/values]='query={}'
    [/api/v1/series]='query={}'
    [/api/v1/top]='query=shop'
    [/api/v1/stability]='query=shop|step=60'
    [/api/v1/compare]='left=shop|right=shop{host=~"host-.*"}|right_from=T60'
    [/api/v1/diff]='left=shop|right=shop|right_from=T60'
    [/api/v1/timeline]='query=shop|step=60'
    [/api/v1/variance]='query=shop|step=60'
    [/api/v1/hotspots/metrics]='query=shop|group_by=host|range=1h'
    [/pyroscope/render]='query=shop'
    [/pyroscope/render-diff]='leftQuery=shop|rightQuery=shop{host=~"host-.*"}|rightFrom=T60'
)
# more cases of the same endpoints
ISO_MORE=(
    '/api/v1/query|query={}|format=folded'
    '/api/v1/query|query=shop|format=speedscope'
    '/api/v1/query|query=shop|group_by=host'
    '/api/v1/query|query={}|format=pprof'
    '/api/v1/label/{name}/values|query=shop'
    '/api/v1/top|query={}|group_by=host'
    '/api/v1/stability|query=shop|step=60|group_by=host'
    '/api/v1/variance|query=shop|by=host'
    '/api/v1/query|query=shop|from=T0-40d|until=T0-36d'
)

# iso_get TOKEN PATH 'k=v|k=v' — a GET over [T0, T0+600) (parameters may
# say otherwise); label NAME in a path is host.
iso_get() {
    local tok=$1 path=${2//\{name\}/host} spec=$3 kv args=() has_from=0
    IFS='|' read -ra kvs <<<"$spec"
    for kv in "${kvs[@]}"; do
        [ -n "$kv" ] || continue
        [[ "$kv" == from=* ]] && has_from=1
        kv=${kv//T60/$((T0 + 60))}
        kv=${kv//T0-40d/$((T0 - 40 * 86400))}
        args+=("${kv//T0-36d/$((T0 - 36 * 86400))}")
    done
    [ $has_from = 1 ] || args+=("from=$T0" "until=$((T0 + 600))")
    areq GET "$tok" "$path" "${args[@]}"
}

# A speedscope or pprof answer lists frames in the order of the shared
# string dictionary (which tenant interned a name first): compared as their
# stacks and values, which is what they say.
norm_answer() {
    local f=$1 spec=$2
    if [[ "$spec" == *format=speedscope* ]]; then
        jq -S '.shared.frames as $f | [.profiles[] | {name, unit, endValue, stacks: ([range(0; .samples|length) as $i
               | "\([.samples[$i][] | $f[.].name] | join(";")) \(.weights[$i])"] | sort)}]' "$f" >"$f.norm" &&
            mv "$f.norm" "$f"
    elif [[ "$spec" == *format=pprof* ]]; then
        go tool pprof -traces "$f" 2>/dev/null | awk '/^-----/ { if (s != "") print s; s = ""; next }
            /^ +[0-9]/ && s == "" { s = $1 " " $2; next } s != "" { s = s ";" $1 } END { if (s != "") print s }' |
            LC_ALL=C sort >"$f.norm"
        [ -s "$f.norm" ] || fail "go tool pprof could not read the pprof answer of $spec"
        mv "$f.norm" "$f"
    fi
}

# The answers of every case for one token, one per file in DIR.
iso_answers() {
    local tok=$1 dir=$2 path i=0 c
    mkdir -p "$dir"
    for path in "${!ISO[@]}"; do
        iso_get "$tok" "$path" "${ISO[$path]}"
        assert_status "$path ${ISO[$path]}" 200
        cp "$BODY_FILE" "$dir/$(tr '/{}' '___' <<<"$path")"
    done
    for c in "${ISO_MORE[@]}"; do
        i=$((i + 1))
        iso_get "$tok" "${c%%|*}" "${c#*|}"
        assert_status "$c" 200
        cp "$BODY_FILE" "$dir/more.$i"
        norm_answer "$dir/more.$i" "$c"
    done
}

test_tenant_isolation_every_read_endpoint() {
    local path table n=0 f
    T0=$(( ($(now) - 1200) / 60 * 60 ))
    # every read route of the table has a case
    table=$(route_table)
    while IFS='|' read -r path methods gs os route; do
        [ "$gs" = SRV_SCOPE_READ ] || continue
        n=$((n + 1))
        # the fleet registry holds no stored data and its answers carry times:
        # its tenant isolation is tests/agent/test_fleet.sh's (agents listed per tenant)
        [ "$path" = /api/v1/agents ] && continue
        [ -n "${ISO[$path]:-}" ] || fail "read endpoint $path has no tenant isolation case in test_auth.sh (ISO)"
    done <<<"$table"
    assert_ge "read endpoints" 11 "$n"

    # each tenant alone on a server of its own: the reference answers
    start_auth_server
    push_tenant "$TOK_B" b
    iso_answers "$TOK_B" "$IT_TMP/alone-b"
    stop_server
    start_auth_server
    push_tenant "$TOK_A" a
    iso_answers "$TOK_A" "$IT_TMP/alone-a"
    stop_server

    # both on one server, pushing the same service: each answer as if the
    # other tenant did not exist (nothing read, nothing counted)
    start_auth_server
    push_tenant "$TOK_A" a
    ORG=b push_tenant "$TOK_ANY" b   # a "*" token, the tenant named
    iso_answers "$TOK_A" "$IT_TMP/both-a"
    ORG=b iso_answers "$TOK_AB" "$IT_TMP/both-b"
    for f in "$IT_TMP"/alone-a/*; do
        cmp -s "$f" "$IT_TMP/both-a/$(basename "$f")" ||
            fail "tenant a's answer $(basename "$f") differs with b's data beside: alone [$(head -c 300 "$f")] together [$(head -c 300 "$IT_TMP/both-a/$(basename "$f")")]"
        cmp -s "$IT_TMP/alone-b/$(basename "$f")" "$IT_TMP/both-b/$(basename "$f")" ||
            fail "tenant b's answer $(basename "$f") differs with a's data beside"
        # and the answers are about data: the two tenants' differ
        [ "$(basename "$f")" = more.9 ] && continue   # a year ago: empty for both
        cmp -s "$f" "$IT_TMP/alone-b/$(basename "$f")" && fail "$(basename "$f"): the same answer for a and b ($(head -c 200 "$f"))"
    done
    # nothing of a's in b's answers, by name
    for f in work_a leaf_a only_a host-a; do
        assert_not_contains "b's answers" "$(cat "$IT_TMP"/both-b/*)" "$f"
    done
    assert_contains "a's answers name its own" "$(cat "$IT_TMP"/both-a/*)" "work_a"

    # totals, label values and series, explicitly
    ORG=a iso_get "$TOK_AB" /api/v1/query 'query=shop'
    assert_json "a's total" .total $(( (1 + 2 + 3) * 1 + 12 + 2 + 3 + 4 ))
    ORG=b iso_get "$TOK_AB" /api/v1/query 'query=shop'
    assert_json "b's total" .total $(( (1 + 2 + 3) * 3 + 12 + 2 + 3 + 4 ))
    iso_get "$TOK_A" /api/v1/label/host/values 'query={}'
    assert_json "a's hosts" '.values|join(",")' host-a
    iso_get "$TOK_B" /api/v1/labels 'query={}'
    assert_json "b's label names (no tenant label)" '[.labels[]|"\(.name):\(.values)"]|join(",")' \
        'host:1,only_b:1,service:1,type:1'
    iso_get "$TOK_B" /api/v1/series 'query={}'
    assert_json "b's series, its labels as pushed" '[.series[]|.labels|to_entries|map("\(.key)=\(.value)")|join(",")]|join(" ")' \
        'host=host-b,only_b=yes,service=shop,type=cpu'
    # a "*" token without X-Scope-OrgID reads nothing
    iso_get "$TOK_ANY" /api/v1/query 'query=shop'
    assert_error "a '*' token without X-Scope-OrgID" 400 "X-Scope-OrgID is required"

    # deletion stays in the tenant: a deletes everything of its own
    areq DELETE "$TOK_A" /api/v1/series 'query={}' all=true
    assert_status "a deletes all of its series" 200
    assert_json "a's series deleted" .deleted_series 1
    iso_get "$TOK_A" /api/v1/query 'query=shop'
    assert_json "a's data gone" .total 0
    iso_get "$TOK_B" /api/v1/query 'query=shop'
    assert_json "b's data untouched" .total 39
    areq DELETE "$TOK_B" /api/v1/series 'query={}'
    assert_error "{} still needs all=true under --auth" 400 "all=true"
}

test_tenant_label_reserved() {
    start_auth_server
    local now_s
    now_s=$(now)
    BODY_IN=$'a 1\n' areq POST "$TOK_A" "/api/v1/ingest?service=x&__tenant__=b"
    assert_error "ingest naming the tenant label" 400 "label '__tenant__' is reserved"
    BODY_IN=$'a 1\n' areq POST "$TOK_A" "/ingest?name=x.cpu%7B__tenant__%3Db%7D"
    assert_error "Pyroscope ingest naming the tenant label" 400 "label '__tenant__' is reserved"
    areq GET "$TOK_B" /api/v1/series from=now-1d
    assert_json "nothing stored for b" '.series|length' 0
    areq GET "$TOK_A" /api/v1/query 'query={__tenant__="b"}'
    assert_error "a selector naming the tenant label" 400 "parameter 'query': the label __tenant__ is reserved"
    areq GET "$TOK_A" /api/v1/compare 'left=x' 'right={__tenant__=~".*"}'
    assert_error "compare's right naming it" 400 "parameter 'right'"
    areq DELETE "$TOK_A" /api/v1/series 'query={__tenant__="b"}'
    assert_error "delete naming it" 400 "reserved"
    areq GET "$TOK_A" /api/v1/query 'query=x' group_by=__tenant__
    assert_error "group_by the tenant label" 400 "parameter 'group_by': the label __tenant__ is reserved"
    areq GET "$TOK_A" /api/v1/label/__tenant__/values
    assert_error "the tenant label's values" 400 "reserved"
    # without --auth the label is refused from clients too
    stop_server
    start_server
    ingest "service=x&__tenant__=b" $'a 1\n'
    assert_error "no --auth: ingest naming the tenant label" 400 "reserved"
}

# Data written before --auth belongs to the tenant "default"; with --auth
# the default tenant's pushes join it.  A series with the most labels a
# client may send takes the tenant label too.
test_tenant_default_and_label_limit() {
    start_server
    put "service=old&from=$(($(now) - 30))&until=$(($(now) - 20))" $'before;auth 5\n'
    stop_server
    it_tmp
    TOKENS="$IT_TMP/tokens"
    make_tokens "$TOKENS"
    launch_server --auth "$TOKENS"
    areq GET "$TOK_DEF" /api/v1/query query=old from=now-1h
    assert_json "the default tenant reads what was there before --auth" .total 5
    areq GET "$TOK_A" /api/v1/query query=old from=now-1h
    assert_json "tenant a does not" .total 0
    areq GET "$TOK_A" /api/v1/series from=now-1h
    assert_json "nor lists it" '.series|length' 0
    apush "$TOK_DEF" "service=old" $'after;auth 7\n'
    areq GET "$TOK_DEF" /api/v1/series from=now-1h
    assert_json "the default tenant's push joins the same series" '[.series[]|"\(.profiles)"]|join(",")' 2
    # 32 labels (service, type and 30 more), the most a client may send, and the tenant's
    local qs="service=wide&type=cpu" i
    for i in $(seq 1 30); do qs+="&l$i=v$i"; done
    apush "$TOK_A" "$qs" $'wide 9\n'
    areq GET "$TOK_A" /api/v1/series 'query=wide' from=now-1h
    assert_json "all 32 labels kept, the tenant's not shown" '.series[0].labels|length' 32
    areq GET "$TOK_A" /api/v1/query 'query=wide{l30="v30"}' from=now-1h
    assert_json "queried by its last label" .total 9
    areq GET "$TOK_B" /api/v1/query 'query=wide' from=now-1h
    assert_json "not tenant b's" .total 0
    # without --auth again: every tenant's data is readable (the operator's view)
    stop_server
    launch_server
    get /api/v1/series 'query=wide' from=now-1h
    assert_json "no --auth: the tenant label is there" '.series[0].labels.__tenant__' a
}

# ---- per-tenant ingest rate (issue 12, point 8) ------------------------------

# body_of N — a folded body of about N bytes.
body_of() {
    local n=$1 i=0
    while [ $((i * 32)) -lt "$n" ]; do printf 'main;work_%020d 1\n' "$i"; i=$((i + 1)); done
}

test_tenant_ingest_rate_limit() {
    # 1 KB a second, bursts of 6 KB: two 2.5 KB pushes pass, the third waits
    # (for 1.4 s of refill: the pushes before it may take that long and more)
    start_auth_server --ingest-rate 1k --ingest-burst 6k
    local body
    body=$(body_of 2500)
    apush "$TOK_A" "service=r" "$body"
    apush "$TOK_A" "service=r" "$body"
    BODY_IN=$body areq POST "$TOK_A" "/api/v1/ingest?service=r"
    assert_error "tenant a over its rate" 429 "tenant 'a' pushes more bytes than --ingest-rate allows (1024 a second, bursts of 6144"
    local wait_s
    wait_s=$(header Retry-After)
    [[ "$wait_s" =~ ^[0-9]+$ ]] && [ "$wait_s" -ge 1 ] && [ "$wait_s" -le 3 ] ||
        fail "Retry-After: expected 1 to 3 s (at most the 2500 bytes missing at 1024 a second), got [$wait_s]"
    # another tenant has a bucket of its own
    apush "$TOK_B" "service=r" "$body"
    # the refused push stored nothing; after Retry-After it passes
    areq GET "$TOK_A" /api/v1/series query=r from=now-1h
    assert_json "tenant a: the two pushes that passed" '.series[0].profiles' 2
    sleep "$wait_s"
    apush "$TOK_A" "service=r" "$body"
    areq GET "" /metrics
    assert_eq "counted in /metrics" 1 "$(metric flamedb_ingest_rate_limited_total)"
    assert_eq "a 429 counted by route" 1 "$(metric 'flamedb_http_requests_total{route="/api/v1/ingest",code="429"}')"
    # a body over the burst is not refused for ever: it passes on a full bucket
    stop_server
    start_auth_server --ingest-rate 1k --ingest-burst 2k
    apush "$TOK_A" "service=big" "$(body_of 5000)"
    BODY_IN=x areq POST "$TOK_A" "/api/v1/ingest?service=big"
    assert_status "after a body over the burst the tenant waits" 429
    # without --auth the limit is the server's
    stop_server
    start_server --ingest-rate 1k --ingest-burst 3k
    ingest "service=n" "$body"
    assert_status "no --auth: the first push" 200
    ingest "service=n" "$body"
    assert_error "no --auth: the server's rate" 429 "this server's clients push more bytes"
}
