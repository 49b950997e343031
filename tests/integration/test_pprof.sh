# test_pprof.sh — pprof in (POST /ingest and /api/v1/ingest with
# format=pprof) and out (GET /api/v1/query?format=pprof), checked against
# `go tool pprof` on profiles written by real producers: a Go program using
# runtime/pprof, built and run here, and a Go CPU profile from shared/data.

GOCPU_SRC="$REPO/tests/fixtures/gocpu/main.go"
GO_JSON_SORT="$REPO/../shared/data/go-json-sort.cpu.pb.gz"

# Go's caches live in the test's temp dir: nothing depends on $HOME, and no
# network is used (standard library only).
go_env() {
    it_tmp
    export GOCACHE="$IT_TMP/gocache" GOPATH="$IT_TMP/gopath" GOPROXY=off GOTOOLCHAIN=local GOFLAGS= \
        PPROF_TMPDIR="$IT_TMP/pprof" HOME="$IT_TMP"
    command -v go >/dev/null || die "go is not installed (make deps installs golang-go)"
}

# Builds and runs the Go producer: writes its CPU profile to $1.
go_cpu_profile() {
    go_env
    go build -o "$IT_TMP/gocpu" "$GOCPU_SRC" 2>"$IT_TMP/gobuild.err" ||
        die "go build failed: $(head -c 600 "$IT_TMP/gobuild.err")"
    "$IT_TMP/gocpu" "$1" || die "the Go producer failed"
    [ -s "$1" ] || die "the Go producer wrote no profile"
}

# pprof_top FILE [pprof flags] — "name flat cum" per function of
# `go tool pprof -top -nodecount=10`, values as integers (ns with -unit=ns).
pprof_top() {
    local file=$1
    shift
    go tool pprof -top -nodecount=10 "$@" "$file" 2>/dev/null | awk '
        started { name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", name); sub(/ \(inline\)$/, "", name);
                  f = $1; c = $4; sub(/ns$/, "", f); sub(/ns$/, "", c); print name "\t" f "\t" c }
        /^ *flat +flat%/ { started = 1 }'
}

# pprof_total FILE [pprof flags] — the "of N total" figure, as an integer.
pprof_total() {
    local file=$1
    shift
    go tool pprof -top -nodecount=1 "$@" "$file" 2>/dev/null |
        sed -n 's/.* of \([0-9][0-9]*\)\(ns\)\{0,1\} total.*/\1/p' | head -1
}

# check_against_pprof FILE SELECTOR [pprof flags] — the query's total and
# per-function self/total equal pprof's total and flat/cum for pprof's top 10.
check_against_pprof() {
    local file=$1 sel=$2
    shift 2
    local want_total top n=0 name flat cum
    want_total=$(pprof_total "$file" "$@")
    [ -n "$want_total" ] || die "go tool pprof could not read $file"
    get /api/v1/top "query=$sel" from=now-30d until=now limit=0
    assert_status "top of $sel" 200
    assert_json "total equals go tool pprof's" '.total' "$want_total"
    top=$BODY
    while IFS=$'\t' read -r name flat cum; do
        [ -n "$name" ] || continue
        n=$((n + 1))
        BODY=$top
        assert_json "self of $name equals pprof's flat" \
            "[.functions[]|select(.name==\"$name\")|.self]|first" "$flat"
        assert_json "total of $name equals pprof's cum" \
            "[.functions[]|select(.name==\"$name\")|.total]|first" "$cum"
    done < <(pprof_top "$file" "$@")
    assert_ge "functions compared" 3 "$n"
    # the first of pprof's top is the first of ours (by self)
    local first
    first=$(pprof_top "$file" "$@" | head -1 | cut -f1)
    BODY=$top
    assert_json "top function" '.functions[0].name' "$first"
}

test_pprof_go_producer_pyroscope_endpoint() {
    it_tmp
    go_cpu_profile "$IT_TMP/cpu.pb.gz"
    start_server
    local t0
    t0=$(now)
    post '/ingest?name=gocpu.cpu%7Benv%3Dtest%7D&format=pprof&spyName=gospy' \
        -H 'Content-Type: application/octet-stream' --data-binary @"$IT_TMP/cpu.pb.gz"
    assert_status "pprof push" 200
    assert_json "one profile per sample type" '[.profiles[]|"\(.type)/\(.unit)"]|sort|join(",")' \
        'cpu/nanoseconds,samples/count'
    assert_json "series" '.series' 2
    get /api/v1/series 'query=gocpu{}'
    assert_json "labels: type from the sample type, env from the name" \
        '[.series[]|.labels|"\(.service) \(.type) \(.env) \(.spy)"]|sort|join(",")' \
        'gocpu cpu test gospy,gocpu samples test gospy'
    # window from time_nanos (when the Go program started profiling)
    local first
    first=$(jqb '.series[0].first|floor')
    assert_ge "window start" $((t0 - 120)) "$first"
    assert_le "window start" "$t0" "$first"
    check_against_pprof "$IT_TMP/cpu.pb.gz" 'gocpu{type="cpu"}' -unit=ns
    check_against_pprof "$IT_TMP/cpu.pb.gz" 'gocpu{type="samples"}' -sample_index=samples
    query 'gocpu{type="cpu"}' from=now-1h
    assert_json "unit" '"\(.type) \(.unit)"' 'cpu nanoseconds'
}

test_pprof_real_profile_native_endpoint() {
    go_env
    [ -r "$GO_JSON_SORT" ] || die "real data file missing: $GO_JSON_SORT"
    start_server
    local t=$(( $(now) - 300 ))
    post "/api/v1/ingest?service=gojson&host=h1&format=pprof&from=$t&until=$((t + 10))" \
        --data-binary @"$GO_JSON_SORT"
    assert_status "pprof push" 200
    get /api/v1/series 'query=gojson{}'
    assert_json "series" '[.series[]|"\(.labels.type) \(.labels.host) \(.first) \(.unit)"]|sort|join(",")' \
        "cpu h1 $t nanoseconds,samples h1 $t count"
    check_against_pprof "$GO_JSON_SORT" 'gojson{type="cpu"}' -unit=ns
    # inlined frames become frames of their own, caller first
    query 'gojson{type="cpu"}' format=folded
    assert_contains "inlined frames" "$BODY" "runtime.spanOf"
}

test_pprof_raw_and_multipart() {
    go_env
    start_server
    gzip -dc "$GO_JSON_SORT" >"$IT_TMP/raw.pb"
    local t=$(( $(now) - 300 ))
    post "/api/v1/ingest?service=raw&format=pprof&from=$t&until=$((t + 10))" --data-binary @"$IT_TMP/raw.pb"
    assert_status "uncompressed profile.proto" 200
    check_against_pprof "$GO_JSON_SORT" 'raw{type="cpu"}' -unit=ns
    # what Pyroscope's SDKs send: multipart/form-data
    printf '{"cpu":{"units":"nanoseconds","aggregation":"sum"}}' >"$IT_TMP/stc.json"
    post "/ingest?name=mp.cpu%7Bpod%3Dp1%7D&format=pprof&from=$t&until=$((t + 10))" \
        -F "profile=@$GO_JSON_SORT;type=application/octet-stream" -F "prev_profile=@$GO_JSON_SORT" \
        -F "sample_type_config=@$IT_TMP/stc.json"
    assert_status "multipart push" 200
    check_against_pprof "$GO_JSON_SORT" 'mp{type="cpu",pod="p1"}' -unit=ns
    post "/ingest?name=mp2&format=pprof" -F "sample_type_config=@$IT_TMP/stc.json"
    assert_error "multipart without profile" 400 "'profile'"
}

# A file's sample types share their stacks: the server resolves the shared
# ones once, from the first type's (ingest_handlers.c: shared_leaves), and
# the others alone.  Types with zeros in different samples, pushed twice
# into one window (the second time every stack is known), keep exactly
# their own stacks and sums.
test_pprof_sample_types_sharing_stacks() {
    it_tmp
    cat >"$IT_TMP/spec.json" <<'SPEC'
{"types": [["samples", "count"], ["cpu", "nanoseconds"], ["alloc", "bytes"]], "no_labels": true,
 "samples": [
  {"stack": "main;work", "values": [10, 100, 0]},
  {"stack": "main;idle", "values": [0, 70, 7]},
  {"stack": "main;io;read", "values": [3, 0, 30]},
  {"stack": "main;work;deep", "values": [1, 2, 4]}
 ]}
SPEC
    python3 "$REPO/tests/integration/pprof_labels.py" "$IT_TMP/spec.json" "$IT_TMP/types.pb" || die "pprof_labels.py failed"
    start_server
    local t=$(( $(now) - 300 )) i
    for i in 1 2; do
        ingest_file "service=shared&format=pprof&from=$t&until=$((t + 10))" "$IT_TMP/types.pb"
        assert_status "push $i" 200
    done
    query '{service="shared",type="samples"}' from=$((t - 10)) until=$((t + 20)) format=folded
    assert_status "samples" 200
    [ "$(fold_canon <<<"$BODY")" = $'main;io;read 6\nmain;work 20\nmain;work;deep 2' ] || fail "samples: $BODY"
    query '{service="shared",type="cpu"}' from=$((t - 10)) until=$((t + 20)) format=folded
    [ "$(fold_canon <<<"$BODY")" = $'main;idle 140\nmain;work 200\nmain;work;deep 4' ] || fail "cpu: $BODY"
    query '{service="shared",type="alloc"}' from=$((t - 10)) until=$((t + 20)) format=folded
    [ "$(fold_canon <<<"$BODY")" = $'main;idle 14\nmain;io;read 60\nmain;work;deep 8' ] || fail "alloc: $BODY"
}

test_pprof_bad_bodies_store_nothing() {
    start_server --max-body 1m
    it_tmp
    head -c 3000 /dev/urandom >"$IT_TMP/garbage"
    post "/api/v1/ingest?service=bad&format=pprof" --data-binary @"$IT_TMP/garbage"
    assert_error "garbage" 400 "pprof body"
    gzip -dc "$GO_JSON_SORT" | head -c 5000 >"$IT_TMP/trunc.pb"
    post "/api/v1/ingest?service=bad&format=pprof" --data-binary @"$IT_TMP/trunc.pb"
    assert_error "truncated profile.proto" 400 "pprof body"
    head -c 3000 "$GO_JSON_SORT" >"$IT_TMP/trunc.gz"
    post "/api/v1/ingest?service=bad&format=pprof" --data-binary @"$IT_TMP/trunc.gz"
    assert_error "truncated gzip" 400 "pprof body"
    gzip -c "$IT_TMP/trunc.pb" >"$IT_TMP/trunc.pb.gz"
    post "/ingest?name=bad&format=pprof" --data-binary @"$IT_TMP/trunc.pb.gz"
    assert_error "gzip'd truncated profile" 400 "pprof body" "gunzipped"
    post "/api/v1/ingest?service=bad&format=pprof" --data-binary ''
    assert_error "empty body" 400 "no sample types"
    # 64 MiB of zeros gzip'd to ~64 KiB: refused after 1 MiB of output
    head -c 64m /dev/zero | gzip -c >"$IT_TMP/bomb.gz"
    post "/api/v1/ingest?service=bad&format=pprof" --data-binary @"$IT_TMP/bomb.gz"
    assert_status "gzip bomb" 413
    post "/ingest?name=bad&format=pprof" -H 'Content-Type: application/octet-stream' --data-binary @"$IT_TMP/bomb.gz"
    assert_status "gzip bomb on /ingest" 413
    post "/api/v1/ingest?format=pprof" --data-binary @"$GO_JSON_SORT"
    assert_error "no service" 400 "service"
    get /api/v1/series from=now-30d
    assert_json "nothing stored" '.series|length' 0
    get /healthz
    assert_status "server alive" 200
}

test_pprof_export_round_trip() {
    it_tmp
    go_cpu_profile "$IT_TMP/cpu.pb.gz"
    start_server
    post '/ingest?name=rt.cpu&format=pprof' --data-binary @"$IT_TMP/cpu.pb.gz"
    assert_status "push" 200
    local t=$(( $(now) - 120 ))
    ingest "service=rt&type=cpu&unit=nanoseconds&from=$t&until=$((t + 10))" $'main;a;b 7000000\nmain;a;a;b 3000000\nmain;c 1000000\n'
    assert_status "folded push" 200
    query 'rt{type="cpu"}' from=now-1h
    local total
    total=$(jqb .total)
    get /api/v1/query 'query=rt{type="cpu"}' from=now-1h format=pprof
    assert_status "pprof export" 200
    assert_eq "content type" "application/octet-stream" "$(header Content-Type)"
    cp "$BODY_FILE" "$IT_TMP/export.pb.gz"
    assert_eq "gzip magic" "1f8b" "$(head -c 2 "$IT_TMP/export.pb.gz" | od -An -tx1 | tr -d ' \n')"
    go_env
    assert_eq "go tool pprof total equals the query's" "$total" "$(pprof_total "$IT_TMP/export.pb.gz" -unit=ns)"
    check_against_pprof "$IT_TMP/export.pb.gz" 'rt{type="cpu"}' -unit=ns
    go tool pprof -top "$IT_TMP/export.pb.gz" 2>/dev/null | grep -q '^Type: cpu' || fail "pprof type should be cpu"
    # a samples profile exports as count; recursion counts once in cum
    ingest "service=cnt&from=$t&until=$((t + 10))" $'main;a;b 7\nmain;a;a;b 3\nmain;c 1\n'
    get /api/v1/query 'query=cnt{}' from=now-1h format=pprof
    cp "$BODY_FILE" "$IT_TMP/cnt.pb.gz"
    assert_eq "count total" 11 "$(pprof_total "$IT_TMP/cnt.pb.gz")"
    assert_eq "cum of a counts a recursive sample once" "a	0	10" \
        "$(pprof_top "$IT_TMP/cnt.pb.gz" | awk -F'\t' '$1 == "a"')"
    get /api/v1/query 'query=cnt{}' format=pprof group_by=service
    assert_error "group_by with pprof" 400 "group_by"
}

# Frames with lines (issue 15): a Go profile pushed in keeps file, line and
# mapping per frame; its pprof export shows the same lines to `go tool pprof
# -lines` (but for pprof's "(inline)" marks: each inlined line is a frame of
# its own here) and `-list` prints the source lines with their values.  The
# JSON tree merges by function unless lines=1.
test_pprof_lines_kept_and_exported() {
    go_env
    start_server
    local t=$(( $(now) - 300 ))
    post "/ingest?name=ln&format=pprof&from=$t&until=$((t + 10))" --data-binary @"$GO_JSON_SORT"
    assert_status "push" 200
    get /api/v1/query 'query=ln{type="cpu"}' from=now-1h format=pprof
    assert_status "pprof export" 200
    cp "$BODY_FILE" "$IT_TMP/lines.pb.gz"
    local want got
    want=$(go tool pprof -top -lines -nodecount=40 "$GO_JSON_SORT" 2>/dev/null | sed -n '/flat%/,$p' | sed 's/ (inline)$//')
    got=$(go tool pprof -top -lines -nodecount=40 "$IT_TMP/lines.pb.gz" 2>/dev/null | sed -n '/flat%/,$p')
    assert_contains "pprof -lines lists files and lines" "$got" "runtime/mheap.go:656"
    assert_eq "go tool pprof -top -lines: the pushed profile's lines" "$want" "$got"
    if [ -r /usr/lib/go-1.19/src/runtime/mheap.go ]; then
        got=$(go tool pprof -list 'runtime.spanOf' "$IT_TMP/lines.pb.gz" 2>/dev/null)
        assert_contains "go tool pprof -list shows the source line with its value" "$got" "140ms      140ms    656:"
    fi
    # JSON: by function by default (as before), locations with lines=1
    query 'ln{type="cpu"}' from=now-1h max_nodes=0
    assert_json "no file without lines=1" '[.tree|..|objects|select(has("file"))]|length' '0'
    assert_json "spanOf is one node per call path" \
        '[.tree|..|objects|select(.name=="runtime.spanOf")]|length' \
        "$(jqb '[.tree|..|objects|select(.name=="runtime.spanOf")]|length')"
    local by_function
    by_function=$(jqb '[.tree|..|objects|select(.name=="runtime.spanOf")|.self]|add')
    query 'ln{type="cpu"}' from=now-1h max_nodes=0 lines=1
    assert_json "lines=1: spanOf's two lines" \
        '[.tree|..|objects|select(.name=="runtime.spanOf")]|group_by(.line)
         |map("\(.[0].file|split("/")|last):\(.[0].line)=\(map(.self)|add)")|join(",")' \
        'mheap.go:655=100000000,mheap.go:656=140000000'
    assert_json "the same total" '[.tree|..|objects|select(.name=="runtime.spanOf")|.self]|add' "$by_function"
    assert_json "a mapping" '[.tree|..|objects|select(has("mapping"))]|length > 0' 'true'
    query 'ln{type="cpu"}' from=now-1h format=folded lines=1
    assert_error "lines with folded" 400 "'lines'" "folded"
    query 'ln{type="cpu"}' from=now-1h format=folded
    assert_not_contains "folded has names only" "$BODY" $'\x1f'
    # the separator of a location is refused in folded text...
    ingest "service=bad" $'main;a\x1fb 1\n'
    assert_error "U+001F in a frame" 400 "line 1" "U+001F" "locations=1"
    # ...unless the pusher says its frames carry locations (an agent that
    # knows lines): name US file US line [US mapping US build id]
    ingest "service=fl&locations=1&from=$t&until=$((t + 10))" \
        $'main\x1fmain.c\x1f10;work\x1fwork.c\x1f42\x1f/bin/app\x1fab12 5\nmain\x1fmain.c\x1f10;work\x1fwork.c\x1f43 2\n'
    assert_status "located folded" 200
    query 'fl{}' from=now-1h
    assert_json "by function" '[.tree|..|objects|select(.name=="work")|.self]|join(",")' '7'
    query 'fl{}' from=now-1h lines=1
    assert_json "by line" '[.tree|..|objects|select(.name=="work")|"\(.file):\(.line)=\(.self)"]|sort|join(",")' \
        'work.c:42=5,work.c:43=2'
    assert_json "mapping and build id" '[.tree|..|objects|select(.line==42)|"\(.mapping) \(.build_id)"]|first' '/bin/app ab12'
    ingest "service=fl&locations=1" $'main\x1fmain.c\x1fx 1\n'
    assert_error "a line that is not a number" 400 "line 1" "frame 1" "not a number"
    ingest "service=fl&locations=1" $'\x1fmain.c\x1f1 1\n'
    assert_error "a location without a name" 400 "no name"
    ingest "service=fl&locations=1" $'m\x1fa\x1f1\x1fb\x1fc\x1fd 1\n'
    assert_error "too many fields" 400 "more than 4"
    ingest "service=fl&locations=yes" $'m 1\n'
    assert_error "locations=yes" 400 "'locations'"
}
