# test_analysis_compare.sh — GET /api/v1/compare (shares, deltas, the
# two-proportion z-test, Manhattan and JSD over the top k with ties by name)
# and GET /api/v1/diff (the union of two trees); both with per-side time
# overrides (left_from, left_until, right_from, right_until).

# significant X1 N1 X2 N2: true when the pooled two-proportion |z| > 1.96.
significant() {
    awk -v x1="$1" -v n1="$2" -v x2="$3" -v n2="$4" 'BEGIN {
        p = (x1 + x2) / (n1 + n2); se = sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
        z = se > 0 ? (x2 / n2 - x1 / n1) / se : 0
        print (z > 1.96 || z < -1.96) ? "true" : "false" }'
}

# The diff tree of $BODY as "path left_self left_total right_self right_total".
diff_lines() {
    jqd 'def flat(p): (p + [.name]) as $q
             | "\(if ($q|length) == 1 then "<root>" else ($q[1:]|join(";")) end) \(.left_self) \(.left_total) \(.right_self) \(.right_total)",
               (.children[] | flat($q));
           .tree | flat([])'
}

compare() { get /api/v1/compare "$@"; }

test_compare_hot_function() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=cp&build=v1&from=$t&until=$((t + 10))" $'m;a 50\nm;b 50\n'
    put "service=cp&build=v2&from=$((t + 60))&until=$((t + 70))" $'m;a 50\nm;b 50\nm;hot 100\n'
    local range=(from=$t until=$((t + 120)))
    compare 'left=cp{build="v1"}' 'right=cp{build="v2"}' "${range[@]}"
    assert_status "compare" 200
    assert_json "sides" '"\(.left|tojson) \(.right|tojson) \(.left_type) \(.right_type)"' \
        '{"total":100,"samples":100,"profiles":1,"entropy":1,"unit":"samples"} {"total":200,"samples":200,"profiles":1,"entropy":1.5,"unit":"samples"} cpu cpu'
    assert_json "hot first, then |delta| ties by name" \
        '[.functions[]|"\(.name) \(.left_share) \(.right_share) \(.delta) \(.significant)"]|join(",")' \
        "hot 0 0.5 0.5 true,a 0.5 0.25 -0.25 $(significant 50 100 50 200),b 0.5 0.25 -0.25 $(significant 50 100 50 200)"
    local ref
    ref=($(dist_ref "50 50 0" "50 50 100"))
    assert_near "manhattan" "${ref[0]}" "$(jqb .manhattan)"
    assert_near "jsd" "${ref[1]}" "$(jqb .jsd)"
    # k=2: K = {a, b} (score 0.75 each, hot 0.5); both renormalize to (1/2, 1/2)
    compare 'left=cp{build="v1"}' 'right=cp{build="v2"}' k=2 "${range[@]}"
    assert_json "k=2" '"\(.manhattan) \(.jsd)"' '0.5 0'
    compare 'left=cp{build="v1"}' 'right=cp{build="v2"}' limit=1 "${range[@]}"
    assert_json "limit=1" '[.functions[].name]|join(",")' 'hot'
    assert_near "limit leaves the distances alone" "${ref[0]}" "$(jqb .manhattan)"
    put "service=cp&type=wall&from=$t&until=$((t + 10))" $'m;sleep 7\n'
    compare 'left=cp{type="wall"}' 'right=cp{build="v2"}' "${range[@]}"
    assert_json "a type per side" '"\(.left_type) \(.left.total) \(.right_type) \(.right.total)"' 'wall 7 cpu 200'
    # the same selector over two time ranges
    compare 'left=cp{}' 'right=cp{}' left_from=$t left_until=$((t + 60)) right_from=$((t + 60)) right_until=$((t + 120))
    assert_json "per-side ranges" '"\(.left.total) \(.right.total) \(.functions[0].name)"' '100 200 hot'
}

test_compare_significance() {
    start_server
    local t=$(( $(now) - 3000 ))
    # small samples: a 5/10 -> 4/10 is noise
    put "service=sn&build=v1&from=$t&until=$((t + 10))" $'a 5\nb 5\n'
    put "service=sn&build=v2&from=$t&until=$((t + 10))" $'a 4\nb 6\n'
    compare 'left=sn{build="v1"}' 'right=sn{build="v2"}' from=$t until=$((t + 60))
    assert_status "compare" 200
    assert_eq "reference: not significant" false "$(significant 5 10 4 10)"
    assert_json "not significant" '[.functions[]|"\(.name) \(.significant)"]|join(",")' 'a false,b false'
    assert_near "delta b" 0.1 "$(jqb '.functions[1].delta')"
    # 100x the samples, same shares: significant
    put "service=sn&build=v3&from=$t&until=$((t + 10))" $'a 500\nb 500\n'
    put "service=sn&build=v4&from=$t&until=$((t + 10))" $'a 400\nb 600\n'
    compare 'left=sn{build="v3"}' 'right=sn{build="v4"}' from=$t until=$((t + 60))
    assert_eq "reference: significant" true "$(significant 500 1000 400 1000)"
    assert_json "significant" '[.functions[]|"\(.name) \(.significant)"]|join(",")' 'a true,b true'
    # rated: shares in ns, the test on raw samples (x = share x samples)
    put "service=sr&build=v1&rate=100&from=$t&until=$((t + 10))" $'a 5\nb 5\n'
    put "service=sr&build=v2&rate=50&from=$t&until=$((t + 10))" $'a 4\nb 6\n'
    compare 'left=sr{build="v1"}' 'right=sr{build="v2"}' from=$t until=$((t + 60))
    assert_json "rated sides" '"\(.left.unit) \(.left.total) \(.left.samples) \(.right.total) \(.right.samples)"' \
        'nanoseconds 100000000 10 200000000 10'
    assert_json "rated: shares and tests" '[.functions[]|"\(.name) \(.left_share) \(.right_share) \(.significant)"]|join(",")' \
        'a 0.5 0.4 false,b 0.5 0.6 false'
}

test_compare_disjoint_and_k_ties() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=cd&side=l&from=$t&until=$((t + 10))" $'a 1\nb 1\n'
    put "service=cd&side=r&from=$t&until=$((t + 10))" $'c 1\nd 1\n'
    local range=(from=$t until=$((t + 60)))
    compare 'left=cd{side="l"}' 'right=cd{side="r"}' "${range[@]}"
    assert_json "disjoint: M 2, JSD 1" '"\(.manhattan) \(.jsd) \(.left.entropy) \(.right.entropy)"' '2 1 1 1'
    compare 'left=cd{side="l"}' 'right=cd{side="r"}' k=2 "${range[@]}"
    assert_json "k=2: K = {a, b}, no mass on the right" '"\(.manhattan) \(.jsd)"' '1 1'

    # X = {tc 1/2, tb 1/4, ta 1/4}, Y = {ta 3/4, tb 1/4}: scores ta 1, tb 1/2,
    # tc 1/2.  k=2 takes tb (ties by name), not tc (first seen, lower id).
    put "service=ct&side=l&from=$t&until=$((t + 10))" $'tc 2\ntb 1\nta 1\n'
    put "service=ct&side=r&from=$t&until=$((t + 10))" $'ta 3\ntb 1\n'
    compare 'left=ct{side="l"}' 'right=ct{side="r"}' k=2 "${range[@]}"
    assert_near "M over {ta, tb}" 0.5 "$(jqb .manhattan)"
    local ref
    ref=($(dist_ref "1 1" "3 1"))
    assert_near "JSD over {ta, tb}, renormalized" "${ref[1]}" "$(jqb .jsd)"
    compare 'left=ct{side="l"}' 'right=ct{side="r"}' k=3 "${range[@]}"
    ref=($(dist_ref "1 1 2" "3 1 0"))
    assert_near "M over all" "${ref[0]}" "$(jqb .manhattan)"
    assert_near "JSD over all" "${ref[1]}" "$(jqb .jsd)"

    compare 'left={service="none"}' 'right=cd{side="r"}' "${range[@]}"
    assert_status "empty left" 200
    assert_json "empty left: no mass, JSD 1" '"\(.left.total) \(.left.samples) \(.jsd)"' '0 0 1'
}

test_compare_one_sided_override() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=co&from=$t&until=$((t + 10))" $'a 1\n'
    put "service=co&from=$((t + 100))&until=$((t + 110))" $'b 2\n'
    put "service=co&from=$((t + 200))&until=$((t + 210))" $'c 4\n'
    put "service=co&from=$((t + 300))&until=$((t + 310))" $'d 8\n'
    # left_from replaces from for the left side; until stays the shared one
    compare 'left=co{}' 'right=co{}' from=$t until=$((t + 300)) left_from=$((t + 100))
    assert_status "left_from only" 200
    assert_json "left [t+100, t+300), right [t, t+300)" '"\(.left.total) \(.right.total)"' '6 7'
    # right_until replaces until for the right side; from stays the shared one
    get /api/v1/diff 'left=co{}' 'right=co{}' from=$((t + 100)) until=$((t + 150)) right_until=$((t + 250))
    assert_status "right_until only" 200
    assert_json "left [t+100, t+150), right [t+100, t+250)" '"\(.left_total) \(.right_total)"' '2 6'
}

test_diff_union() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=df&build=v1&from=$t&until=$((t + 10))" $'m;a 5\nm;b 3\nm 2\n'
    put "service=df&build=v2&from=$((t + 60))&until=$((t + 70))" $'m;a 1\nm;c 7\nx 4\nm;d 3\n'
    get /api/v1/diff 'left=df{build="v1"}' 'right=df{build="v2"}' from=$t until=$((t + 120))
    assert_status "diff" 200
    assert_json "head" '"\(.left_total) \(.right_total) \(.left_unit) \(.right_unit) \(.left_type) \(.right_type)"' \
        '10 15 samples samples cpu cpu'
    assert_eq "union, children by left+right total desc then name" "<root> 0 10 0 15
m 2 10 0 11
m;c 0 0 7 7
m;a 5 5 1 1
m;b 3 3 0 0
m;d 0 0 3 3
x 0 0 4 4" "$(diff_lines)"
    assert_json "root name" '.tree.name' root

    get /api/v1/diff 'left=df{}' 'right=df{}' left_until=$((t + 60)) right_from=$((t + 60)) from=$t until=$((t + 120))
    assert_json "per-side ranges" '"\(.left_total) \(.right_total)"' '10 15'

    put "service=dr&rate=100&from=$t&until=$((t + 10))" $'m;a 1\n'
    get /api/v1/diff 'left=dr{}' 'right=df{build="v1"}' from=$t until=$((t + 120))
    assert_json "units per side" '"\(.left_unit) \(.left_total) \(.right_unit) \(.right_total)"' \
        'nanoseconds 10000000 samples 10'
    assert_eq "rated left in ns" "<root> 0 10000000 0 10
m 0 10000000 2 10
m;a 10000000 10000000 5 5
m;b 0 0 3 3" "$(diff_lines)"

    get /api/v1/diff 'left={service="none"}' 'right={service="none"}' from=$t until=$((t + 120))
    assert_json "nothing on either side" '"\(.left_total) \(.right_total) \(.tree.children|length)"' '0 0 0'
}

test_compare_diff_refusals() {
    start_server
    local ep
    for ep in compare diff; do
        get /api/v1/$ep 'right=x{}'
        assert_error "$ep without left" 400 "'left'"
        get /api/v1/$ep 'left=x{}'
        assert_error "$ep without right" 400 "'right'"
        get /api/v1/$ep 'left=x{a=}' 'right=x{}'
        assert_error "$ep malformed left" 400 "'left'" "column"
        get /api/v1/$ep 'left=x{}' 'right={a="b"'
        assert_error "$ep malformed right" 400 "'right'" "column"
        get /api/v1/$ep 'left=x{}' 'right=x{}' left_from=yesterday
        assert_error "$ep bad left_from" 400 "left_from"
        get /api/v1/$ep 'left=x{}' 'right=x{}' left_until=soon
        assert_error "$ep bad left_until" 400 "left_until"
        get /api/v1/$ep 'left=x{}' 'right=x{}' right_from=2026-13-01T00:00:00Z
        assert_error "$ep bad right_from" 400 "right_from"
        get /api/v1/$ep 'left=x{}' 'right=x{}' right_until=x
        assert_error "$ep bad right_until" 400 "right_until"
        get /api/v1/$ep 'left=x{}' 'right=x{}' right_from=now right_until=now-1h
        assert_error "$ep right_from after right_until" 400 "right_from" "right_until"
        get /api/v1/$ep 'left=x{}' 'right=x{}' left_until=now-2h
        assert_error "$ep left_until before the shared from" 400 "left_until"
        get /api/v1/$ep 'left=x{}' 'right=x{}' from=now-1h until=now-2h
        assert_error "$ep from after until" 400 "from" "until"
    done
    get /api/v1/compare 'left=x{}' 'right=x{}' k=0
    assert_error "k=0" 400 "'k'"
    get /api/v1/compare 'left=x{}' 'right=x{}' k=ten
    assert_error "k not a number" 400 "'k'"
    get /api/v1/compare 'left=x{}' 'right=x{}' limit=all
    assert_error "limit not a number" 400 "limit"
}
