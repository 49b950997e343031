# test_samples.sh — samples apart from values (issue 15): every stored
# profile says how many samples are behind its values, or that nobody
# knows, and every interval and test uses that number, not the value in
# nanoseconds or bytes.  Also the aggregation (sum or average) a profile is
# stored with.

GO_JSON_SORT="$REPO/../shared/data/go-json-sort.cpu.pb.gz"

# The 95% Wilson interval of share p from n samples, as "lo hi" (jq).
wilson_jq='def wilson($p; $n): (1.96 * 1.96) as $z2
    | (($p + $z2 / (2 * $n)) / (1 + $z2 / $n)) as $c
    | (1.96 * (($p * (1 - $p) / $n + $z2 / (4 * $n * $n)) | sqrt) / (1 + $z2 / $n)) as $h
    | [$c - $h, $c + $h];'

test_samples_go_cpu_pprof_counts_samples_not_nanoseconds() {
    start_server
    local t=$(( $(now) - 300 ))
    post "/ingest?name=gojs&format=pprof&from=$t&until=$((t + 10))" --data-binary @"$GO_JSON_SORT"
    assert_status "pprof push" 200
    # 395 samples of 10 ms: the cpu profile holds 3.95e9 ns from 395 samples
    assert_json "stored profiles" '[.profiles[]|"\(.type) \(.unit) \(.total) \(.samples) \(.aggregation)"]|join(",")' \
        'samples count 395 395 sum,cpu nanoseconds 3950000000 395 sum'
    assert_json "window stored" '"\(.profiles[0].from) \(.profiles[0].until)"' "$t $((t + 10))"
    get /api/v1/top 'query=gojs{type="cpu"}' from=now-1h limit=1
    assert_json "top samples" '"\(.total) \(.samples)"' '3950000000 395'
    assert_json "asyncPreempt" '.functions[0]|"\(.name) \(.self)"' 'runtime.asyncPreempt 420000000'
    # the interval is Wilson's at n = 395 (width about 0.061), not at 3.95e9
    assert_json "interval at n=395" "$wilson_jq"' .functions[0] as $f | wilson($f.self_share; 395) as $w
        | (($f.self_ci95[0] - $w[0]) | fabs) < 1e-9 and (($f.self_ci95[1] - $w[1]) | fabs) < 1e-9' 'true'
    assert_json "interval width" '.functions[0].self_ci95 | (.[1] - .[0]) > 0.05' 'true'
    query 'gojs{type="cpu"}' from=now-1h
    assert_json "query samples" '"\(.total) \(.samples)"' '3950000000 395'
    get /api/v1/series 'query=gojs{}'
    assert_json "series samples" '[.series[]|"\(.labels.type)=\(.samples)"]|sort|join(",")' 'cpu=395,samples=395'
}

test_samples_compare_uses_sample_counts() {
    start_server
    local t=$(( $(now) - 600 ))
    # the same Go profile in two windows: 395 samples a side, so small
    # differences are not significant (at n = 3.95e9 every one would be)
    post "/ingest?name=cmp&format=pprof&from=$t&until=$((t + 10))" --data-binary @"$GO_JSON_SORT"
    assert_status "left" 200
    ingest "service=cmp&type=cpu&rate=100&from=$((t + 300))&until=$((t + 310))" \
        $'main;runtime.asyncPreempt 40\nmain;work 355\n'
    assert_status "right (folded, 100 Hz)" 200
    get /api/v1/compare 'left=cmp{type="cpu"}' 'right=cmp{type="cpu"}' "left_from=$t" "left_until=$((t + 100))" \
        "right_from=$((t + 300))" "right_until=$((t + 400))" limit=100000
    assert_status "compare" 200
    assert_json "sides" '"\(.left.samples) \(.right.samples)"' '395 395'
    # 42 vs 40 of 395: within noise
    assert_json "asyncPreempt not significant" \
        '.functions[]|select(.name == "runtime.asyncPreempt")|.significant' 'false'
}

test_samples_unknown_means_no_interval() {
    start_server
    local t=$(( $(now) - 300 ))
    ingest "service=heap&type=alloc_space&unit=bytes&from=$t&until=$((t + 10))" $'main;alloc 4096\nmain;grow 1024\n'
    assert_status "bytes push" 200
    assert_json "ingest answer" '"\(.unit) \(.total) \(.samples)"' 'bytes 5120 null'
    get /api/v1/top 'query=heap{}' from=now-1h
    assert_json "no n, no interval" '"\(.samples) \(.functions[0].self_ci95) \(.functions[0].self_share)"' 'null null 0.8'
    query 'heap{}' from=now-1h
    assert_json "query samples" '.samples' 'null'
    # a unit that counts samples knows them
    ingest "service=objs&type=alloc_objects&unit=objects&from=$t&until=$((t + 10))" $'main;alloc 30\n'
    assert_json "objects are samples" '.samples' '30'
    # compare against a side without samples: no significance is claimed
    ingest "service=heap&type=alloc_space&unit=bytes&from=$((t + 100))&until=$((t + 110))" $'main;alloc 10\n'
    get /api/v1/compare 'left=heap{}' 'right=heap{}' "left_from=$t" "left_until=$((t + 50))" \
        "right_from=$((t + 100))" "right_until=$((t + 150))"
    assert_json "significance unknown" '[.functions[].significant]|unique|map(tostring)|join(",")' 'null'
}

test_samples_aggregation_stored_and_validated() {
    start_server
    local t=$(( $(now) - 300 ))
    ingest "service=h&type=inuse_space&unit=bytes&from=$t&until=$((t + 10))" $'main;alloc 100\n'
    assert_json "inuse_space is a gauge" '.aggregation' 'average'
    ingest "service=h&type=alloc_space&unit=bytes&from=$t&until=$((t + 10))" $'main;alloc 100\n'
    assert_json "alloc_space is a counter" '.aggregation' 'sum'
    ingest "service=h&type=threads&unit=count&aggregation=average&from=$t&until=$((t + 10))" $'main 7\n'
    assert_json "aggregation=average" '.aggregation' 'average'
    ingest "service=h&type=x&aggregation=mean" $'main 7\n'
    assert_error "bad aggregation" 400 "'aggregation'" "mean" "sum, average"
    post "/ingest?name=p.inuse_space&units=bytes&aggregationType=median" --data-binary $'main 1\n'
    assert_error "bad aggregationType" 400 "'aggregationType'" "median"
    post "/ingest?name=p2.goroutines&units=goroutines&aggregationType=sum&from=$t&until=$((t + 10))" \
        --data-binary $'main 3\n'
    assert_json "the client's aggregationType wins" '.aggregation' 'sum'
    # Pyroscope's sample_type_config in a multipart push
    printf '{"cpu":{"units":"nanoseconds","aggregation":"average"}}' >"$IT_TMP/stc.json"
    post "/ingest?name=mp&format=pprof&from=$t&until=$((t + 10))" \
        -F "profile=@$GO_JSON_SORT;type=application/octet-stream" -F "sample_type_config=@$IT_TMP/stc.json"
    assert_json "sample_type_config" '[.profiles[]|"\(.type)=\(.aggregation)"]|join(",")' 'samples=sum,cpu=average'
    printf '{"cpu":{"aggregation":7}}' >"$IT_TMP/bad.json"
    post "/ingest?name=mp3&format=pprof" -F "profile=@$GO_JSON_SORT" -F "sample_type_config=@$IT_TMP/bad.json"
    assert_error "bad sample_type_config" 400 "sample_type_config" "cpu"
    get /api/v1/series 'query=mp3{}'
    assert_json "nothing stored" '.series|length' '0'
}

test_samples_survive_restart_and_rollups() {
    start_server
    local h=$(( ($(now) / 3600 - 3) * 3600 ))
    # a whole hour of 10 s windows at 100 Hz: read from the rollups once
    # compacted, raw before; the samples must be the same either way
    local i
    for i in 0 1 2 3 4 5; do
        ingest "service=r&type=cpu&rate=100&from=$((h + i * 600))&until=$((h + i * 600 + 10))" $'main;a 3\nmain;b 2\n'
        assert_status "push $i" 200
    done
    ingest "service=r&type=alloc_space&unit=bytes&from=$h&until=$((h + 10))" $'main;a 3\n'
    query 'r{type="cpu"}' "from=$h" "until=$((h + 3600))"
    assert_json "raw" '"\(.total) \(.samples) \(.profiles)"' '300000000 30 6'
    restart_server
    assert_ge "rollups built (1 h and six 10 min buckets, cpu and bytes)" 8 \
        "$(wait_metric flamedb_rollups_built_total 8)"
    query 'r{type="cpu"}' "from=$h" "until=$((h + 3600))"
    assert_json "after restart and compaction" '"\(.total) \(.samples) \(.profiles)"' '300000000 30 6'
    query 'r{type="alloc_space"}' "from=$h" "until=$((h + 3600))"
    assert_json "unknown stays unknown in a rollup" '"\(.total) \(.samples)"' '3 null'
}

# Heap in use is a gauge: three snapshots of ~15 MB merge to their average
# over time, not 45 MB; two instances add up.  Query, top, timeline,
# group-by, series listing and the exports agree.
test_samples_gauges_average_over_time() {
    start_server
    local t=$(( ($(now) / 3600 - 2) * 3600 ))
    local i v
    for i in 0 1 2; do
        v=$((15000000 + i * 300000))
        ingest "service=gheap&instance=a&type=inuse_space&unit=bytes&from=$((t + i * 10))&until=$((t + i * 10 + 10))" \
            "main;cache;alloc $v"$'\n'"main;buf $((v / 3))"$'\n'
        assert_json "snapshot $i stored as a gauge" '.aggregation' 'average'
    done
    ingest "service=gheap&instance=b&type=inuse_space&unit=bytes&from=$t&until=$((t + 10))" $'main;buf 1000\n'
    # a: alloc (15.0+15.3+15.6)/3 = 15.3 MB, buf 5.1 MB; b: buf 1000
    query 'gheap{}' "from=$t" "until=$((t + 3600))"
    assert_json "averaged, then summed across instances" '"\(.aggregation) \(.total)"' 'average 20401000'
    assert_json "alloc" '[.tree|..|objects|select(.name=="alloc")|.total]|.[0]' '15300000'
    query 'gheap{instance="a"}' "from=$t" "until=$((t + 3600))" format=folded
    assert_eq "folded export of the average" $'main;buf 5100000\nmain;cache;alloc 15300000' "$BODY"
    get /api/v1/top 'query=gheap{}' "from=$t" "until=$((t + 3600))"
    assert_json "top" '[.functions[]|"\(.name)=\(.self)"]|join(",")' 'alloc=15300000,buf=5101000,main=0,cache=0'
    get /api/v1/timeline 'query=gheap{}' "from=$t" "until=$((t + 3600))" step=1h
    assert_json "timeline" '[.points[][1]]|join(",")' '20401000'
    query 'gheap{}' "from=$t" "until=$((t + 3600))" group_by=instance
    assert_json "groups" '[.groups[]|"\(.labels.instance)=\(.total)"]|join(",")' 'a=20400000,b=1000'
    get /api/v1/series 'query=gheap{}' "from=$t" "until=$((t + 3600))"
    assert_json "series listing" '[.series[]|"\(.labels.instance) \(.aggregation) \(.total)"]|join(",")' \
        'a average 20400000,b average 1000'
    # rollups (after compaction) answer the same
    assert_ge "rollups built" 4 "$(wait_metric flamedb_rollups_built_total 4)"
    query 'gheap{}' "from=$t" "until=$((t + 3600))"
    assert_json "from the rollups" '"\(.aggregation) \(.total)"' 'average 20401000'
    # a counter type of the same service still adds up
    ingest "service=gheap&instance=a&type=alloc_space&unit=bytes&from=$t&until=$((t + 10))" $'main;x 5\n'
    ingest "service=gheap&instance=a&type=alloc_space&unit=bytes&from=$((t + 10))&until=$((t + 20))" $'main;x 5\n'
    query 'gheap{type="alloc_space"}' "from=$t" "until=$((t + 3600))"
    assert_json "counters sum" '"\(.aggregation) \(.total)"' 'sum 10'
}
