# test_pyroscope.sh — POST /ingest, the Pyroscope-compatible endpoint.

# pyro NAME QS BODY [curl args] — POST /ingest?name=NAME&QS
pyro() {
    local name=$1 qs=$2 body=$3
    shift 3
    post "/ingest?name=$(urlenc "$name")${qs:+&$qs}" --data-binary @- "$@" < <(printf '%s' "$body")
}

test_pyroscope_full_request() {
    start_server
    local t=$(( $(now) - 600 ))
    pyro 'app.cpu{env=prod,region=eu}' \
        "from=$t&until=$((t + 10))&sampleRate=100&spyName=gospy&units=samples&aggregationType=sum&format=folded" \
        $'main;work 10\nmain;idle 5\n'
    assert_status "pyroscope ingest" 200
    assert_json "answer" '"\(.samples) \(.stacks) \(.series) \(.truncated_stacks)"' '15 2 1 0'
    get /api/v1/series 'query=app{}' from=$((t - 60)) until=$((t + 60))
    assert_status "series" 200
    assert_json "labels from the name, spy from spyName" '.series[0].labels|tojson' \
        '{"env":"prod","region":"eu","service":"app","spy":"gospy","type":"cpu"}'
    assert_json "window start" '.series[0].first' $t
    query 'app{env="prod",region="eu",spy="gospy"}' from=$((t - 60)) until=$((t + 60))
    assert_json "rate weighting applies" '"\(.type) \(.unit) \(.total) \(.samples)"' 'cpu nanoseconds 150000000 15'
    assert_eq "tree" "<root> 0 150000000
main 0 150000000
main;work 100000000 100000000
main;idle 50000000 50000000" "$(tree_lines)"
}

test_pyroscope_name_unquoted_no_urlencoding() {
    # Clients commonly send the braces raw: curl -g keeps them as they are.
    start_server
    post '/ingest?name=raw.cpu{env=staging}' --data-binary 'a;b 2'
    assert_status "raw braces" 200
    get /api/v1/series 'query=raw{}'
    assert_json "labels" '.series[0].labels|tojson' '{"env":"staging","service":"raw","type":"cpu"}'
}

test_pyroscope_type_suffix_rules() {
    start_server
    pyro 'app.wall' '' $'a 1\n'
    assert_status "app.wall" 200
    pyro 'my.app.v2' '' $'a 2\n'
    assert_status "my.app.v2" 200
    pyro 'svc.alloc_space{pod=p1}' 'units=bytes' $'a 3\n'
    assert_status "svc.alloc_space" 200
    pyro 'plain' '' $'a 4\n'
    assert_status "no suffix" 200
    get /api/v1/series
    assert_json "series" '[.series[]|"\(.labels.service)/\(.labels.type)/\(.samples)"]|sort|join(",")' \
        'app/wall/1,my.app.v2/cpu/2,plain/cpu/4,svc/alloc_space/null'
    query '{service="svc"}'
    assert_json "bytes profile" '"\(.type) \(.unit) \(.total)"' 'alloc_space bytes 3'
    query '{service="app"}'
    assert_json "wall picked as the only type" '"\(.type) \(.total)"' 'wall 1'
}

test_pyroscope_spaces_and_empty_items_in_name() {
    start_server
    pyro 'sp.cpu{ env = prod , , zone=a }' '' $'a 1\n'
    assert_status "spaces and empty items" 200
    get /api/v1/series 'query=sp{}'
    assert_json "labels trimmed" '.series[0].labels|tojson' '{"env":"prod","service":"sp","type":"cpu","zone":"a"}'
}

test_pyroscope_pprof_garbage_rejected() {
    # format=pprof is supported since issue 6 (tests in test_pprof.sh); a
    # body that is not pprof is a 400 that says so, and stores nothing.
    start_server
    pyro 'app.cpu' 'format=pprof' 'not really pprof'
    assert_error "format=pprof" 400 "pprof" "valid raw profile.proto"
    get /api/v1/series
    assert_json "nothing stored" '.series|length' 0
}

test_pyroscope_format_lines_and_gzip() {
    start_server
    pyro 'ln.cpu' 'format=lines' $'a;b\na;b\na;c\n'
    assert_status "format=lines" 200
    assert_json "samples" '.samples' 3
    it_tmp
    printf 'a;b 10\n' | gzip -c >"$IT_TMP/p.gz"
    post "/ingest?name=ln.cpu" --data-binary @"$IT_TMP/p.gz" -H 'Content-Encoding: gzip'
    assert_status "gzip" 200
    assert_json "gzip samples" '.samples' 10
    query 'ln{}' format=folded
    assert_eq "merged" $'a;b 12\na;c 1' "$BODY"
}

test_pyroscope_sample_rate_zero_means_none() {
    start_server
    pyro 'z.cpu' 'sampleRate=0' $'a 7\n'
    assert_status "sampleRate=0" 200
    query 'z{}'
    assert_json "samples unit" '"\(.unit) \(.total)"' 'samples 7'
}

test_pyroscope_errors() {
    start_server
    post '/ingest' --data-binary 'a 1'
    assert_error "missing name" 400 "name"
    pyro '' '' 'a 1'
    assert_error "empty name" 400 "name"
    pyro 'app.cpu{env=prod' '' 'a 1'
    assert_error "missing }" 400 "name" "}"
    pyro 'app.cpu{bad-key=1}' '' 'a 1'
    assert_error "bad label key" 400 "bad-key"
    pyro 'app.cpu{env=}' '' 'a 1'
    assert_error "empty label value" 400 "env"
    pyro 'app.cpu' 'sampleRate=fast' 'a 1'
    assert_error "bad sampleRate" 400 "sampleRate"
    pyro 'app.cpu' 'aggregationType=median' 'a 1'
    assert_error "bad aggregationType" 400 "aggregationType"
    pyro 'app.cpu' 'format=xml' 'a 1'
    assert_error "unknown format" 400 "format" "folded" "lines"
    pyro 'app.cpu' 'from=tomorrow' 'a 1'
    assert_error "bad from" 400 "from"
    pyro 'app.cpu' '' $'a 1\nb x\n'
    assert_error "malformed line" 400 "line 2"
    get /ingest 'name=app.cpu'
    assert_status "GET /ingest" 405
    get /api/v1/series
    assert_json "nothing stored by any failed request" '.series|length' 0
}
