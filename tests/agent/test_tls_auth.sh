# shellcheck shell=bash
# test_tls_auth.sh — the agent against a server with --auth over HTTPS
# (issue 12, points 1 and 3): with --token-file and --ca it pushes, and the
# profiles are the token's tenant's; without --ca the server's certificate
# (made here by openssl) is not trusted and nothing arrives; with a token
# the server does not know, every push is refused (401) and dropped.

TA_DURATION=3

# ta_server — the server with a certificate for 127.0.0.1 and a token file
# of tenant "shop"; sets BASE (https), SPID, SLOG, CERT, TOKEN_FILE.
ta_server() {
    CERT="$AT_TMP/cert.pem"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$AT_TMP/key.pem" -out "$CERT" -days 2 \
        -subj "/CN=flamedb agent test" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1 ||
        die "openssl could not make a certificate (scripts/deps.sh installs openssl)"
    printf 'shop write,read sha256:%s\n' "$(printf %s agent-token | sha256sum | cut -d' ' -f1)" >"$AT_TMP/tokens"
    TOKEN_FILE="$AT_TMP/token"
    printf 'agent-token\n' >"$TOKEN_FILE"
    DATA=$(mktemp -d "$AT_TMP/data.XXXXXX")
    SLOG="$DATA.log"
    "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$DATA" --auth "$AT_TMP/tokens" --tls-cert "$CERT" \
        --tls-key "$AT_TMP/key.pem" >"$SLOG" 2>&1 &
    SPID=$!
    local line="" tries=300
    while [ -z "$line" ] && [ $tries -gt 0 ]; do
        line=$(grep -o 'listening on https://127\.0\.0\.1:[0-9]*' "$SLOG" | head -1)
        kill -0 "$SPID" 2>/dev/null || { SPID=""; die "server exited: $(tail -3 "$SLOG")"; }
        sleep 0.05
        tries=$((tries - 1))
    done
    [ -n "$line" ] || die "server did not print 'listening on https://': $(tail -3 "$SLOG")"
    BASE="https://127.0.0.1:${line##*:}"
}

# ta_profiles SERVICE — profiles stored for SERVICE, read with the token.
ta_profiles() {
    curl -sS --cacert "$CERT" -H "Authorization: Bearer agent-token" -G "$BASE/api/v1/series" \
        --data-urlencode "query={service=\"$1\"}" -d from=now-1h | jq '[.series[].profiles] | add // 0'
}

test_agent_tls_auth() {
    ta_server
    start_workload "$AT_BUILD/workload_fp" $((3 * TA_DURATION + 10)) 1

    start_agent --pid "$WPID" --service tls-ok --interval 1 --duration "$TA_DURATION" --frequency 99 \
        --unwind fp --no-kernel --token-file "$TOKEN_FILE" --ca "$CERT"
    wait_agent
    require_agent_ok
    assert_ge "with --token-file and --ca: profiles stored" 1 "$(ta_profiles tls-ok)"
    # they are tenant shop's: a token of another tenant would not see them,
    # and a read without a token is refused
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERT" "$BASE/api/v1/series")
    assert_eq "a read without a token" 401 "$code"

    # without --ca: the certificate is not trusted, nothing is delivered
    start_agent --pid "$WPID" --service tls-noca --interval 1 --duration "$TA_DURATION" --frequency 99 \
        --unwind fp --no-kernel --token-file "$TOKEN_FILE"
    wait_agent
    assert_eq "without --ca: profiles stored" 0 "$(ta_profiles tls-noca)"
    assert_contains "without --ca: the agent says why" "$(cat "$ALOG")" "give it with --ca FILE"

    # a token the server does not know: refused and dropped
    printf 'not-the-token\n' >"$AT_TMP/bad-token"
    start_agent --pid "$WPID" --service tls-badtoken --interval 1 --duration "$TA_DURATION" --frequency 99 \
        --unwind fp --no-kernel --token-file "$AT_TMP/bad-token" --ca "$CERT"
    wait_agent
    assert_eq "an unknown token: profiles stored" 0 "$(ta_profiles tls-badtoken)"
    assert_contains "an unknown token: the server's answer in the log" "$(cat "$ALOG")" "HTTP 401"
    grep -q agent-token "$SLOG" && fail "the token is in the server's log"

    # a --token-file that is not there stops the agent at start
    start_agent --pid "$WPID" --service x --duration 1 --token-file "$AT_TMP/none"
    wait_agent
    [ "$ARC" != 0 ] || fail "--token-file that is not there: the agent exited 0"
    assert_contains "--token-file that is not there: says so" "$(cat "$ALOG")" "--token-file $AT_TMP/none"
}
