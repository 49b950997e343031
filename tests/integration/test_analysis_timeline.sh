# test_analysis_timeline.sh — GET /api/v1/timeline (totals per step aligned
# to from, the default step, group_by) and GET /api/v1/variance (VProfiler's
# Cov(s_f, T) / Var(T) over windows or groups).

points() { jqb '[.points[]|"\(.[0])=\(.[1])"]|join(" ")'; }

test_timeline_points() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=tl&from=$t&until=$((t + 5))" $'a 3\n'
    put "service=tl&from=$((t + 5))&until=$((t + 15))" $'a 4\n'
    put "service=tl&from=$((t + 35))&until=$((t + 45))" $'b 10\n'
    put "service=tl&from=$((t + 61))&until=$((t + 71))" $'c 1\n'
    get /api/v1/timeline 'query=tl{}' from=$t until=$((t + 90)) step=30
    assert_status "timeline" 200
    assert_json "head" '"\(.step) \(.unit) \(.type) \(.from) \(.until) \(.other_types|tojson)"' \
        "30 samples cpu $t $((t + 90)) []"
    assert_eq "one point per step, by window start" "$t=7 $((t + 30))=10 $((t + 60))=1" "$(points)"
    query 'tl{}' from=$t until=$((t + 90))
    assert_eq "points add up to the query total" "$(jqb .total)" 18
    get /api/v1/timeline 'query=tl{}' from=$t until=$((t + 90)) step=30
    assert_json "sum" '[.points[][1]]|add' 18

    get /api/v1/timeline 'query=tl{}' from=$t until=$((t + 120)) step=1m
    assert_json "step=1m" '"\(.step) \([.points[]|"\(.[0])=\(.[1])"]|join(" "))"' "60 $t=17 $((t + 60))=1"
    get /api/v1/timeline 'query=tl{}' from=$t until=$((t + 70)) step=30
    assert_eq "last step cut at until" "$t=7 $((t + 30))=10 $((t + 60))=1" "$(points)"
    get /api/v1/timeline 'query=tl{}' from=$((t + 10)) until=$((t + 190)) step=60
    assert_eq "aligned to from, empty steps 0" "$((t + 10))=11 $((t + 70))=0 $((t + 130))=0" "$(points)"
    # one type and one unit, as in a query: the unit with the most profiles
    put "service=tl&type=wall&from=$t&until=$((t + 10))" $'w 100\n'
    put "service=tl&rate=100&from=$((t + 40))&until=$((t + 50))" $'r 1\n'
    query 'tl{}' from=$t until=$((t + 90))
    assert_json "query: cpu in samples" '"\(.type) \(.unit) \(.total) \(.other_types|join(",")) \(.other_units|join(","))"' \
        'cpu samples 18 wall nanoseconds'
    get /api/v1/timeline 'query=tl{}' from=$t until=$((t + 90)) step=30
    assert_json "timeline: same type and unit" '"\(.type) \(.unit) \(.other_types|join(","))"' 'cpu samples wall'
    assert_eq "timeline: other units left out" "$t=7 $((t + 30))=10 $((t + 60))=1" "$(points)"
    get /api/v1/timeline 'query=tl{type="wall"}' from=$t until=$((t + 90)) step=30
    assert_eq "type=wall" "$t=100 $((t + 30))=0 $((t + 60))=0" "$(points)"
    get /api/v1/timeline 'query={service="none"}' from=$t until=$((t + 90)) step=30
    assert_status "no data" 200
    assert_eq "all zero" "$t=0 $((t + 30))=0 $((t + 60))=0" "$(points)"
}

test_timeline_rated_and_default_step() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=tr&rate=100&from=$t&until=$((t + 10))" $'a 2\n'
    put "service=tr&rate=50&from=$((t + 40))&until=$((t + 50))" $'a 1\nb 2\n'
    get /api/v1/timeline 'query=tr{}' from=$t until=$((t + 60)) step=30
    assert_json "ns per step" '"\(.unit) \([.points[][1]]|join(" "))"' 'nanoseconds 20000000 60000000'
    query 'tr{}' from=$t until=$((t + 60))
    assert_eq "query total" 80000000 "$(jqb .total)"

    # about 300 points: (until - from) / 300 rounded up to a multiple of 10 s
    get /api/v1/timeline 'query=tr{}' from=$t until=$((t + 3000))
    assert_json "3000 s: step 10" '"\(.step) \(.points|length) \([.points[][1]]|add)"' '10 300 80000000'
    get /api/v1/timeline 'query=tr{}' from=$t until=$((t + 3001))
    assert_json "3001 s: step 20" '"\(.step) \(.points|length) \(.points[150][0])"' "20 151 $((t + 3000))"
    get /api/v1/timeline 'query=tr{}' from=$t until=$((t + 100))
    assert_json "100 s: step 10" '"\(.step) \(.points|length)"' '10 10'
    get /api/v1/timeline 'query=tr{}'
    assert_json "the last hour: step 20" '"\(.step) \(.points|length) \([.points[][1]]|add)"' '20 180 80000000'
}

test_timeline_group_by() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=tg&host=h1&from=$t&until=$((t + 10))" $'a 1\n'
    put "service=tg&host=h1&from=$((t + 60))&until=$((t + 70))" $'a 2\n'
    put "service=tg&host=h2&from=$((t + 60))&until=$((t + 70))" $'a 4\n'
    put "service=tg&from=$t&until=$((t + 10))" $'a 8\n'
    get /api/v1/timeline 'query=tg{}' group_by=host from=$t until=$((t + 120)) step=60
    assert_status "group_by" 200
    assert_json "head" '"\(.step) \(.type) \(.from) \(has("points"))"' "60 cpu $t false"
    assert_json "one series of points per group" \
        '[.groups[]|"\(.labels|tojson) \(.unit) \([.points[]|"\(.[0])=\(.[1])"]|join(","))"]|sort|join(" ")' \
        "{\"host\":\"\"} samples $t=8,$((t + 60))=0 {\"host\":\"h1\"} samples $t=1,$((t + 60))=2 {\"host\":\"h2\"} samples $t=0,$((t + 60))=4"
    assert_json "groups add up to the total" '[.groups[].points[][1]]|add' 15
}

test_variance_windows() {
    start_server
    local t=$(( $(now) - 3000 ))
    # T = 40, 50, 60 (mean 50, variance 200/3); a = 10, 30, 50; b = 30, 20, 10
    # contribution a = Cov(a, T) / Var(T) = (400/3) / (200/3) = 2, b = -1
    put "service=vw&from=$t&until=$((t + 10))" $'m;a 10\nm;b 30\n'
    put "service=vw&from=$((t + 60))&until=$((t + 70))" $'m;a 30\nm;b 20\n'
    put "service=vw&from=$((t + 120))&until=$((t + 130))" $'m;a 50\nm;b 10\n'
    local range=(from=$t until=$((t + 180)))
    get /api/v1/variance 'query=vw{}' step=60 "${range[@]}"
    assert_status "variance" 200
    assert_json "head" '"\(.units) \(.mean) \(.step) \(.type) \(.from) \(.until) \(.other_types|tojson)"' \
        "3 50 60 cpu $t $((t + 180)) []"
    assert_near "variance of T" "$(awk 'BEGIN { printf "%.17g", 200/3 }')" "$(jqb .variance)" 1e-9
    assert_json "by contribution desc" '[.functions[].name]|join(",")' 'a,m,b'
    assert_near "a contribution" 2 "$(jqb '.functions[0].contribution')" 1e-9
    assert_near "m contribution (never a leaf)" 0 "$(jqb '.functions[1].contribution')" 1e-9
    assert_near "b contribution" -1 "$(jqb '.functions[2].contribution')" 1e-9
    assert_near "contributions sum to 1" 1 "$(jqb '[.functions[].contribution]|add')" 1e-9
    # a's sampling error: sum T^2 p(1-p)/n (T - 50)^2 / (sum (T - 50)^2)^2, n = T samples
    assert_near "a contribution_se" \
        "$(awk 'BEGIN { printf "%.17g", sqrt(40 * 0.25 * 0.75 * 100 + 60 * (50 / 60) * (10 / 60) * 100) / 200 }')" \
        "$(jqb '.functions[0].contribution_se')" 1e-9
    assert_json "a mean" '.functions[0].mean' 30
    assert_near "a variance" "$(awk 'BEGIN { printf "%.17g", 800/3 }')" "$(jqb '.functions[0].variance')" 1e-9
    assert_json "b mean" '.functions[2].mean' 20
    get /api/v1/variance 'query=vw{}' step=60 k=1 "${range[@]}"
    assert_json "k=1" '[.functions[].name]|join(",")' 'a'
    # values in bytes: samples unknown, so no sampling error
    put "service=vbytes&unit=bytes&from=$t&until=$((t + 10))" $'m;a 10\nm;b 30\n'
    put "service=vbytes&unit=bytes&from=$((t + 60))&until=$((t + 70))" $'m;a 30\nm;b 20\n'
    get /api/v1/variance 'query=vbytes{}' step=60 "${range[@]}"
    assert_json "no contribution_se without samples" '[.functions[].contribution_se]|unique|map(tostring)|join(",")' 'null'
    get /api/v1/variance 'query=vw{}' "${range[@]}"
    assert_json "default step 60" '"\(.units) \(.step)"' '3 60'

    # many functions, uneven windows: still sums to 1 when k covers them all
    put "service=vm&from=$t&until=$((t + 10))" $'f1 3\nf2 7\nf3 1\nf4;f5 9\n'
    put "service=vm&from=$((t + 60))&until=$((t + 70))" $'f1 11\nf3 2\nf4;f5 1\nf6 5\n'
    put "service=vm&from=$((t + 120))&until=$((t + 130))" $'f2 13\nf4 6\nf6 1\n'
    get /api/v1/variance 'query=vm{}' step=60 k=10 "${range[@]}"
    assert_json "all 6 functions" '.functions|length' 6
    assert_near "sum over all functions" 1 "$(jqb '[.functions[].contribution]|add')" 1e-9
}

test_variance_identical_totals() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=vi&from=$t&until=$((t + 10))" $'a 10\nb 30\n'
    put "service=vi&from=$((t + 60))&until=$((t + 70))" $'a 30\nb 10\n'
    get /api/v1/variance 'query=vi{}' step=60 from=$t until=$((t + 120))
    assert_status "variance" 200
    assert_json "Var(T) = 0: contributions null" \
        '"\(.units) \(.mean) \(.variance) \([.functions[]|"\(.name):\(.contribution):\(.mean):\(.variance)"]|join(","))"' \
        '2 40 0 a:null:20:100,b:null:20:100'
}

test_variance_by_label() {
    start_server
    local t=$(( $(now) - 3000 ))
    # units are hosts: T = 20, 40; a = 10, 30 -> 1; b = 10, 10 -> 0
    put "service=vb&host=h1&from=$t&until=$((t + 10))" $'a 10\nb 10\n'
    put "service=vb&host=h2&from=$((t + 60))&until=$((t + 70))" $'a 30\nb 10\n'
    get /api/v1/variance 'query=vb{}' by=host from=$t until=$((t + 120))
    assert_status "variance by host" 200
    assert_json "groups as units" '"\(.units) \(.mean) \(.variance) \(has("step"))"' '2 30 100 false'
    assert_json "functions" '[.functions[]|"\(.name):\(.contribution):\(.mean):\(.variance)"]|join(",")' \
        'a:1:20:100,b:0:10:0'
}

# Window totals reached three ways must agree: timeline (profile headers),
# stability and variance (merges per window) and plain queries, over
# minute-aligned windows and an hour-aligned range.
test_window_totals_agree() {
    start_server
    local m=$(( ($(now) - 3000) / 60 * 60 )) svc
    for svc in wa wr; do
        local r=''
        [ $svc = wr ] && r='&rate=100'
        put "service=$svc&host=h1$r&from=$((m + 5))&until=$((m + 15))" $'a 1\n'
        put "service=$svc&host=h2$r&from=$((m + 30))&until=$((m + 40))" $'a;b 2\n'
        put "service=$svc&host=h1$r&from=$((m + 65))&until=$((m + 75))" $'c 4\n'
        put "service=$svc&host=h1$r&from=$((m + 185))&until=$((m + 195))" $'a 8\nd 16\n'
        put "service=$svc&host=h2$r&from=$((m + 239))&until=$((m + 249))" $'a 32\n'
    done
    local w want_wa='3 4 0 56' want_wr='30000000 40000000 0 560000000' x
    for svc in wa wr; do
        local want=want_$svc
        want=${!want}
        x=1
        [ $svc = wr ] && x=10000000
        # ranges that cut minutes and hours: profiles count by window start
        query "$svc{}" from=$((m + 20)) until=$((m + 240))
        assert_eq "$svc from mid-minute" $((62 * x)) "$(jqb .total)"
        query "$svc{}" from=$((m + 31)) until=$((m + 239))
        assert_eq "$svc both ends mid-minute" $((28 * x)) "$(jqb .total)"
        query "$svc{}" from=$((m + 30)) until=$((m + 31))
        assert_eq "$svc one second" $((2 * x)) "$(jqb .total)"
        get /api/v1/stability "query=$svc{}" from=$((m + 30)) until=$((m + 270)) step=60
        assert_json "$svc windows not aligned to minutes" '[.windows[].total]|join(" ")' \
            "$((6 * x)) 0 $((24 * x)) $((32 * x))"
        get /api/v1/timeline "query=$svc{}" from=$m until=$((m + 240)) step=60
        assert_eq "$svc timeline" "$want" "$(jqb '[.points[][1]]|join(" ")')"
        get /api/v1/stability "query=$svc{}" from=$m until=$((m + 240)) step=60
        assert_eq "$svc stability window totals" "$want" "$(jqb '[.windows[].total]|join(" ")')"
        assert_json "$svc stability window profiles" '[.windows[].profiles]|join(" ")' '2 1 0 2'
        assert_json "$svc stability window samples" '[.windows[].samples]|join(" ")' '3 4 0 56'
        local got=''
        for w in 0 1 2 3; do
            query "$svc{}" from=$((m + 60 * w)) until=$((m + 60 * w + 60))
            got+="${got:+ }$(jqb .total)"
        done
        assert_eq "$svc queries per window" "$want" "$got"
        local sum
        sum=$(awk -v w="$want" 'BEGIN { n = split(w, x, " "); for (i = 1; i <= n; i++) s += x[i]; print s }')
        get /api/v1/variance "query=$svc{}" from=$m until=$((m + 240)) step=60
        assert_near "$svc variance mean" "$(awk -v s="$sum" 'BEGIN { printf "%.17g", s / 4 }')" "$(jqb .mean)" 1e-6
        local h=$(( m / 3600 * 3600 - 3600 ))
        query "$svc{}" from=$h until=$((h + 3 * 3600))
        assert_eq "$svc hour-aligned range" "$sum" "$(jqb .total)"
        get /api/v1/timeline "query=$svc{}" from=$h until=$((h + 3 * 3600)) step=1h
        assert_json "$svc hourly timeline" '[.points[][1]]|add' "$sum"
        get /api/v1/stability "query=$svc{}" from=$h until=$((h + 3 * 3600)) step=1h
        assert_json "$svc hourly stability" '[.windows[].total]|add' "$sum"
        get /api/v1/top "query=$svc{}" from=$h until=$((h + 3 * 3600))
        assert_json "$svc top over hours" '"\(.total) \(.samples)"' "$sum 63"
    done
}

test_timeline_variance_refusals() {
    start_server
    local p t=$(( $(now) - 3600 ))
    for p in step=abc step=0 step=-10 step=5y step=; do
        get /api/v1/timeline "$p"
        assert_error "timeline $p" 400 "step"
        get /api/v1/variance "$p"
        assert_error "variance $p" 400 "step"
    done
    get /api/v1/timeline step=35ms from=$t until=$((t + 3600))
    assert_error "timeline: 102858 points" 400 "step" "100000"
    get /api/v1/timeline step=36ms from=$t until=$((t + 3600))
    assert_status "timeline: 100000 points are allowed" 200
    get /api/v1/variance step=359ms from=$t until=$((t + 3600))
    assert_error "variance: 10028 windows" 400 "step" "10000"
    get /api/v1/timeline group_by=9lives
    assert_error "timeline bad group_by" 400 "group_by" "9lives"
    get /api/v1/variance by=no-dash
    assert_error "variance bad by" 400 "'by'" "no-dash"
    get /api/v1/variance step=60 by=host
    assert_error "variance step and by" 400 "'step'" "'by'"
    get /api/v1/variance k=x
    assert_error "variance bad k" 400 "'k'"
    get /api/v1/timeline 'query={'
    assert_error "timeline bad selector" 400 "query"
    get /api/v1/variance from=now until=now-1m
    assert_error "variance from after until" 400 "from"
}
