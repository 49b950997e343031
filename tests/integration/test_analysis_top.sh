# test_analysis_top.sh — GET /api/v1/top: self and total per function
# (recursion counted once), ranking and its ties, shares, Wilson 95%
# intervals from the raw sample count, rate weighting, limit, group_by.

# wilson P N: "lo hi" of the 95% Wilson score interval (z = 1.96), clamped
# to [0, 1]; P may be an awk expression like 1/3.
wilson() {
    awk "BEGIN { p = $1; n = $2; z = 1.96; z2 = z * z
                 d = 1 + z2 / n; c = (p + z2 / (2 * n)) / d
                 h = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / d
                 lo = c - h; hi = c + h; if (lo < 0) lo = 0; if (hi > 1) hi = 1
                 printf \"%.17g %.17g\", lo, hi }"
}

# assert_ci desc JQ-PATH P N: the [lo, hi] at JQ-PATH of $BODY is Wilson(P, N).
assert_ci() {
    local desc=$1 path=$2 want got
    want=($(wilson "$3" "$4"))
    got=($(jqb "$path|map(tostring)|join(\" \")"))
    assert_near "$desc lo" "${want[0]}" "${got[0]:-missing}" &&
        assert_near "$desc hi" "${want[1]}" "${got[1]:-missing}"
}

test_top_self_total_and_order() {
    start_server
    local t=$(( $(now) - 3000 ))
    # self: a 50 (two leaves), b 20, c 10, e 10, main 10; total: main 100,
    # a 50, b 30 (b and b;a), c 10 (c;c is recursion: counted once), e 10
    put "service=tp&from=$t&until=$((t + 10))" $'main;a 40\nmain;b;a 10\nmain;b 20\nmain;c;c 10\nmain 10\nmain;e 10\n'
    local range=(from=$t until=$((t + 60)))
    get /api/v1/top 'query=tp{}' "${range[@]}"
    assert_status "top" 200
    assert_json "head" '"\(.type) \(.unit) \(.from) \(.until) \(.other_types|tojson) \(.total) \(.samples)"' \
        "cpu samples $t $((t + 60)) [] 100 100"
    assert_json "by self desc, ties by total desc then name" \
        '[.functions[]|"\(.name):\(.self):\(.total)"]|join(" ")' 'a:50:50 b:20:30 main:10:100 c:10:10 e:10:10'
    assert_json "shares" '[.functions[]|"\(.name):\(.self_share):\(.total_share)"]|join(" ")' \
        'a:0.5:0.5 b:0.2:0.3 main:0.1:1 c:0.1:0.1 e:0.1:0.1'

    get /api/v1/top 'query=tp{}' order=total "${range[@]}"
    assert_json "by total desc, ties by self desc then name" \
        '[.functions[]|"\(.name):\(.self):\(.total)"]|join(" ")' 'main:10:100 a:50:50 b:20:30 c:10:10 e:10:10'
    get /api/v1/top 'query=tp{}' order=self limit=2 "${range[@]}"
    assert_json "limit=2" '[.functions[].name]|join(" ")' 'a b'
    assert_json "limit leaves total alone" '.total' 100
    get /api/v1/top 'query=tp{}' limit=0 "${range[@]}"
    assert_json "limit=0: all" '.functions|length' 5

    # the default limit is 20
    it_tmp
    seq -f 'r;f%02g 1' 1 25 >"$IT_TMP/wide.folded"
    ingest_file "service=wide&from=$t&until=$((t + 10))" "$IT_TMP/wide.folded"
    assert_status "ingest wide" 200
    get /api/v1/top 'query=wide{}' "${range[@]}"
    assert_json "default limit 20" '"\(.functions|length) \(.functions[0].name) \(.functions[19].name)"' '20 f01 f20'
}

test_top_wilson_intervals() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=wi&from=$t&until=$((t + 10))" $'main;a 40\nmain;b;a 10\nmain;b 20\nmain;c;c 10\nmain 10\nmain;e 10\n'
    get /api/v1/top 'query=wi{}' from=$t until=$((t + 60))
    assert_status "top" 200
    assert_ci "a self_ci95" '.functions[0].self_ci95' 0.5 100
    assert_ci "b self_ci95" '.functions[1].self_ci95' 0.2 100
    assert_ci "b total_ci95" '.functions[1].total_ci95' 0.3 100
    assert_ci "main total_ci95 (p = 1)" '.functions[2].total_ci95' 1 100
    assert_json "interval contains the share" \
        '[.functions[]|(.self_ci95[0] <= .self_share and .self_share <= .self_ci95[1])]|all' true
}

test_top_rates_weight_ns_and_n_is_raw_samples() {
    start_server
    local t=$(( $(now) - 3000 ))
    # 100 Hz: 10 ms a count; 50 Hz: 20 ms a count
    put "service=rt&rate=100&from=$t&until=$((t + 10))" $'m;a 3\n'
    put "service=rt&rate=50&from=$((t + 10))&until=$((t + 20))" $'m;b 3\n'
    get /api/v1/top 'query=rt{}' from=$t until=$((t + 60))
    assert_status "top" 200
    assert_json "ns totals, raw samples" '"\(.unit) \(.total) \(.samples)"' 'nanoseconds 90000000 6'
    assert_json "values in ns" '[.functions[]|"\(.name):\(.self):\(.total)"]|join(" ")' \
        'b:60000000:60000000 a:30000000:30000000 m:0:90000000'
    assert_near "b share 2/3" "$(awk 'BEGIN { printf "%.17g", 2/3 }')" "$(jqb '.functions[0].self_share')"
    # the interval's n is the 6 raw samples, not the 9e7 ns
    assert_ci "b self_ci95 (p 2/3, n 6)" '.functions[0].self_ci95' 2/3 6
    assert_ci "a self_ci95 (p 1/3, n 6)" '.functions[1].self_ci95' 1/3 6
    assert_ci "m self_ci95 (p 0, n 6)" '.functions[2].self_ci95' 0 6

    # round(1e9 / rate): 7 Hz -> 142857143 ns (rounded up), 3 Hz -> 333333333 ns
    put "service=rr&rate=7&from=$t&until=$((t + 10))" $'x 2\n'
    put "service=rr&rate=3&from=$((t + 10))&until=$((t + 20))" $'y 1\n'
    get /api/v1/top 'query=rr{}' from=$t until=$((t + 60))
    assert_json "rounded weights" '"\(.total) \(.samples) \([.functions[]|"\(.name):\(.self)"]|join(" "))"' \
        '619047619 3 y:333333333 x:285714286'

    get /api/v1/top 'query={service="nothing"}' from=$t until=$((t + 60))
    assert_status "top of nothing" 200
    assert_json "empty" '"\(.total) \(.samples) \(.functions|length)"' '0 0 0'
}

test_top_group_by() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=tg&build=v1&from=$t&until=$((t + 10))" $'a 30\nb 10\n'
    put "service=tg&build=v2&from=$t&until=$((t + 10))" $'a 5\nc 15\n'
    put "service=tg&from=$t&until=$((t + 10))" $'d 1\n'
    get /api/v1/top 'query=tg{}' group_by=build from=$t until=$((t + 60))
    assert_status "top group_by" 200
    assert_json "head" '"\(.type) \(.from) \(.other_types|tojson) \(has("functions"))"' "cpu $t [] false"
    assert_json "groups by total desc" \
        '[.groups[]|"\(.labels|tojson)=\(.unit)/\(.total)/\(.samples)"]|join(" ")' \
        '{"build":"v1"}=samples/40/40 {"build":"v2"}=samples/20/20 {"build":""}=samples/1/1'
    assert_json "functions per group" \
        '[.groups[]|[.functions[]|"\(.name):\(.self):\(.self_share)"]|join(",")]|join(" ")' \
        'a:30:0.75,b:10:0.25 c:15:0.75,a:5:0.25 d:1:1'
    assert_ci "v2 c self_ci95 uses the group's n" '.groups[1].functions[0].self_ci95' 0.75 20
    get /api/v1/top 'query=tg{}' group_by=build limit=1 order=total from=$t until=$((t + 60))
    assert_json "limit per group" '[.groups[]|[.functions[].name]|join(",")]|join(" ")' 'a c d'
}

test_top_refusals() {
    start_server
    get /api/v1/top order=size
    assert_error "bad order" 400 "order" "self" "total"
    get /api/v1/top limit=ten
    assert_error "limit not a number" 400 "limit"
    get /api/v1/top limit=-1
    assert_error "negative limit" 400 "limit"
    get /api/v1/top limit=2.5
    assert_error "fractional limit" 400 "limit"
    get /api/v1/top group_by=no-dash
    assert_error "bad group_by" 400 "group_by" "no-dash"
    get /api/v1/top 'query={a='
    assert_error "bad selector" 400 "query"
    get /api/v1/top from=yesterday
    assert_error "bad from" 400 "from"
    get /api/v1/top from=now until=now-1h
    assert_error "from after until" 400 "from" "until"
}
