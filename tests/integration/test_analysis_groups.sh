# test_analysis_groups.sh — GET /api/v1/query with group_by (per-group
# trees, the "" group, max_nodes per group) and format=speedscope (with and
# without group_by, units, endValue against the query total).
#
# Profiles sit at explicit unix seconds inside the last hour and every query
# names its own from/until, so each answer is computable by hand.

# Ingests one profile and requires 200.

# The tree of group $1 of $BODY as "path self total" lines, root as <root>.
group_tree_lines() {
    jqd "def flat(p): (p + [.name]) as \$q
             | \"\(if (\$q|length) == 1 then \"<root>\" else (\$q[1:]|join(\";\")) end) \(.self) \(.total)\",
               (.children[] | flat(\$q));
           .groups[$1].tree | flat([])"
}

# Profile $1 of a speedscope answer ($BODY) as folded lines "a;b N",
# sorted bytewise: the frames of each sample resolved through shared.frames.
ss_folded() {
    jqd ".shared.frames as \$f | .profiles[$1] as \$p
         | range(\$p.samples|length) as \$i
         | \"\([\$p.samples[\$i][] | \$f[.].name] | join(\";\")) \(\$p.weights[\$i])\"" | LC_ALL=C sort
}

test_group_by_query_groups() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=gb&env=prod&host=h1&from=$t&until=$((t + 10))" $'a;x 30\na;y 10\n'
    put "service=gb&env=prod&host=h2&from=$((t + 60))&until=$((t + 70))" $'a;x 20\n'
    put "service=gb&env=dev&host=h1&from=$t&until=$((t + 10))" $'b 5\n'
    put "service=gb&host=h3&from=$t&until=$((t + 10))" $'c 50\n'
    local range=(from=$t until=$((t + 120)))

    query 'gb{}' group_by=env "${range[@]}"
    assert_status "group_by=env" 200
    assert_json "head" '"\(.type) \(.from) \(.until) \(.other_types|tojson) \(has("tree"))"' \
        "cpu $t $((t + 120)) [] false"
    assert_json "groups by total desc; no env -> \"\"" \
        '[.groups[]|"\(.labels|tojson)=\(.total)/\(.samples)/\(.profiles)/\(.series)/\(.unit)"]|join(" ")' \
        '{"env":"prod"}=60/60/2/2/samples {"env":""}=50/50/1/1/samples {"env":"dev"}=5/5/1/1/samples'
    assert_eq "prod tree merges both hosts" "<root> 0 60
a 0 60
a;x 50 50
a;y 10 10" "$(group_tree_lines 0)"
    assert_eq "\"\" group holds the series without env" "<root> 0 50
c 50 50" "$(group_tree_lines 1)"
    assert_json "no truncation" '[.groups[]|"\(.truncated.nodes)/\(.truncated.total)"]|join(" ")' '0/0 0/0 0/0'

    query 'gb{}' group_by=env,host "${range[@]}"
    assert_status "group_by=env,host" 200
    assert_json "two keys" '[.groups[]|"\(.labels|tojson)=\(.total)"]|join(" ")' \
        '{"env":"","host":"h3"}=50 {"env":"prod","host":"h1"}=40 {"env":"prod","host":"h2"}=20 {"env":"dev","host":"h1"}=5'
    assert_json "group totals add up to the query total" '[.groups[].total]|add' 115

    query 'gb{}' group_by=nosuchlabel "${range[@]}"
    assert_json "a label no series has: one \"\" group with everything" \
        '[.groups[]|"\(.labels|tojson)=\(.total)/\(.series)"]|join(" ")' '{"nosuchlabel":""}=115/4'

    query 'gb{env="prod"}' group_by=host format=json "${range[@]}"
    assert_json "selector applies before grouping" '[.groups[]|"\(.labels.host)=\(.total)"]|join(" ")' 'h1=40 h2=20'

    query '{service="nothing"}' group_by=env "${range[@]}"
    assert_status "no series" 200
    assert_json "no groups" '.groups|tojson' '[]'
}

test_group_by_query_max_nodes_per_group() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=gm&env=prod&from=$t&until=$((t + 10))" $'a;x 50\na;y 10\n'
    put "service=gm&env=dev&from=$t&until=$((t + 10))" $'b;z 5\n'
    query 'gm{}' group_by=env max_nodes=1 from=$t until=$((t + 60))
    assert_status "max_nodes=1" 200
    assert_eq "prod keeps its largest node" "<root> 0 60
a 0 60" "$(group_tree_lines 0)"
    assert_json "prod truncation" '.groups[0].truncated|"\(.nodes) \(.total)"' '2 60'
    assert_eq "dev keeps its own largest node" "<root> 0 5
b 0 5" "$(group_tree_lines 1)"
    assert_json "dev truncation" '.groups[1].truncated|"\(.nodes) \(.total)"' '1 5'
    assert_json "totals stay exact" '[.groups[].total]|join(" ")' '60 5'
}

test_group_by_query_rated_units() {
    start_server
    local t=$(( $(now) - 3000 ))
    # rate 100 Hz: each count weighs 10 ms
    put "service=gu&build=v1&rate=100&from=$t&until=$((t + 10))" $'m;a 3\nm;b 1\n'
    put "service=gu&build=v2&from=$t&until=$((t + 10))" $'m;a 7\n'
    query 'gu{}' group_by=build from=$t until=$((t + 60))
    assert_json "each group in its own unit" \
        '[.groups[]|"\(.labels.build)=\(.total)/\(.samples)/\(.unit)"]|join(" ")' \
        'v1=40000000/4/nanoseconds v2=7/7/samples'
}

test_speedscope_single_profile() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=ss&rate=100&from=$t&until=$((t + 10))" $'main;a 3\nmain;b 1\nmain 2\nmain;a;c 1\n'
    put "service=ss&rate=100&from=$((t + 60))&until=$((t + 70))" $'main;a 1\n'
    local range=(from=$t until=$((t + 120)))
    query 'ss{}' "${range[@]}"
    local total=$(jqb .total)
    assert_eq "query total" 80000000 "$total"
    query 'ss{}' format=folded "${range[@]}"
    local folded=$BODY

    query 'ss{}' format=speedscope "${range[@]}"
    assert_status "speedscope" 200
    assert_contains "content type" "$(header Content-Type)" "application/json"
    assert_json "schema" '."$schema"' 'https://www.speedscope.app/file-format-schema.json'
    assert_json "one sampled profile" '[.profiles[]|"\(.type) \(.unit) \(.startValue)"]|join(",")' 'sampled nanoseconds 0'
    assert_json "endValue = query total" '.profiles[0].endValue' "$total"
    assert_json "weights add up to endValue" '(.profiles[0].weights|add) == .profiles[0].endValue' true
    assert_json "one weight per sample" '(.profiles[0].weights|length) == (.profiles[0].samples|length)' true
    assert_json "frames are distinct names" '[.shared.frames[].name]|(length == (unique|length))' true
    assert_json "frame names" '[.shared.frames[].name]|sort|join(",")' 'a,b,c,main'
    assert_eq "samples root-first, weighted in ns: the folded stacks" "$folded" "$(ss_folded 0)"
    assert_eq "folded stacks as expected" $'main 20000000\nmain;a 40000000\nmain;a;c 10000000\nmain;b 10000000' "$folded"

    put "service=ss2&from=$t&until=$((t + 10))" $'x;y 4\nx 1\n'
    query 'ss2{}' format=speedscope "${range[@]}"
    assert_json "samples profile: unit none" '.profiles|map("\(.unit) \(.endValue)")|join(",")' 'none 5'
    assert_eq "samples stacks" $'x 1\nx;y 4' "$(ss_folded 0)"
    query '{service="nothing"}' format=speedscope "${range[@]}"
    assert_status "speedscope of nothing" 200
    assert_json "one empty profile" '.profiles|map("\(.endValue) \(.samples|length) \(.weights|length)")|join(",")' '0 0 0'
}

test_speedscope_group_by() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=sg&build=v1&rate=100&from=$t&until=$((t + 10))" $'m;a 2\n'
    put "service=sg&build=v2&rate=100&from=$t&until=$((t + 10))" $'m;b 4\nm;a 1\n'
    put "service=sg&rate=100&from=$t&until=$((t + 10))" $'m;c 1\n'
    local range=(from=$t until=$((t + 60)))
    query 'sg{}' group_by=build "${range[@]}"
    local totals
    totals=$(jqb '[.groups[].total]|join(" ")')
    assert_eq "group totals" '50000000 20000000 10000000' "$totals"

    query 'sg{}' group_by=build format=speedscope "${range[@]}"
    assert_status "group_by speedscope" 200
    assert_json "one profile per group, by total, named k=v" \
        '[.profiles[]|"\(.name)|\(.type)|\(.unit)|\(.startValue)"]|join(" ")' \
        'build=v2|sampled|nanoseconds|0 build=v1|sampled|nanoseconds|0 build=|sampled|nanoseconds|0'
    assert_json "endValues = group totals" '[.profiles[].endValue]|join(" ")' "$totals"
    assert_json "frames shared: each function once" '[.shared.frames[].name]|sort|join(",")' 'a,b,c,m'
    assert_eq "v2 stacks" $'m;a 10000000\nm;b 40000000' "$(ss_folded 0)"
    assert_eq "v1 stacks" 'm;a 20000000' "$(ss_folded 1)"
    assert_eq "\"\" stacks" 'm;c 10000000' "$(ss_folded 2)"

    query 'sg{}' group_by=build,service format=speedscope "${range[@]}"
    assert_json "two keys in the name" '[.profiles[].name]|join(" ")' \
        'build=v2,service=sg build=v1,service=sg build=,service=sg'
}

test_speedscope_group_by_mixed_units() {
    start_server
    local t=$(( $(now) - 3000 ))
    put "service=sm&build=rated&rate=100&from=$t&until=$((t + 10))" $'m;a 2\n'
    put "service=sm&build=plain&from=$t&until=$((t + 10))" $'m;b 5\n'
    query 'sm{}' group_by=build format=speedscope from=$t until=$((t + 60))
    assert_status "speedscope" 200
    # each profile states its own group's unit: rated -> nanoseconds, counts -> none
    assert_json "unit per profile" '[.profiles[]|"\(.name) \(.unit) \(.endValue)"]|join(", ")' \
        'build=rated nanoseconds 20000000, build=plain none 5'
}

test_group_by_query_refusals() {
    start_server
    query '{}' group_by=env format=folded
    assert_error "group_by with folded" 400 "group_by" "folded"
    query '{}' group_by=bad-name
    assert_error "bad label name" 400 "group_by" "bad-name"
    query '{}' group_by=
    assert_error "empty group_by" 400 "group_by"
    query '{}' group_by=a,b,c,d,e,f,g,h,i
    assert_error "9 keys" 400 "group_by" "8"
    query '{}' format=svg
    assert_error "unknown format" 400 "format" "speedscope"
}
