# test_ingest.sh — POST /api/v1/ingest: answers, labels, formats, gzip,
# windows, rate weighting, depth truncation, real data.

test_ingest_answer_and_tree() {
    start_server
    ingest 'service=app' $'a;b;c 12\na;b 3\nx 5\n'
    assert_status "ingest" 200
    assert_json "samples" '.samples' 20
    assert_json "stacks" '.stacks' 3
    assert_json "series" '.series' 1
    assert_json "truncated_stacks" '.truncated_stacks' 0

    query '{service="app"}'
    assert_status "query" 200
    assert_json "type" '.type' cpu
    assert_json "unit" '.unit' samples
    assert_json "total" '.total' 20
    assert_json "samples" '.samples' 20
    assert_json "profiles" '.profiles' 1
    assert_json "series" '.series' 1
    assert_json "other_types" '.other_types|length' 0
    assert_json "truncated" '.truncated|"\(.nodes) \(.total)"' "0 0"
    assert_json "answer members" '[(["type","unit","from","until","total","samples","profiles","series","other_types","truncated","tree"] - keys)[]]|join(",")' ""
    assert_json "node members" '.tree|keys|join(",")' "children,name,self,total"
    assert_eq "tree" "<root> 0 20
a 0 15
a;b 3 15
a;b;c 12 12
x 5 5" "$(tree_lines)"
}

test_ingest_labels_make_series() {
    start_server
    ingest 'service=shop&env=prod&region=eu' $'main;work 4\n'
    assert_status "ingest prod" 200
    ingest 'service=shop&env=dev&region=eu' $'main;work 6\n'
    assert_status "ingest dev" 200
    ingest 'service=shop&region=eu&env=prod' $'main;idle 1\n'
    assert_status "ingest prod again, params in another order" 200

    get /api/v1/series 'query={service="shop"}'
    assert_status "series" 200
    assert_json "series count" '.series|length' 2
    assert_json "prod series" '[.series[]|select(.labels.env=="prod")][0]|"\(.labels|tojson) \(.profiles) \(.samples) \(.total) \(.unit)"' \
        '{"env":"prod","region":"eu","service":"shop","type":"cpu"} 2 5 5 samples'
    assert_json "dev series" '[.series[]|select(.labels.env=="dev")][0]|"\(.profiles) \(.samples) \(.total)"' '1 6 6'

    get /api/v1/labels
    assert_status "labels" 200
    assert_json "labels" '[.labels[]|"\(.name)=\(.values)"]|join(",")' 'env=2,region=1,service=1,type=1'

    get /api/v1/label/env/values
    assert_status "env values" 200
    assert_json "env values" '.values|join(",")' 'dev,prod'
}

test_ingest_type_label_defaults_to_cpu() {
    start_server
    ingest 'service=t' $'f 1\n'
    assert_status "default type" 200
    ingest 'service=t&type=wall' $'f 2\n'
    assert_status "type=wall" 200
    get /api/v1/label/type/values 'query={service="t"}'
    assert_json "types" '.values|join(",")' 'cpu,wall'
    query '{service="t",type="wall"}'
    assert_json "wall type" '.type' wall
    assert_json "wall total" '.total' 2
    query '{service="t",type="cpu"}'
    assert_json "cpu total" '.total' 1
}

test_ingest_gzip_body() {
    start_server
    it_tmp
    printf 'main;a 7\nmain;b 3\n' | gzip -c >"$IT_TMP/body.gz"
    ingest_file 'service=gz' "$IT_TMP/body.gz" -H 'Content-Encoding: gzip'
    assert_status "gzip ingest" 200
    assert_json "samples" '.samples' 10
    assert_json "stacks" '.stacks' 2
    query 'gz{}' format=folded
    assert_status "folded" 200
    assert_eq "folded after gzip" $'main;a 7\nmain;b 3' "$BODY"
}

test_ingest_count_split_at_last_space() {
    start_server
    ingest 'service=sp' $'java main;std::vector<int> foo(int a, int b) 7\nfn with spaces 2\n'
    assert_status "frames with spaces" 200
    assert_json "samples" '.samples' 9
    assert_json "stacks" '.stacks' 2
    query 'sp{}' format=folded
    assert_eq "frames kept with their spaces" \
        $'fn with spaces 2\njava main;std::vector<int> foo(int a, int b) 7' "$BODY"
    query 'sp{}'
    assert_json "root frame with spaces" '[.tree.children[].name]|join("|")' 'java main|fn with spaces'
    assert_json "leaf frame" '.tree.children[0].children[0].name' 'std::vector<int> foo(int a, int b)'
}

test_ingest_crlf_and_blank_lines() {
    start_server
    ingest 'service=crlf' $'\r\na;b 1\r\n\r\n\n   \na;c 2\r\n\n'
    assert_status "CRLF + blank lines" 200
    assert_json "samples" '.samples' 3
    assert_json "stacks" '.stacks' 2
    query 'crlf{}' format=folded
    assert_eq "no \\r kept in frames" $'a;b 1\na;c 2' "$BODY"
}

test_ingest_format_lines() {
    start_server
    ingest 'service=ln&format=lines' $'a;b\na;c\na;b\n\na;b\r\n'
    assert_status "format=lines" 200
    assert_json "samples" '.samples' 4
    query 'ln{}'
    assert_eq "tree of lines" "<root> 0 4
a 0 4
a;b 3 3
a;c 1 1" "$(tree_lines)"
    ingest 'service=ln&format=folded' $'a;c 5\n'
    assert_status "format=folded explicit" 200
    query 'ln{}' format=folded
    assert_eq "folded" $'a;b 3\na;c 6' "$BODY"
}

test_ingest_empty_body_ok() {
    start_server
    ingest 'service=empty' ''
    assert_status "empty body" 200
    assert_json "samples" '.samples' 0
    assert_json "stacks" '.stacks' 0
}

test_ingest_same_window_twice_accumulates() {
    start_server
    local t=$(( $(now) - 1200 ))
    ingest "service=dup&from=$t&until=$((t + 10))" $'a 3\n'
    assert_status "first" 200
    ingest "service=dup&from=$t&until=$((t + 10))" $'a 4\nb 1\n'
    assert_status "second, same series and window" 200
    query 'dup{}' from=$((t - 60)) until=$((t + 60))
    assert_json "both profiles kept" '"\(.total) \(.profiles)"' '8 2'
    assert_eq "tree" "<root> 0 8
a 7 7
b 1 1" "$(tree_lines)"
}

# Spec example: a count 10 at 100 Hz and b count 10 at 50 Hz.
test_ingest_rate_weighting_same_series() {
    start_server
    ingest 'service=rw&rate=100' $'a 10\n'
    assert_status "rate 100" 200
    ingest 'service=rw&rate=50' $'b 10\n'
    assert_status "rate 50" 200
    query 'rw{}'
    assert_json "unit" '.unit' nanoseconds
    assert_json "total" '.total' 300000000
    assert_json "samples (raw counts)" '.samples' 20
    assert_json "series" '.series' 1
    assert_json "profiles" '.profiles' 2
    assert_eq "weighted tree" "<root> 0 300000000
b 200000000 200000000
a 100000000 100000000" "$(tree_lines)"
    query 'rw{}' format=folded
    assert_eq "weighted folded" $'a 100000000\nb 200000000' "$BODY"
}

test_ingest_rate_weighting_two_series() {
    start_server
    ingest 'service=rw2&host=h1&rate=100' $'a 10\n'
    ingest 'service=rw2&host=h2&rate=50' $'b 10\n'
    query 'rw2{}'
    assert_json "unit" '.unit' nanoseconds
    assert_json "series" '.series' 2
    assert_json "a" '.tree.children[]|select(.name=="a")|.total' 100000000
    assert_json "b" '.tree.children[]|select(.name=="b")|.total' 200000000
    get /api/v1/series 'query=rw2{}'
    assert_json "series totals" '[.series[]|"\(.labels.host):\(.samples):\(.total):\(.unit)"]|sort|join(",")' \
        'h1:10:100000000:nanoseconds,h2:10:200000000:nanoseconds'
    # round(1e9/rate): 1e9/3 = 333333333.33 -> 333333333 ns per sample
    ingest 'service=rw3&rate=3' $'c 3\n'
    query 'rw3{}'
    assert_json "rounded weight" '"\(.unit) \(.total)"' 'nanoseconds 999999999'
}

test_ingest_fractional_rate_and_weight_limit() {
    start_server
    # round(1e9 / 99.5) = round(10050251.256) = 10050251
    ingest 'service=fr&rate=99.5' $'a 2\n'
    assert_status "rate 99.5" 200
    query 'fr{}'
    assert_json "fractional rate weight" '"\(.unit) \(.total)"' 'nanoseconds 20100502'
    # at 1 Hz a sample weighs 1e9 ns: counts above (2^53-1)/1e9 = 9007199 cannot be exact
    ingest 'service=fr2&rate=1' $'a 9007199\n'
    assert_status "largest exact weighted count" 200
    ingest 'service=fr3&rate=1' $'a 9007200\n'
    assert_error "weighted count beyond 2^53" 400 "9007200"
    query 'fr2{}'
    assert_json "weighted total" '.total' 9007199000000000
}

test_ingest_without_rate_stays_samples() {
    start_server
    ingest 'service=nr' $'a 10\nb 10\n'
    query 'nr{}'
    assert_json "unit" '.unit' samples
    assert_json "total" '.total' 20
}

test_ingest_custom_unit() {
    start_server
    ingest 'service=mem&type=alloc_space&unit=bytes' $'main;malloc 4096\n'
    assert_status "unit=bytes" 200
    query 'mem{}'
    assert_json "type" '.type' alloc_space
    assert_json "unit" '.unit' bytes
    assert_json "total" '.total' 4096
    # a rate does not turn bytes into nanoseconds
    ingest 'service=mem2&unit=bytes&rate=100' $'x 5\n'
    assert_status "bytes with rate" 200
    query 'mem2{}'
    assert_json "bytes with rate" '"\(.unit) \(.total)"' 'bytes 5'
}

test_ingest_window_defaults() {
    start_server
    local until=$(( $(now) - 300 ))
    ingest "service=win&until=$until" $'a 1\n'
    assert_status "only until" 200
    get /api/v1/series 'query=win{}' from=now-1h until=now
    assert_json "from defaults to until-10s" '.series[0].first' $((until - 10))

    local t0 t1 first
    t0=$(now)
    ingest 'service=win2' $'a 1\n'
    t1=$(now)
    assert_status "no window" 200
    query 'win2{}'
    assert_json "visible to the default query range" '.total' 1
    get /api/v1/series 'query=win2{}'
    first=$(jqb '.series[0].first|floor')
    assert_ge "default window start >= t0-11" $((t0 - 11)) "$first"
    assert_le "default window start <= t1-9" $((t1 - 9)) "$first"
}

test_ingest_time_formats() {
    start_server
    local t=$(( $(now) - 7200 )) rfc rfc_off
    rfc=$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)
    rfc_off=$(TZ=Etc/GMT-2 date -d "@$((t + 100))" +%Y-%m-%dT%H:%M:%S+02:00)
    ingest "service=tf&k=rfc&from=$rfc&until=$((t + 10))" $'a 1\n'
    assert_status "RFC3339 from" 200
    ingest "service=tf&k=off&from=$(urlenc "$rfc_off")&until=$((t + 110))" $'a 1\n'
    assert_status "RFC3339 with offset" 200
    ingest "service=tf&k=frac&from=$((t + 200)).5&until=$((t + 210))" $'a 1\n'
    assert_status "fractional unix seconds" 200
    ingest "service=tf&k=rel&from=now-2h&until=now-2h" $'a 1\n'
    assert_status "from == until" 400
    ingest "service=tf&k=rel&from=now-3h&until=now-2h" $'a 1\n'
    assert_status "now-3h .. now-2h" 200
    get /api/v1/series 'query=tf{}' from=now-4h until=now
    assert_json "rfc first" '.series[]|select(.labels.k=="rfc")|.first' $t
    assert_json "offset first" '.series[]|select(.labels.k=="off")|.first' $((t + 100))
    assert_json "fractional first" '.series[]|select(.labels.k=="frac")|.first' "$((t + 200)).5"
    local rel
    rel=$(jqb '.series[]|select(.labels.k=="rel")|.first|floor')
    assert_ge "now-3h start" $(( $(now) - 3 * 3600 - 5 )) "$rel"
    assert_le "now-3h start" $(( $(now) - 3 * 3600 + 5 )) "$rel"
}

# A profile belongs to [from, until) by its window start.
test_ingest_window_start_decides_membership() {
    start_server
    local t=$(( $(now) - 1800 ))
    ingest "service=mb&from=$t&until=$((t + 10))" $'a 1\n'
    assert_status "ingest" 200
    query 'mb{}' from=$t until=$((t + 1))
    assert_json "start == from is in" '.total' 1
    query 'mb{}' from=$((t - 100)) until=$t
    assert_json "start == until is out" '.total' 0
    query 'mb{}' from=$((t + 1)) until=$((t + 100))
    assert_json "window overlapping but started before from is out" '.total' 0
    get /api/v1/series 'query=mb{}' from=$((t + 1)) until=$((t + 100))
    assert_json "series outside range not listed" '.series|length' 0
    get /api/v1/labels 'query=mb{}' from=$((t + 1)) until=$((t + 100))
    assert_json "labels outside range not listed" '.labels|length' 0
}

test_ingest_deep_stack_truncated() {
    start_server
    it_tmp
    local stack
    stack=$(seq -f 'f%g' 0 1099 | paste -sd ';')
    printf '%s 3\nshort;leaf 2\n' "$stack" >"$IT_TMP/deep.folded"
    ingest_file 'service=deep' "$IT_TMP/deep.folded"
    assert_status "1100-frame stack" 200
    assert_json "truncated_stacks" '.truncated_stacks' 1
    assert_json "samples" '.samples' 5
    query 'deep{}' format=folded max_nodes=0
    local want
    want=$(seq -f 'f%g' 76 1099 | paste -sd ';')
    assert_eq "1024 leaf-most frames kept" "$want 3" "$(grep -v '^short' <<<"$BODY")"
    assert_eq "depth" 1024 "$(grep -v '^short' <<<"$BODY" | sed 's/ [0-9]*$//' | tr ';' '\n' | wc -l)"
    query 'deep{}' max_nodes=0
    assert_status "deep tree as JSON" 200
    assert_json "nodes in the JSON tree" '[.tree|recurse(.children[])]|length' 1027
    assert_json "deepest leaf" '[.tree|recurse(.children[])|select(.children==[])|"\(.name) \(.self)"]|sort|join(",")' 'f1099 3,leaf 2'
    # exactly 1024 frames are not truncated
    stack=$(seq -f 'g%g' 1 1024 | paste -sd ';')
    ingest 'service=deep2' "$stack 1"
    assert_status "1024 frames" 200
    assert_json "1024 frames not truncated" '.truncated_stacks' 0
}

test_ingest_label_limits() {
    start_server
    local qs='service=lim&type=cpu' i
    for i in $(seq 1 30); do qs+="&l$i=v$i"; done
    ingest "$qs" $'a 1\n'
    assert_status "32 labels" 200
    get /api/v1/series 'query=lim{}'
    assert_json "32 labels stored" '.series[0].labels|length' 32
    ingest 'service=dots&k8s.pod_name=p-1&_x=y' $'a 1\n'
    assert_status "label names with dots and underscores" 200
    ingest "service=utf&city=$(urlenc 'Zürich 東京')" $'a 1\n'
    assert_status "UTF-8 label value" 200
    get /api/v1/label/city/values
    assert_json "UTF-8 value" '.values[0]' 'Zürich 東京'
}

test_ingest_unicode_frames() {
    start_server
    ingest 'service=uni' $'main;naïve_函数;λ 4\n'
    assert_status "UTF-8 frames" 200
    query 'uni{}' format=folded
    assert_eq "UTF-8 frames round trip" $'main;naïve_函数;λ 4' "$BODY"
}

# The real profile: 8,873 samples in 1,074 stacks; the folded answer is the
# input summed per stack (lossless round trip).
test_ingest_real_data_roundtrip() {
    need_system_mix
    start_server
    ingest_file 'service=system&host=deb' "$SYSTEM_MIX"
    assert_status "ingest system-mix" 200
    assert_json "samples" '.samples' 8873
    assert_json "stacks" '.stacks' 1074
    assert_json "truncated" '.truncated_stacks' 0
    query 'system{}'
    assert_status "query" 200
    assert_json "total" '.total' 8873
    assert_json "root total" '.tree.total' 8873
    assert_json "sum of root children" '[.tree.children[].total]|add' 8873
    assert_json "not truncated" '.truncated.nodes' 0
    # children sorted by total desc, then name, at every level
    assert_json "children order" '[.tree|recurse(.children[])|.children|
        [range(1;length) as $i | (.[$i-1].total > .[$i].total) or
          (.[$i-1].total == .[$i].total and .[$i-1].name <= .[$i].name)]|all]|all' true
    assert_json "total = self + children" '[.tree|recurse(.children[])|.total == .self + ([.children[].total]|add // 0)]|all' true
    query 'system{}' format=folded
    assert_status "folded" 200
    it_tmp
    printf '%s\n' "$BODY" >"$IT_TMP/out.folded"
    assert_eq "folded lines sorted by stack" "" \
        "$(sed 's/ [0-9]*$//' "$IT_TMP/out.folded" | LC_ALL=C sort -c 2>&1)"
    if ! diff <(fold_canon "$SYSTEM_MIX") <(fold_canon "$IT_TMP/out.folded") >"$IT_TMP/diff"; then
        fail "folded round trip differs from the input (first lines of diff):"
        head -10 "$IT_TMP/diff" | sed 's/^/      /' >>"$IT_FAILS"
    fi
    assert_eq "distinct stacks out" 1074 "$(wc -l <"$IT_TMP/out.folded")"
}

# A profile already older than the retention would be stored and deleted a
# minute later: 400 saying so, nothing stored (issue 12).
test_ingest_older_than_retention_refused() {
    start_server --retention 1h
    local t=$(( $(now) - 7200 ))
    ingest "service=old&from=$t&until=$((t + 10))" $'main;a 1\n'
    assert_error "folded, 2 h old" 400 "retention (3600 s)" "$t"
    post "/ingest?name=old2&format=pprof&from=$t&until=$((t + 10))" --data-binary @"$REPO/../shared/data/go-json-sort.cpu.pb.gz"
    assert_error "pprof, 2 h old" 400 "retention"
    ingest "service=new&from=$((t + 5400))&until=$((t + 5410))" $'main;a 1\n'
    assert_status "half an hour old: kept" 200
    get /api/v1/series 'query={}' from=now-1d
    assert_json "only the new one stored" '[.series[].labels.service]|join(",")' 'new'
}

# %00 in a parameter used to cut a label value short, silently (issue 12).
test_ingest_nul_in_parameters_refused() {
    start_server
    ingest "service=api%00x&instance=i-1" $'main;a 1\n'
    assert_error "NUL in a label value" 400 "parameter 'service'" "NUL"
    ingest "service=api&env=prod%00" $'main;a 1\n'
    assert_error "NUL at the end" 400 "parameter 'env'" "NUL"
    _curl GET "$BASE/api/v1/query?query=%7Bservice%3D%22a%00%22%7D"
    assert_error "NUL in a selector" 400 "parameter 'query'" "NUL"
    get /api/v1/series 'query={}' from=now-1d
    assert_json "nothing stored" '.series|length' '0'
}
