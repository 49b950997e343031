# test_otlp.sh — OpenTelemetry profiles in (POST /v1development/profiles,
# issue 11 point 4), spoken as OpenTelemetry's exporters speak it: the
# requests are built and encoded by Python's protobuf runtime (Debian's
# python3-protobuf) from classes protoc (protobuf-compiler) generates at test
# time from proto/otlp_profiles.proto (tests/integration/otlp_client.py), in
# binary, gzip'd binary and the JSON mapping.  What is stored must equal the
# same stacks pushed as folded text.

OTLP_PY=/usr/bin/python3 # Debian's, which python3-protobuf is installed for

# otlp CASE SERVICE — runs the client; $OTLP: its one JSON line.
otlp() {
    it_tmp
    command -v protoc >/dev/null || die "protoc is not installed (make deps installs protobuf-compiler)"
    "$OTLP_PY" -c 'import google.protobuf' 2>/dev/null || die "python3-protobuf is not installed (make deps)"
    mkdir -p "$IT_TMP/otlp"
    OTLP=$("$OTLP_PY" "$REPO/tests/integration/otlp_client.py" "$BASE" "$REPO/proto" "$IT_TMP/otlp" "$1" "$2") ||
        die "otlp_client.py $1 failed: $OTLP"
}

# The folded stacks of a service's cpu profiles over the last hour, sorted.
stored_folded() {
    get /api/v1/query "query={service=\"$1\",type=\"cpu\"}" format=folded from=now-1h
    assert_status "query $1" 200
    printf '%s\n' "$BODY" | sort
}

# The OpenTelemetry eBPF profiler's shape — (samples, count) every 10 ms of
# cpu time — stored as type cpu in nanoseconds, in each encoding, equal to
# the same three stacks pushed as folded text at 100 Hz.
test_otlp_each_encoding_equals_folded() {
    start_server
    local t
    t=$(($(now) - 60))
    ingest "service=folded-ref&type=cpu&rate=100&from=$t&until=$((t + 10))" \
        $'main;foo;bar 3\nmain;foo 2\nmain;libc.so.6+0x1000 1\n'
    assert_status "the folded reference" 200
    local want case
    want=$(stored_folded folded-ref)
    assert_contains "reference in nanoseconds" "$want" "main;foo;bar 30000000"
    for case in cpu-binary cpu-json cpu-gzip; do
        otlp "$case" "otel-$case"
        assert_eq "$case: status" 200 "$(jq -r .status <<<"$OTLP")"
        assert_eq "$case: full success (no partialSuccess)" "{}" "$(jq -c .answer <<<"$OTLP")"
        case $case in
        cpu-json) assert_contains "$case: answered in JSON" "$(jq -r .content_type <<<"$OTLP")" "application/json" ;;
        *) assert_contains "$case: answered in protobuf" "$(jq -r .content_type <<<"$OTLP")" "application/x-protobuf" ;;
        esac
        assert_eq "$case: the stacks of the folded push" "$want" "$(stored_folded "otel-$case")"
    done
    # labels from the resource: service.name, host.name; process.pid is not one
    get /api/v1/label/node/values
    assert_contains "host.name is the node" "$BODY" "otel-node"
    get /api/v1/labels
    assert_not_contains "process.pid is no label" "$BODY" "pid"
    # the unit, the samples behind the values (6: known, so intervals)
    get /api/v1/top 'query={service="otel-cpu-binary"}' from=now-1h
    assert_json "unit" .unit nanoseconds
    assert_json "samples" .samples 6
}

# A profile without values is left out and said so (partial success); the
# rest of the request is stored.
test_otlp_partial_success() {
    start_server
    otlp partial otel-partial
    assert_eq "status" 200 "$(jq -r .status <<<"$OTLP")"
    assert_eq "one rejected" 1 "$(jq -r .answer.partialSuccess.rejectedProfiles <<<"$OTLP")"
    assert_contains "why" "$(jq -r .answer.partialSuccess.errorMessage <<<"$OTLP")" "has no sample with a value"
    assert_contains "the other stored" "$(stored_folded otel-partial)" "main;foo;bar 30000000"
}

# Malformed requests are refused whole, with a JSON error naming the field;
# nothing of them is stored.
test_otlp_errors() {
    start_server --max-body 64k
    otlp bad-index otel-bad
    assert_eq "bad index: status" 400 "$(jq -r .status <<<"$OTLP")"
    assert_contains "bad index: named" "$(jq -r .answer.error <<<"$OTLP")" \
        "profiles[0].samples[3]: stack_index 99 is outside the stack table"
    get /api/v1/label/service/values
    assert_not_contains "nothing of it stored" "$BODY" "otel-bad"
    post /v1development/profiles -H 'Content-Type: text/plain' --data-binary 'x'
    assert_error "a wrong Content-Type" 415 "application/x-protobuf"
    post /v1development/profiles -H 'Content-Type: application/x-protobuf' --data-binary $'\x0a\xff\xff'
    assert_error "truncated protobuf" 400 "not a valid ExportProfilesServiceRequest"
    post /v1development/profiles -H 'Content-Type: application/json' --data-binary '{"resourceProfiles": [{"scopeProfiles": 3}]}'
    assert_error "JSON of the wrong shape" 400 "resourceProfiles[0].scopeProfiles: expected an array"
    post /v1development/profiles -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary 'plain'
    assert_error "not gzip" 400 "gzip"
    head -c 100000 /dev/zero | tr '\0' ' ' >"$IT_TMP/big.json"
    post /v1development/profiles -H 'Content-Type: application/json' --data-binary @"$IT_TMP/big.json"
    assert_status "over --max-body" 413
    get /api/v1/label/service/values
    assert_eq "nothing stored at all" '[]' "$(jq -c .values <<<"$BODY")"
}

# Sample attributes and the Link's trace and span ids (issue 11, point 5)
# are sample labels: invisible by default, selected by name, with the
# Link's ids as lower-case hex (span_id, trace_id).
test_otlp_sample_attributes_and_links() {
    start_server
    local case want
    otlp cpu-binary otel-plain
    want=$(stored_folded otel-plain)
    for case in labels labels-json; do
        otlp "$case" "otel-$case"
        assert_eq "$case: status" 200 "$(jq -r .status <<<"$OTLP")"
        assert_eq "$case: default answer unchanged" "$want" "$(stored_folded "otel-$case")"
        query "{service=\"otel-$case\",type=\"cpu\",span_id=\"9a517183f26a089d\"}" from=now-1h format=folded
        assert_eq "$case: the span's stack" "main;foo;bar 30000000" "$BODY"
        query "{service=\"otel-$case\",type=\"cpu\",trace_id=\"0af7651916cd43dd8448eb211c80319c\"}" from=now-1h \
            format=folded
        assert_eq "$case: the trace's stack" "main;foo;bar 30000000" "$BODY"
        query "{service=\"otel-$case\",type=\"cpu\",http.route=\"/api/users\"}" from=now-1h format=folded
        assert_eq "$case: an attribute by string index" "main;foo 20000000" "$BODY"
        query "{service=\"otel-$case\",type=\"cpu\",thread.name=\"worker\",retries=\"2\"}" from=now-1h format=folded
        assert_eq "$case: an inline string and an int" "main;foo;bar 30000000" "$BODY"
    done
    otlp bad-attribute otel-bad
    assert_eq "bad attribute index: 400" 400 "$(jq -r .status <<<"$OTLP")"
    assert_contains "bad attribute index: named" "$(jq -c .answer <<<"$OTLP")" "attribute_indices[0]"
}
