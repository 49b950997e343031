# test_analysis_delete.sh — DELETE /api/v1/series: what it removes (the
# matching series, every profile, any time), what it leaves, its refusals,
# and that the deletion survives a restart.

# del [name=value ...] — DELETE /api/v1/series with url-encoded params.
del() {
    local kv args=(-G)
    for kv in "$@"; do args+=(--data-urlencode "$kv"); done
    _curl DELETE "$BASE/api/v1/series" "${args[@]}"
}

series_list() {
    get /api/v1/series from=now-1d
    assert_status "series" 200
    jqb '[.series[]|"\(.labels|to_entries|map("\(.key)=\(.value)")|join(","))/\(.profiles)"]|sort|join(" ")'
}

test_delete_series() {
    start_server
    local old=$(( $(now) - 7200 ))
    put "service=del&env=a&from=$old&until=$((old + 10))" $'x 1\n'
    put 'service=del&env=a' $'x 1\n'
    put 'service=del&env=b' $'y 2\n'
    put 'service=keep&env=a' $'z 4\n'
    assert_eq "before" 'env=a,service=del,type=cpu/2 env=a,service=keep,type=cpu/1 env=b,service=del,type=cpu/1' \
        "$(series_list)"

    local h=$(( old / 3600 * 3600 ))
    query '{}' from=$h until=$((h + 3600))
    assert_json "the old profile's hour, before" '"\(.total) \(.profiles)"' '1 1'

    del 'query=del{env="a"}'
    assert_status "delete" 200
    assert_json "counts: one series, both profiles (whatever their time)" \
        '"\(.deleted_series) \(.deleted_profiles)"' '1 2'
    assert_eq "gone from series, others untouched" 'env=a,service=keep,type=cpu/1 env=b,service=del,type=cpu/1' \
        "$(series_list)"
    get /api/v1/label/env/values 'query=del{}' from=now-1d
    assert_json "gone from label values" '.values|join(",")' 'b'
    get /api/v1/labels 'query={env="a"}' from=now-1d
    assert_json "gone from labels" '[.labels[]|"\(.name):\(.values)"]|join(",")' 'env:1,service:1,type:1'
    query '{}' from=now-1d format=folded
    assert_eq "gone from queries" $'y 2\nz 4' "$BODY"
    get /api/v1/top 'query=del{}' from=now-1d
    assert_json "gone from top" '[.functions[].name]|join(",")' 'y'
    query '{}' from=$h until=$((h + 3600))
    assert_json "gone from a whole hour (its rollups too)" '"\(.total) \(.profiles)"' '0 0'
    get /api/v1/stability 'query={}' from=$h until=$((h + 3600)) step=1m
    assert_json "gone from whole minutes" '[.windows[].total]|add' 0

    del 'query=del{env="nope"}'
    assert_status "delete nothing" 200
    assert_json "nothing matched" '"\(.deleted_series) \(.deleted_profiles)"' '0 0'

    # the same labels again: a fresh series with only the new data
    put 'service=del&env=a' $'w 8\n'
    query 'del{env="a"}' format=folded from=now-1d
    assert_eq "re-ingested series holds only new data" 'w 8' "$BODY"

    restart_server
    assert_eq "deletion survives a restart" 'env=a,service=del,type=cpu/1 env=a,service=keep,type=cpu/1 env=b,service=del,type=cpu/1' \
        "$(series_list)"
    query '{}' from=now-1d format=folded
    assert_eq "data after restart" $'w 8\ny 2\nz 4' "$BODY"

    del 'query=del'
    assert_json "shorthand selector" '"\(.deleted_series) \(.deleted_profiles)"' '2 2'
    assert_eq "only keep left" 'env=a,service=keep,type=cpu/1' "$(series_list)"
}

test_delete_all_needs_all_true() {
    start_server
    put 'service=da' $'x 1\n'
    put 'service=db&type=wall' $'x 2\n'
    del 'query={}'
    assert_error "{} refused" 400 "query" "all=true"
    del 'query={}' all=false
    assert_error "all=false" 400 "query" "all=true"
    del 'query='
    assert_error "empty selector means {}" 400 "query" "all=true"
    assert_eq "nothing deleted" 'service=da,type=cpu/1 service=db,type=wall/1' "$(series_list)"
    del 'query={}' all=true
    assert_status "all=true" 200
    assert_json "everything, every type" '"\(.deleted_series) \(.deleted_profiles)"' '2 2'
    assert_eq "no series" '' "$(series_list)"
    get /api/v1/labels from=now-1d
    assert_json "no labels" '.labels|length' 0
    query '{}' from=now-1d
    assert_json "empty query" '"\(.total) \(.series)"' '0 0'
}

test_delete_refusals_and_methods() {
    start_server
    put 'service=dr' $'x 1\n'
    del
    assert_error "missing query" 400 "query"
    del 'query={env='
    assert_error "malformed selector" 400 "query" "column"
    assert_eq "nothing deleted" 'service=dr,type=cpu/1' "$(series_list)"
    get /api/v1/series 'query=dr{}'
    assert_status "GET still lists" 200
    assert_json "GET answer" '.series|length' 1
    _curl PUT "$BASE/api/v1/series"
    assert_error "PUT" 405
    assert_eq "Allow lists GET and DELETE" 'GET, DELETE' "$(header Allow)"
    post /api/v1/series --data-binary ''
    assert_error "POST" 405 "DELETE"
    _curl DELETE "$BASE/api/v1/top"
    assert_error "DELETE elsewhere" 405
    assert_eq "Allow on top" 'GET' "$(header Allow)"
}
