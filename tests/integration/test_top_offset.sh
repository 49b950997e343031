# test_top_offset.sh — GET /api/v1/top paged: offset and limit walk the
# whole ranking (no function repeated or skipped, ties included), with
# functions_total (the M of "N of M") and offset in the answer; order=name;
# match (a case-insensitive substring of the name) and its count; errors.

# 250 functions r;fNNN whose self values tie in groups (i % 7 + 1), and
# three that differ only in case (Alpha, alpha, ALPHABET).
top_offset_data() {
    it_tmp
    awk 'BEGIN { for (i = 1; i <= 250; i++) printf "r;f%03d %d\n", i, i % 7 + 1
                 print "r;Alpha 3"; print "r;alpha 2"; print "r;x;ALPHABET 1" }' >"$IT_TMP/many.folded"
    ingest_file "service=pg&from=$1&until=$(($1 + 10))" "$IT_TMP/many.folded"
    assert_status "ingest" 200
}

test_top_offset_pages_cover_the_ranking() {
    start_server
    local t=$(( $(now) - 3000 )) order
    top_offset_data "$t"
    local range=(from=$t until=$((t + 60)))
    for order in self total name; do
        get /api/v1/top 'query=pg{}' order=$order limit=0 "${range[@]}"
        assert_status "all ($order)" 200
        local all
        all=$(jqb '[.functions[].name]|join(" ")')
        assert_json "limit=0: functions_total is every function" '"\(.functions_total) \(.offset) \(.functions|length)"' '255 0 255'
        local pages="" off
        for off in 0 40 80 120 160 200 240; do
            get /api/v1/top 'query=pg{}' order=$order limit=40 offset=$off "${range[@]}"
            assert_status "page at $off ($order)" 200
            assert_json "page at $off: offset and M" '"\(.offset) \(.functions_total)"' "$off 255"
            pages+="$(jqb '[.functions[].name]|join(" ")') "
        done
        assert_eq "the pages, one after another, are the whole ranking ($order)" "$all" "${pages% }"
        assert_eq "no function twice ($order)" 255 "$(tr ' ' '\n' <<<"${pages% }" | sort -u | wc -l)"
    done
    get /api/v1/top 'query=pg{}' order=name limit=4 "${range[@]}"
    assert_json "order=name: by name (bytes), ascending" '[.functions[].name]|join(" ")' 'ALPHABET Alpha alpha f001'
    get /api/v1/top 'query=pg{}' limit=0 "${range[@]}"
    local second
    second=$(jqb '[.functions[1:4][].name]|join(" ")')
    get /api/v1/top 'query=pg{}' limit=3 offset=1 "${range[@]}"
    assert_json "offset=1: rows 2 to 4 of the ranking" '[.functions[].name]|join(" ")' "$second"
    assert_json "shares and total are of the whole answer" '"\(.total) \(.functions[0].self_share == (.functions[0].self / .total))"' \
        "$(jqb '"\(.total) true"')"
    get /api/v1/top 'query=pg{}' limit=10 offset=255 "${range[@]}"
    assert_json "offset at the end: no rows, still M" '"\(.functions|length) \(.functions_total) \(.offset)"' '0 255 255'
    get /api/v1/top 'query=pg{}' limit=10 offset=100000 "${range[@]}"
    assert_json "offset past the end: offset is M" '"\(.functions|length) \(.offset)"' '0 255'
}

test_top_match_filters_case_insensitively() {
    start_server
    local t=$(( $(now) - 3000 ))
    top_offset_data "$t"
    local range=(from=$t until=$((t + 60)))
    get /api/v1/top 'query=pg{}' match=ALPHA limit=0 "${range[@]}"
    assert_status "match" 200
    assert_json "every name containing alpha, any case, ranked by self" '"\(.functions_total) \([.functions[].name]|join(" "))"' \
        '3 Alpha alpha ALPHABET'
    get /api/v1/top 'query=pg{}' match=f24 limit=2 offset=2 "${range[@]}"
    assert_json "match with paging: M is the matches" '"\(.functions_total) \(.offset) \(.functions|length)"' '10 2 2'
    get /api/v1/top 'query=pg{}' match=nothing-like-it "${range[@]}"
    assert_json "no match: the total is still the whole answer's" '"\(.functions_total) \(.functions|length) \(.total)"' \
        "0 0 $(awk '{ s += $2 } END { print s }' "$IT_TMP/many.folded")"
    # per group with group_by
    put "service=pg2&from=$t&until=$((t + 10))" $'r;alpha 5\nr;beta 1\n'
    get /api/v1/top 'query={service=~"pg.*"}' group_by=service match=alpha limit=1 offset=1 "${range[@]}"
    assert_json "group_by: offset and match per group" \
        '[.groups[]|"\(.labels.service):\(.functions_total):\(.offset):\([.functions[].name]|join(","))"]|join(" ")' \
        'pg:3:1:alpha pg2:1:1:'
}

test_top_offset_errors() {
    start_server
    get /api/v1/top offset=-1
    assert_error "negative offset" 400 "'offset'"
    get /api/v1/top offset=ten
    assert_error "offset not a number" 400 "'offset'" "whole number"
    get /api/v1/top order=size
    assert_error "bad order" 400 "'order'" "name"
}
