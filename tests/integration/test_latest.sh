# test_latest.sh — answers over a range that held no profile say where the
# selector's profiles are: "latest" (the newest profile's window) and
# "earliest" (the oldest's), on /api/v1/query, the one-selector analyses
# and the listings; never when the range held data or nothing matches.

# Profiles of service imp a week ago (and an hour before that), none recent.
_push_old() {
    W=$(( $(now) - 7 * 86400 ))
    put "service=imp&from=$((W - 3600))&until=$((W - 3590))" $'main;old 3\n'
    put "service=imp&from=$W&until=$((W + 10))" $'main;work 5\nmain;gc 2\n'
}

test_latest_empty_range_says_where_the_newest_is() {
    start_server
    _push_old
    query 'imp{}'
    assert_status "query, default range" 200
    assert_json "nothing in the last hour" '"\(.total) \(.profiles) \(.series) \(.type)"' '0 0 0 null'
    assert_json "latest: the newest profile's window" '.latest|"\(.from) \(.until)"' "$W $((W + 10))"
    assert_json "earliest: the oldest's" '.earliest|"\(.from) \(.until)"' "$((W - 3600)) $((W - 3590))"
    local lf lu
    lf=$(jqb '.latest.from')
    lu=$(jqb '.latest.until')
    query 'imp{}' group_by=instance
    assert_json "group_by answer too" '"\(.groups|length) \(.latest.from) \(.latest.until)"' "0 $W $((W + 10))"
    local path
    for path in /api/v1/top /api/v1/timeline /api/v1/stability /api/v1/variance /api/v1/series /api/v1/labels \
        /api/v1/label/service/values; do
        get "$path" 'query=imp{}'
        assert_status "$path" 200
        assert_json "$path: latest" '.latest|"\(.from) \(.until)"' "$W $((W + 10))"
        assert_json "$path: earliest" '.earliest.from' "$((W - 3600))"
    done
    get /api/v1/top 'query=imp{}' group_by=instance
    assert_json "top group_by: latest" '.latest.from' "$W"
    # the window it names holds the profile
    query 'imp{}' "from=$lf" "until=$lu"
    assert_json "the latest window holds the newest profile" '"\(.total) \(.profiles)"' '7 1'
    # formats without a JSON object answer as before
    query 'imp{}' format=folded
    assert_status "folded" 200
    assert_eq "folded: empty" "" "$BODY"
}

test_latest_absent_when_the_range_holds_data() {
    start_server
    _push_old
    query 'imp{}'
    assert_json "empty range: latest (the feature under test is there)" '.latest.from' "$W"
    query 'imp{}' "from=$((W - 60))" "until=$((W + 60))"
    assert_json "data in range" '.total' 7
    assert_json "no latest" 'has("latest") or has("earliest")' false
    # a range holding only the older profile: data, so no latest either
    query 'imp{}' "from=$((W - 3600))" "until=$((W - 3000))"
    assert_json "older profile in range" '.total' 3
    assert_json "no latest with older data" 'has("latest")' false
    for path in /api/v1/top /api/v1/timeline /api/v1/series; do
        get "$path" 'query=imp{}' "from=$((W - 60))" "until=$((W + 60))"
        assert_json "$path: no latest" 'has("latest")' false
    done
    # recent data of the selector: the default range has it
    put "service=imp" $'main;now 1\n'
    query 'imp{}'
    assert_json "recent data" '.total' 1
    assert_json "recent: no latest" 'has("latest")' false
}

test_latest_absent_when_nothing_matches() {
    start_server
    _push_old
    query 'nope{}'
    assert_status "unknown service" 200
    assert_json "no data at all: no latest" 'has("latest") or has("earliest")' false
    query 'imp{instance="x"}'
    assert_json "a label no series has: no latest" 'has("latest")' false
    get /api/v1/top 'query=nope{}'
    assert_json "top: no latest" 'has("latest")' false
    get /api/v1/series 'query=nope{}'
    assert_json "series: no latest" 'has("latest")' false
    # while imp itself does say where its profiles are
    query 'imp{}'
    assert_json "imp{}: latest" '.latest.from' "$W"
    # deleted series leave nothing to point at
    _curl DELETE "$BASE/api/v1/series" -G --data-urlencode 'query=imp{}'
    assert_status "delete" 200
    query 'imp{}'
    assert_json "deleted: no latest" 'has("latest")' false
}

test_latest_newest_series_wins() {
    start_server
    local D=86400
    W=$(( $(now) - 7 * D ))
    # three series of imp on different days (each day its own partition),
    # pushed so that the newest is neither the first series nor the last
    put "service=imp&instance=a&from=$((W - 2 * D))&until=$((W - 2 * D + 10))" $'main;a 1\n'
    put "service=imp&instance=b&from=$W&until=$((W + 10))" $'main;b 1\n'
    put "service=imp&instance=c&from=$((W - D))&until=$((W - D + 10))" $'main;c 1\n'
    # another service, newer: not this selector's
    put "service=other&from=$((W + D))&until=$((W + D + 10))" $'main;o 1\n'
    query 'imp{}'
    assert_json "newest of three series" '.latest|"\(.from) \(.until)"' "$W $((W + 10))"
    assert_json "oldest of three series" '.earliest|"\(.from) \(.until)"' "$((W - 2 * D)) $((W - 2 * D + 10))"
    query 'imp{instance=~"a|c"}'
    assert_json "the selector's own series only" '.latest.from' "$((W - D))"
    query '{}'
    assert_json "every series: other is newest" '.latest.from' "$((W + D))"
    # equal starts: the later end wins
    put "service=imp&instance=d&from=$W&until=$((W + 60))" $'main;d 1\n'
    query 'imp{}'
    assert_json "equal starts, the longer window" '.latest|"\(.from) \(.until)"' "$W $((W + 60))"
    # every type counts: a newer alloc profile of imp
    put "service=imp&type=alloc&unit=bytes&from=$((W + 100))&until=$((W + 110))" $'main;alloc 4096\n'
    query 'imp{}'
    assert_json "newest of any type" '.latest.from' "$((W + 100))"
    query 'imp{type="cpu"}'
    assert_json "type= narrows it" '.latest.from' "$W"
    # the newest survives a restart (read from disk)
    restart_server
    query 'imp{}'
    assert_json "after restart" '.latest.from' "$((W + 100))"
}
