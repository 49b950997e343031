# test_tls.sh — HTTPS (issue 12, point 3): `flamedb serve --tls-cert FILE
# --tls-key FILE` with a certificate made at test time by openssl; clients
# verify it with the certificate as their authority (curl --cacert,
# `flamedb import --ca`) and fail without it; a plain HTTP request to the
# port gets no answer; files that cannot be read, or that are no
# certificate and key, stop the server at start saying which.  With --auth
# the token travels over TLS as over plain HTTP.

# make_cert DIR — a self-signed certificate for 127.0.0.1 and localhost.
make_cert() {
    command -v openssl >/dev/null || die "openssl is required (scripts/deps.sh installs it)"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/key.pem" -out "$1/cert.pem" -days 2 \
        -subj "/CN=flamedb test" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1 ||
        die "openssl could not make a certificate"
}

# tls_start [flags...] — the server over HTTPS on a fresh data directory;
# sets BASE (https://127.0.0.1:PORT), PID, LOG, CERT.
tls_start() {
    it_tmp
    CERT="$IT_TMP/cert.pem"
    [ -e "$CERT" ] || make_cert "$IT_TMP"
    DATA=$(mktemp -d "$IT_TMP/data.XXXXXX")
    LOG="$DATA.log"
    : >"$LOG"
    "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$DATA" --tls-cert "$CERT" --tls-key "$IT_TMP/key.pem" "$@" \
        >>"$LOG" 2>&1 &
    PID=$!
    local line="" tries=300
    while [ -z "$line" ] && [ $tries -gt 0 ]; do
        line=$(grep -o 'listening on https://127\.0\.0\.1:[0-9]*' "$LOG" | head -1)
        kill -0 "$PID" 2>/dev/null || { PID=""; die "the server exited: $(tail -3 "$LOG")"; }
        sleep 0.05
        tries=$((tries - 1))
    done
    [ -n "$line" ] || die "no 'listening on https://' line: $(tail -3 "$LOG")"
    BASE="https://127.0.0.1:${line##*:}"
}

test_tls_serves_https() {
    tls_start
    _curl GET "$BASE/healthz" --cacert "$CERT"
    assert_status "healthz over HTTPS, the certificate verified" 200
    assert_json "its answer" .status ok
    _curl GET "https://localhost:${BASE##*:}/healthz" --cacert "$CERT"
    assert_status "by the name localhost" 200
    # an ingest and a query over TLS
    _curl POST "$BASE/api/v1/ingest?service=tls" --cacert "$CERT" --data-binary $'a;b 3\n'
    assert_status "ingest over HTTPS" 200
    _curl GET "$BASE/api/v1/query?query=tls&from=now-1h" --cacert "$CERT"
    assert_json "query over HTTPS" .total 3
    # a client that does not trust the certificate gets nothing
    local rc
    curl -sS -o /dev/null "$BASE/healthz" 2>"$IT_TMP/err"
    rc=$?
    assert_eq "curl without the certificate: verification fails (exit 60)" 60 "$rc"
    # plain HTTP on the HTTPS port: no HTTP answer
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:${BASE##*:}/healthz")
    [ "$code" = 200 ] && fail "plain HTTP on the HTTPS port answered 200"
    _curl GET "$BASE/healthz" --cacert "$CERT"
    assert_status "the server still answers after a plain HTTP client" 200
}

test_tls_import_verifies_with_ca() {
    it_tmp
    printf '%s %s sha256:%s\n' shop write,read "$(printf %s tls-token | sha256sum | cut -d' ' -f1)" >"$IT_TMP/tokens"
    printf '  tls-token \n' >"$IT_TMP/token"
    tls_start --auth "$IT_TMP/tokens"
    printf 'main;imported 7\n' >"$IT_TMP/f.folded"
    local out rc
    out=$("$FLAMEDB" import --server "$BASE" --service imp --token-file "$IT_TMP/token" --ca "$CERT" \
        "$IT_TMP/f.folded" 2>&1)
    rc=$?
    assert_eq "import with --ca and the token: exit status ($out)" 0 "$rc"
    # without --ca the certificate is not trusted: nothing is sent
    out=$("$FLAMEDB" import --server "$BASE" --service imp2 --token-file "$IT_TMP/token" "$IT_TMP/f.folded" 2>&1)
    rc=$?
    assert_eq "import without --ca: exit status" 1 "$rc"
    assert_contains "import without --ca: says why" "$out" "give it with --ca FILE"
    # the right authority, no token: 401 from the server, said by import
    out=$("$FLAMEDB" import --server "$BASE" --service imp3 --ca "$CERT" "$IT_TMP/f.folded" 2>&1)
    assert_eq "import without a token: exit status" 1 "$?"
    assert_contains "import without a token: the server's answer" "$out" "HTTP 401"
    # a --ca that is not the server's authority
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$IT_TMP/other.key" -out "$IT_TMP/other.pem" -days 2 \
        -subj "/CN=other" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1
    out=$("$FLAMEDB" import --server "$BASE" --service imp4 --token tls-token --ca "$IT_TMP/other.pem" \
        "$IT_TMP/f.folded" 2>&1)
    assert_eq "import with another authority: exit status" 1 "$?"
    out=$("$FLAMEDB" import --server "$BASE" --service imp5 --token tls-token --ca "$IT_TMP/none.pem" \
        "$IT_TMP/f.folded" 2>&1)
    assert_eq "import with a --ca that is not there: exit status" 2 "$?"
    assert_contains "import with a --ca that is not there: says so" "$out" "--ca $IT_TMP/none.pem"
    # only the first import stored anything
    _curl GET "$BASE/api/v1/series?from=now-1d" --cacert "$CERT" -H "Authorization: Bearer tls-token"
    assert_json "only the verified import was stored" '[.series[].labels.service]|join(",")' imp
    assert_json "its total" '.series[0].total' 7
    _curl GET "$BASE/api/v1/series" --cacert "$CERT"
    assert_error "a read without a token over TLS" 401 "needs a token"
}

test_tls_refusals_at_start() {
    it_tmp
    make_cert "$IT_TMP"
    local out
    out=$("$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --tls-cert "$IT_TMP/missing.pem" \
        --tls-key "$IT_TMP/key.pem" 2>&1 </dev/null)
    assert_eq "a certificate that is not there: exit status" 2 "$?"
    assert_contains "says which file" "$out" "--tls-cert $IT_TMP/missing.pem: cannot read it: No such file or directory"
    out=$("$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --tls-cert "$IT_TMP/cert.pem" 2>&1 </dev/null)
    assert_eq "--tls-cert without --tls-key: exit status" 2 "$?"
    assert_contains "says so" "$out" "--tls-cert and --tls-key go together"
    echo "not a key" >"$IT_TMP/junk.pem"
    out=$("$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --tls-cert "$IT_TMP/cert.pem" \
        --tls-key "$IT_TMP/junk.pem" 2>&1 </dev/null)
    assert_eq "a key file that is no PEM: exit status" 2 "$?"
    assert_contains "says so" "$out" "--tls-key $IT_TMP/junk.pem: not a PEM file"
    # the certificate given as the key: PEM, but not a key
    out=$("$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --tls-cert "$IT_TMP/cert.pem" \
        --tls-key "$IT_TMP/cert.pem" 2>&1 </dev/null)
    assert_eq "the certificate as the key: exit status" 1 "$?"
    assert_contains "says so" "$out" "--tls-cert and --tls-key are not a PEM certificate and its private key"
    # TLS does not stand for authentication: beyond loopback --auth is still needed
    out=$("$FLAMEDB" serve --listen 0.0.0.0:0 --data "$IT_TMP/d" --tls-cert "$IT_TMP/cert.pem" \
        --tls-key "$IT_TMP/key.pem" 2>&1 </dev/null)
    assert_eq "TLS on every interface without --auth: exit status" 2 "$?"
    assert_contains "says so" "$out" "refusing to listen on every interface without authentication"
}
