# test_query.sh — GET /api/v1/query and the listings: tree shape and order,
# folded output, max_nodes, selectors, type and unit choice, time ranges.

test_query_children_sorted_by_total_then_name() {
    start_server
    ingest 'service=ord' $'r;b 5\nr;a 5\nr;c 9\nr;c;d 2\nr 1\nz 3\ny 3\n'
    assert_status "ingest" 200
    query 'ord{}'
    assert_status "query" 200
    assert_eq "order: total desc, then name" "<root> 0 28
r 1 22
r;c 9 11
r;c;d 2 2
r;a 5 5
r;b 5 5
y 3 3
z 3 3" "$(tree_lines)"
    assert_json "root name" '.tree.name' root
    assert_json "leaf has empty children" '.tree.children[0].children[0].children[0].children|tojson' '[]'
}

test_query_folded_output() {
    start_server
    ingest 'service=fo' $'r;c;d 2\nr;b 5\nz 3\nr 1\nr;a 5\nr;b 1\n'
    query 'fo{}' format=folded
    assert_status "folded" 200
    assert_contains "content type" "$(header Content-Type)" "text/plain"
    assert_eq "folded: one line per stack with self > 0, sorted by stack" \
        $'r 1\nr;a 5\nr;b 6\nr;c;d 2\nz 3' "$BODY"
    query 'fo{}' format=json
    assert_status "format=json" 200
    assert_json "json total" '.total' 17
}

test_query_max_nodes() {
    start_server
    # nodes (root excluded): a 80, a;x 50, a;y 30, b 15, c 5, c;z 4
    ingest 'service=mx' $'a;x 50\na;y 30\nb 15\nc;z 4\nc 1\n'
    query 'mx{}' max_nodes=3
    assert_status "max_nodes=3" 200
    assert_eq "3 largest kept, exact values" "<root> 0 100
a 0 80
a;x 50 50
a;y 30 30" "$(tree_lines)"
    assert_json "truncated" '"\(.truncated.nodes) \(.truncated.total)"' '3 20'
    assert_json "total stays exact" '.total' 100

    query 'mx{}' max_nodes=5
    assert_eq "5 largest kept" "<root> 0 100
a 0 80
a;x 50 50
a;y 30 30
b 15 15
c 1 5" "$(tree_lines)"
    assert_json "truncated" '"\(.truncated.nodes) \(.truncated.total)"' '1 4'

    query 'mx{}' max_nodes=6
    assert_json "all 6 fit" '"\(.truncated.nodes) \(.truncated.total)"' '0 0'
    assert_json "6 nodes" '[.tree|recurse(.children[])]|length - 1' 6
    query 'mx{}' max_nodes=0
    assert_json "0 = unlimited" '"\(.truncated.nodes) \(.truncated.total) \([.tree|recurse(.children[])]|length - 1)"' '0 0 6'
    query 'mx{}' max_nodes=1
    assert_eq "1 node" "<root> 0 100
a 0 80" "$(tree_lines)"
    assert_json "truncated" '"\(.truncated.nodes) \(.truncated.total)"' '5 100'
}

test_query_max_nodes_default_8192() {
    start_server
    it_tmp
    seq -f 'r;f%05g 1' 1 9000 >"$IT_TMP/wide.folded"
    ingest_file 'service=wide' "$IT_TMP/wide.folded"
    assert_status "ingest 9000 leaves" 200
    query 'wide{}'
    assert_status "query" 200
    assert_json "default keeps 8192 nodes" '[.tree|recurse(.children[])]|length - 1' 8192
    assert_json "truncated" '"\(.truncated.nodes) \(.truncated.total)"' '809 809'
    assert_json "kept values exact" '"\(.tree.total) \(.tree.children[0].name) \(.tree.children[0].total)"' '9000 r 9000'
    query 'wide{}' max_nodes=0
    assert_json "unlimited" '"\([.tree|recurse(.children[])]|length - 1) \(.truncated.nodes)"' '9001 0'
    query 'wide{}' format=folded
    assert_eq "folded is never truncated" 9000 "$(wc -l <"$BODY_FILE")"
}

test_query_selectors() {
    start_server
    ingest 'service=svc1&env=prod' $'x 1\n'
    ingest 'service=svc1&env=dev' $'x 10\n'
    ingest 'service=svc2&env=prod' $'x 100\n'
    ingest 'service=svc3' $'x 1000\n'
    local sel want
    while IFS='@' read -r sel want; do
        sel=${sel% }; want=${want# }
        query "$sel"
        assert_status "selector $sel" 200 || continue
        assert_json "total for $sel" '.total' "$want"
    done <<'EOF'
{} @ 1111
 @ 1111
{service="svc1"} @ 11
svc1{} @ 11
svc1 @ 11
svc1{env="prod"} @ 1
{service="svc1",env="dev"} @ 10
{ service = "svc1" , env = "dev" } @ 10
{service="svc1",env="dev",} @ 10
{env="prod"} @ 101
{env!="prod"} @ 1010
{env=~"pr.*"} @ 101
{env=~"pr"} @ 0
{env=~"prod|dev"} @ 111
{env!~"d.*"} @ 1101
{service=~"svc[12]",env="prod"} @ 101
{service!~"svc[12]"} @ 1000
{service="nope"} @ 0
EOF
    query '{service="nope"}'
    assert_json "empty answer" '"\(.total) \(.samples) \(.profiles) \(.series) \(.tree.total) \(.tree.children|length)"' '0 0 0 0 0 0'
}

test_query_selector_value_escapes() {
    start_server
    ingest "service=esc&q=$(urlenc 'a"b\c')" $'x 3\n'
    ingest "service=esc&q=plain" $'x 4\n'
    query '{q="a\"b\\c"}'
    assert_status "escaped value" 200
    assert_json "escaped value matches" '.total' 3
    get /api/v1/label/q/values
    assert_json "raw value" '.values|sort|.[0]' 'a"b\c'
}

test_query_type_pick() {
    start_server
    ingest 'service=t1&type=wall' $'x 10\n'
    ingest 'service=t1&type=cpu' $'x 1\n'
    ingest 'service=t1&type=alloc' $'x 100\n'
    query '{service="t1"}'
    assert_json "cpu preferred" '"\(.type) \(.total) \(.other_types|join(","))"' 'cpu 1 alloc,wall'
    query '{service="t1",type="wall"}'
    assert_json "type= given" '"\(.type) \(.total) \(.other_types|length)"' 'wall 10 0'

    ingest 'service=t2&type=wall' $'x 1\n'
    ingest 'service=t2&type=samples' $'x 10\n'
    ingest 'service=t2&type=alloc' $'x 100\n'
    query '{service="t2"}'
    assert_json "samples next" '"\(.type) \(.total) \(.other_types|join(","))"' 'samples 10 alloc,wall'

    ingest 'service=t3&type=wall' $'x 1\n'
    ingest 'service=t3&type=alloc_space' $'x 10\n'
    query '{service="t3"}'
    assert_json "else alphabetical first" '"\(.type) \(.total) \(.other_types|join(","))"' 'alloc_space 10 wall'

    query '{service=~"t[123]"}'
    assert_json "across services" '"\(.type) \(.total) \(.series) \(.other_types|join(","))"' 'cpu 1 1 alloc,alloc_space,samples,wall'
}

test_query_mixed_units() {
    start_server
    ingest 'service=mu&host=a' $'x 3\n'
    ingest 'service=mu&host=a' $'x 4\n'
    ingest 'service=mu&host=b&unit=bytes' $'x 1000\n'
    query 'mu{}'
    assert_status "mixed units" 200
    assert_json "majority unit wins" '"\(.unit) \(.total) \(.profiles)"' 'samples 7 2'
    assert_json "other units" '"\(.other_units|tojson) \(.skipped_profiles)"' '["bytes"] 1'
    ingest 'service=mu&host=c&rate=100' $'x 1\n'
    query 'mu{}'
    assert_json "two other units" '"\(.unit) \(.total) \(.other_units|tojson) \(.skipped_profiles)"' 'samples 7 ["bytes","nanoseconds"] 2'
    query 'mu{host="b"}'
    assert_json "single unit: nothing skipped" '"\(.unit) \(.total) \(.other_units // [] | length) \(.skipped_profiles // 0)"' 'bytes 1000 0 0'
}

test_query_time_range() {
    start_server
    local t=$(( $(now) - 5400 ))
    ingest "service=tr&from=$t&until=$((t + 10))" $'old 1\n'
    ingest "service=tr&from=$((t + 100))&until=$((t + 110))" $'old2 10\n'
    ingest 'service=tr' $'new 100\n'
    query 'tr{}'
    assert_json "default range is the last hour" '.total' 100
    query 'tr{}' from=$t until=$((t + 100))
    assert_json "explicit range" '"\(.total) \(.from) \(.until)"' "1 $t $((t + 100))"
    query 'tr{}' from="$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)" until=$((t + 101))
    assert_json "RFC3339 from" '"\(.total) \(.from)"' "11 $t"
    query 'tr{}' from=now-2h
    assert_json "now-2h .. now" '.total' 111
    query 'tr{}' from=now-2h until=now-1h
    assert_json "now-2h .. now-1h" '.total' 11
    get /api/v1/series 'query=tr{}' from=now-2h until=now-1h
    assert_json "series first/last/profiles in range" '.series[0]|"\(.first) \(.last) \(.profiles) \(.samples)"' \
        "$t $((t + 100)) 2 11"
}

test_query_listings() {
    start_server
    local t=$(( $(now) - 3000 ))
    ingest "service=la&zone=z1&from=$t&until=$((t + 10))" $'x 1\n'
    ingest "service=la&zone=z2&pod=p" $'x 2\n'
    ingest "service=lb&zone=z1" $'x 4\n'
    get /api/v1/labels from=now-1h
    assert_status "labels" 200
    assert_json "all labels" '[.labels[]|"\(.name):\(.values)"]|join(",")' 'pod:1,service:2,type:1,zone:2'
    get /api/v1/labels 'query=la{}' from=$((t + 1))
    assert_json "only series with profiles in range" '[.labels[]|"\(.name):\(.values)"]|join(",")' 'pod:1,service:1,type:1,zone:1'
    get /api/v1/label/zone/values from=now-1h
    assert_json "zone values" '.values|join(",")' 'z1,z2'
    get /api/v1/label/zone/values 'query={service="la"}' from=$((t + 1))
    assert_json "zone values in range" '.values|join(",")' 'z2'
    get /api/v1/label/nothere/values
    assert_json "unknown label" '.values|length' 0
    get /api/v1/series 'query={zone="z1"}' from=now-1h
    assert_json "series by selector" '[.series[]|"\(.labels.service):\(.samples):\(.unit)"]|sort|join(",")' 'la:1:samples,lb:4:samples'
    get /api/v1/series 'query={zone="z1"}'
    assert_json "default range excludes nothing here" '.series|length' 2
    get /api/v1/series 'query={zone="z1"}' from=$((t + 1))
    assert_json "old series dropped by range" '[.series[].labels.service]|join(",")' 'lb'
}

test_query_real_data_shape() {
    need_system_mix
    start_server
    ingest_file 'service=system' "$SYSTEM_MIX"
    assert_status "ingest" 200
    # the root frames are process names; their totals must equal the input
    local want
    want=$(awk '{ n = $NF; split($0, f, ";"); sub(/ [0-9]+$/, "", f[1]); s[f[1]] += n }
                END { for (k in s) print k, s[k] }' "$SYSTEM_MIX" | LC_ALL=C sort)
    query 'system{}'
    assert_eq "per-process totals" "$want" "$(jqd '.tree.children[]|"\(.name) \(.total)"' | LC_ALL=C sort)"
    query 'system{}' max_nodes=50
    assert_json "max_nodes=50" '[.tree|recurse(.children[])]|length - 1' 50
    assert_json "kept + dropped self = total" '([.tree|recurse(.children[])|.self]|add) + .truncated.total' 8873
}

# ---- the parallel merge answers byte for byte what one thread answers ----

# The answers compared: the tree, folded, pprof, a cut tree, groups, top,
# a diff (one zone's first half against everything) and a timeline.
pm_answers() {
    local out=$1 from=$2 until=$3 mid=$(( ($2 + $3) / 2 ))
    mkdir -p "$out"
    get /api/v1/query 'query=pm{}' from=$from until=$until && cp "$BODY_FILE" "$out/tree"
    get /api/v1/query 'query=pm{}' from=$from until=$until format=folded && cp "$BODY_FILE" "$out/folded"
    curl -sS -g -o "$out/pprof" "$BASE/api/v1/query?query=pm%7B%7D&from=$from&until=$until&format=pprof" # binary: not in $BODY
    get /api/v1/query 'query=pm{}' from=$from until=$until max_nodes=40 && cp "$BODY_FILE" "$out/cut"
    get /api/v1/query 'query=pm{}' from=$from until=$until group_by=zone && cp "$BODY_FILE" "$out/groups"
    get /api/v1/top 'query=pm{}' from=$from until=$until limit=30 && cp "$BODY_FILE" "$out/top"
    get /api/v1/diff 'left=pm{zone="z0"}' 'right=pm{}' from=$from until=$until left_until=$mid && cp "$BODY_FILE" "$out/diff"
    get /api/v1/timeline 'query=pm{}' from=$from until=$until step=60 && cp "$BODY_FILE" "$out/timeline"
}

# 64 series of the same 18,000 stacks: 1,152,000 (stack, count)
# pairs in one partition, past the 1 Mi pairs from which a merge is split
# across threads; the same directory served with --merge-threads 1 and 4
# (on any number of cores) must answer byte for byte the same.
test_query_parallel_merge_answers_the_same() {
    start_server --retention 0 --merge-threads 4
    it_tmp
    local t0 i from until
    t0=$(( $(now) / 600 * 600 - 1200 ))
    for ((i = 0; i < 64; i++)); do
        awk -v i=$i 'BEGIN { for (k = 0; k < 18000; k++)
                printf "main;m%d;h%d;leaf%d %d\n", k % 37, k * 7 % 101, k, 1 + (k + i) % 9 }' >"$IT_TMP/body"
        post "/api/v1/ingest?service=pm&instance=i$i&zone=z$((i % 3))&from=$((t0 + i))&until=$((t0 + i + 10))" \
            --data-binary "@$IT_TMP/body"
        assert_status "push $i" 200 || return
    done
    from=$((t0 - 60))
    until=$((t0 + 600))
    pm_answers "$IT_TMP/par" $from $until
    BODY=$(cat "$IT_TMP/par/tree")
    assert_json "the merged profiles" '.profiles' 64
    assert_eq "stacks merged" 18000 "$(wc -l <"$IT_TMP/par/folded")"
    restart_server --retention 0 --merge-threads 1
    pm_answers "$IT_TMP/one" $from $until
    local f
    for f in tree folded pprof cut groups top diff timeline; do
        [ -s "$IT_TMP/one/$f" ] || fail "no $f answer"
        cmp -s "$IT_TMP/par/$f" "$IT_TMP/one/$f" ||
            fail "$f: 4 merge threads and 1 answer differently: $(cmp "$IT_TMP/par/$f" "$IT_TMP/one/$f" 2>&1 | head -1)"
    done
}
