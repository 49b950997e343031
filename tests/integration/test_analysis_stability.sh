# test_analysis_stability.sh — GET /api/v1/stability: entropy per window,
# Manhattan distance and JSD against the previous non-empty window over the
# top k functions, the summary and its verdict; and the group_by form, each
# group against the merge of the whole query.

# window_line W: "from until profiles total samples entropy manhattan jsd" of window W.
window_line() {
    jqb ".windows[$1]|\"\(.from) \(.until) \(.profiles) \(.total) \(.samples) \(.entropy) \(.manhattan) \(.jsd)\""
}

test_stability_identical_windows() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=si&from=$t&until=$((t + 10))" $'m;a 10\nm;b 10\nm;c 10\nm;d 10\n'
    put "service=si&from=$((t + 60))&until=$((t + 70))" $'m;d 10\nm;c 10\nm;b 10\nm;a 10\n'
    get /api/v1/stability 'query=si{}' from=$t until=$((t + 180)) step=60
    assert_status "stability" 200
    assert_json "head" '"\(.step) \(.type) \(.from) \(.until) \(.other_types|tojson) \(.windows|length)"' \
        "60 cpu $t $((t + 180)) [] 3"
    # 4 equal leaves: entropy 2 bits; the first window has nothing to compare with
    assert_eq "window 0" "$t $((t + 60)) 1 40 40 2 null null" "$(window_line 0)"
    assert_eq "window 1: same distribution" "$((t + 60)) $((t + 120)) 1 40 40 2 0 0" "$(window_line 1)"
    assert_eq "window 2: empty" "$((t + 120)) $((t + 180)) 0 0 0 null null null" "$(window_line 2)"
    assert_json "summary" '.summary|"\(.entropy_mean) \(.entropy_stddev) \(.manhattan_mean) \(.manhattan_max) \(.jsd_mean) \(.jsd_max) \(.stable) \(.comparisons) \(.max_manhattan) \(.max_jsd)"' \
        '2 0 0 0 0 0 true 1 0.2 0.05'
    local want=$BODY
    get /api/v1/stability 'query=si{}' from=$t until=$((t + 180)) step=1m
    assert_eq "step=1m is step=60" "$want" "$BODY"
    get /api/v1/stability 'query=si{}' from=$t until=$((t + 180)) step=60s
    assert_eq "step=60s is step=60" "$want" "$BODY"
    get /api/v1/stability 'query=si{}' from=$t until=$((t + 180))
    assert_eq "default step is 60" "$want" "$BODY"
    get /api/v1/stability 'query=si{}' from=$t until=$((t + 150)) step=60
    assert_json "last window cut at until" '.windows[2]|"\(.from) \(.until)"' "$((t + 120)) $((t + 150))"
}

test_stability_disjoint_windows() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=sd&from=$t&until=$((t + 10))" $'a 10\nb 10\n'
    put "service=sd&from=$((t + 60))&until=$((t + 70))" $'c 10\nd 10\n'
    local range=(from=$t until=$((t + 120)) step=60)
    get /api/v1/stability 'query=sd{}' "${range[@]}"
    assert_status "stability" 200
    assert_json "disjoint: M = 2, JSD = 1" '.windows[1]|"\(.entropy) \(.manhattan) \(.jsd)"' '1 2 1'
    assert_json "summary: unstable" '.summary|"\(.manhattan_max) \(.jsd_max) \(.stable) \(.comparisons)"' '2 1 false 1'
    # k=1: K = {a} (all four score 0.5, ties by name); Y has no mass on K
    get /api/v1/stability 'query=sd{}' k=1 "${range[@]}"
    assert_json "k=1" '.windows[1]|"\(.manhattan) \(.jsd)"' '0.5 1'
    # k=2: K = {a, b}: the whole of X, nothing of Y
    get /api/v1/stability 'query=sd{}' k=2 "${range[@]}"
    assert_json "k=2" '.windows[1]|"\(.manhattan) \(.jsd)"' '1 1'
    get /api/v1/stability 'query=sd{}' max_manhattan=2 max_jsd=1 "${range[@]}"
    assert_json "thresholds are inclusive" '.summary|"\(.stable) \(.max_manhattan) \(.max_jsd)"' 'true 2 1'
}

test_stability_previous_non_empty_window() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=sp&from=$t&until=$((t + 10))" $'a 1\nb 1\n'
    put "service=sp&from=$((t + 120))&until=$((t + 130))" $'a 1\nb 1\nc 1\nd 1\n'
    put "service=sp&from=$((t + 180))&until=$((t + 190))" $'a 2\nb 2\nc 2\nd 2\n'
    get /api/v1/stability 'query=sp{}' from=$t until=$((t + 240)) step=60
    assert_status "stability" 200
    local ref
    ref=($(dist_ref "1 1 0 0" "1 1 1 1"))
    assert_near "reference M" 1 "${ref[0]}"
    assert_eq "window 1 empty: all null" "$((t + 60)) $((t + 120)) 0 0 0 null null null" "$(window_line 1)"
    assert_json "window 2 against window 0 (entropy)" '.windows[2].entropy' 2
    assert_near "window 2 against window 0 (manhattan)" "${ref[0]}" "$(jqb '.windows[2].manhattan')"
    assert_near "window 2 against window 0 (jsd)" "${ref[1]}" "$(jqb '.windows[2].jsd')"
    assert_json "window 3 against window 2" '.windows[3]|"\(.entropy) \(.manhattan) \(.jsd)"' '2 0 0'
    # entropies 1, 2, 2: mean 5/3, population stddev sqrt(2)/3
    assert_near "entropy_mean" "$(awk 'BEGIN { printf "%.17g", 5/3 }')" "$(jqb '.summary.entropy_mean')"
    assert_near "entropy_stddev" "$(awk 'BEGIN { printf "%.17g", sqrt(2)/3 }')" "$(jqb '.summary.entropy_stddev')"
    assert_near "manhattan_mean" 0.5 "$(jqb '.summary.manhattan_mean')"
    assert_near "jsd_mean" "$(awk -v j="${ref[1]}" 'BEGIN { printf "%.17g", j / 2 }')" "$(jqb '.summary.jsd_mean')"
    assert_json "comparisons" '.summary|"\(.comparisons) \(.manhattan_max) \(.stable)"' '2 1 false'
    get /api/v1/stability 'query=sp{}' from=$t until=$((t + 240)) step=60 max_manhattan=1 max_jsd=0.32
    assert_json "within both thresholds" '.summary.stable' true
    get /api/v1/stability 'query=sp{}' from=$t until=$((t + 240)) step=60 max_manhattan=1 max_jsd=0.3
    assert_json "jsd over its threshold" '.summary.stable' false
    get /api/v1/stability 'query=sp{}' from=$t until=$((t + 240)) step=60 max_manhattan=0.99 max_jsd=1
    assert_json "manhattan over its threshold" '.summary.stable' false
}

test_stability_nothing_to_compare() {
    start_server
    local t=$(( $(now) - 3000 ))
    get /api/v1/stability 'query=none{}' from=$t until=$((t + 120)) step=60
    assert_status "no data" 200
    assert_json "empty windows" '[.windows[]|"\(.profiles) \(.entropy) \(.manhattan) \(.jsd)"]|join(",")' \
        '0 null null null,0 null null null'
    assert_json "summary of nothing" '.summary|"\(.entropy_mean) \(.manhattan_max) \(.jsd_max) \(.stable) \(.comparisons)"' \
        'null null null null 0'
    put "service=one&from=$t&until=$((t + 10))" $'a 1\nb 1\nc 1\nd 1\n'
    get /api/v1/stability 'query=one{}' from=$t until=$((t + 120)) step=60
    assert_json "one non-empty window: no comparison, stable null" \
        '.summary|"\(.entropy_mean) \(.entropy_stddev) \(.stable) \(.comparisons)"' '2 0 null 0'
}

test_stability_group_by() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=sg&host=h1&from=$t&until=$((t + 10))" $'a 10\nb 10\n'
    put "service=sg&host=h2&from=$((t + 60))&until=$((t + 70))" $'a 30\n'
    put "service=sg&host=h3&from=$t&until=$((t + 10))" $'c 20\n'
    # the whole: a 40, b 10, c 20; Manhattan h3 10/7 > h2 6/7 > h1 5/7
    get /api/v1/stability 'query=sg{}' group_by=host from=$t until=$((t + 120))
    assert_status "stability group_by" 200
    assert_json "head" '"\(.type) \(.from) \(.until) \(has("windows"))"' "cpu $t $((t + 120)) false"
    assert_json "groups by manhattan_z desc (here the same order as by distance)" \
        '[.groups[]|"\(.labels|tojson) \(.profiles) \(.total) \(.samples) \(.entropy)"]|join(",")' \
        '{"host":"h3"} 1 20 20 0,{"host":"h2"} 1 30 30 0,{"host":"h1"} 1 20 20 1'
    local h3 h2 h1
    h3=($(dist_ref "0 0 20" "40 10 20"))
    h2=($(dist_ref "30 0 0" "40 10 20"))
    h1=($(dist_ref "10 10 0" "40 10 20"))
    assert_near "reference h3 manhattan" "$(awk 'BEGIN { printf "%.17g", 10/7 }')" "${h3[0]}"
    assert_near "h3 manhattan" "${h3[0]}" "$(jqb '.groups[0].manhattan')"
    assert_near "h3 jsd" "${h3[1]}" "$(jqb '.groups[0].jsd')"
    assert_near "h2 manhattan" "${h2[0]}" "$(jqb '.groups[1].manhattan')"
    assert_near "h2 jsd" "${h2[1]}" "$(jqb '.groups[1].jsd')"
    assert_near "h1 manhattan" "${h1[0]}" "$(jqb '.groups[2].manhattan')"
    assert_near "h1 jsd" "${h1[1]}" "$(jqb '.groups[2].jsd')"
    assert_json "summary" '.summary|"\(.comparisons) \(.stable)"' '3 false'
    assert_near "summary manhattan_max" "${h3[0]}" "$(jqb '.summary.manhattan_max')"
    assert_near "summary jsd_max" "${h3[1]}" "$(jqb '.summary.jsd_max')"
    assert_near "summary entropy_mean" "$(awk 'BEGIN { printf "%.17g", 1/3 }')" "$(jqb '.summary.entropy_mean')"

    put "service=same&host=h1&from=$t&until=$((t + 10))" $'a 1\nb 1\n'
    put "service=same&host=h2&from=$t&until=$((t + 10))" $'a 2\nb 2\n'
    get /api/v1/stability 'query=same{}' group_by=host from=$t until=$((t + 120))
    assert_json "groups like the whole: stable" \
        '"\([.groups[]|"\(.manhattan) \(.jsd)"]|join(",")) \(.summary.stable) \(.summary.comparisons)"' '0 0,0 0 true 2'
}

test_stability_refusals() {
    start_server
    local p
    for p in step=abc step=0 step=-60 step=10x step=; do
        get /api/v1/stability "$p"
        assert_error "$p" 400 "step"
    done
    get /api/v1/stability step=1 from=now-1d
    assert_error "86400 windows" 400 "step" "10000"
    local t=$(( $(now) - 3600 ))
    get /api/v1/stability step=359ms from=$t until=$((t + 3600))
    assert_error "10028 windows" 400 "step"
    get /api/v1/stability step=360ms from=$t until=$((t + 3600))
    assert_status "10000 windows are allowed" 200
    assert_json "10000 windows" '.windows|length' 10000
    get /api/v1/stability k=0
    assert_error "k=0" 400 "'k'"
    get /api/v1/stability k=many
    assert_error "k not a number" 400 "'k'"
    for p in max_manhattan=abc max_manhattan=2.5 max_manhattan=-0.1 max_manhattan=nan; do
        get /api/v1/stability "$p"
        assert_error "$p" 400 "max_manhattan"
    done
    for p in max_jsd=x max_jsd=1.5 max_jsd=-1; do
        get /api/v1/stability "$p"
        assert_error "$p" 400 "max_jsd"
    done
    get /api/v1/stability group_by=a-b
    assert_error "bad group_by" 400 "group_by" "a-b"
    get /api/v1/stability 'query=x{'
    assert_error "bad selector" 400 "query"
    get /api/v1/stability until=yesterday
    assert_error "bad until" 400 "until"
}

# Outliers first means "moved more than its samples explain": a group of 2
# samples far from the whole (Manhattan 0.8) ranks below groups of 10,000
# that moved 0.2, which no chance explains (issue 15: statistics use the
# number of samples).  manhattan_noise is sqrt(2/(pi n)) sum sqrt(p(1-p)).
test_stability_groups_ranked_by_noise() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=sz&host=s&from=$t&until=$((t + 10))" $'a 1\nb 1\n'
    put "service=sz&host=l1&from=$t&until=$((t + 10))" $'a 8000\nb 2000\n'
    put "service=sz&host=l2&from=$t&until=$((t + 10))" $'a 10000\n'
    get /api/v1/stability 'query=sz{}' group_by=host from=$t until=$((t + 120))
    assert_status "stability group_by" 200
    assert_json "the 2-sample group is last" '.groups[-1]|"\(.labels.host) \(.samples)"' 's 2'
    assert_json "though its distance is the largest" '[.groups[].manhattan]|max == (.[-1])' 'true'
    local want
    want=$(awk 'BEGIN { a = 18001 / 20002; b = 2001 / 20002;
                        printf "%.6f", (sqrt(a * (1 - a)) + sqrt(b * (1 - b))) * sqrt(2 / (3.141592653589793 * 2)) }')
    assert_eq "noise of 2 samples" "$want" "$(jqb '.groups[-1].manhattan_noise * 1000000 | round / 1000000 | tostring | .[0:8]')"
    assert_json "z = distance / noise" '.groups[-1]|((.manhattan / .manhattan_noise) - .manhattan_z)|fabs < 1e-9' 'true'
    # values in bytes: samples unknown, no noise, no z; ranked by distance
    put "service=sb&host=x&unit=bytes&from=$t&until=$((t + 10))" $'a 5\nb 5\n'
    put "service=sb&host=y&unit=bytes&from=$t&until=$((t + 10))" $'a 30\n'
    get /api/v1/stability 'query=sb{}' group_by=host from=$t until=$((t + 120))
    assert_json "samples unknown: no noise, no z, by distance" \
        '[.groups[]|"\(.labels.host) \(.samples) \(.manhattan_noise) \(.manhattan_z)"]|join(",")' \
        'x null null null,y null null null'
    assert_json "by distance" '.groups[0].manhattan > .groups[1].manhattan' 'true'
}
