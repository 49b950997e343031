# test_grafana.sh — what Grafana's Pyroscope data source reads (issue 11,
# points 2 and 3): the Connect calls of querier.v1.QuerierService made as
# connect-go makes them (tests/integration/grafana_client.py: messages built
# and decoded by Python's protobuf runtime from classes protoc generates at
# test time from proto/querier.proto and proto/types.proto), GET
# /pyroscope/render, and format=levels of /api/v1/query.  Flame graphs and
# profiles are decoded back into stacks and compared with the same data
# pushed as folded text and read back as folded text.

GF_PY=/usr/bin/python3 # Debian's, which python3-protobuf is installed for
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds

# gf METHOD REQUEST_JSON [CODEC] [TOKEN] — $GF: the client's JSON line.
gf() {
    it_tmp
    command -v protoc >/dev/null || die "protoc is not installed (make deps installs protobuf-compiler)"
    "$GF_PY" -c 'import google.protobuf' 2>/dev/null || die "python3-protobuf is not installed (make deps)"
    mkdir -p "$IT_TMP/gf"
    GF=$("$GF_PY" "$REPO/tests/integration/grafana_client.py" "$BASE" "$REPO/proto" "$IT_TMP/gf" "$@") ||
        die "grafana_client.py $1 failed: $GF"
}

gfj() { jq -r "$1" <<<"$GF"; }

# Stacks with names JSON and protobuf must carry as they are.
STACKS='main;handle;parse 12
main;handle;render "html" 30
main;gc\sweep 5
main;caf'$'\xc3\xa9'';✓ 7
other 3
'

# Two services of cpu at 100 Hz, one alloc_space in bytes (a pprof type).
push_data() {
    T=$(($(now) - 120))
    put "service=api&rate=100&env=prod&from=$T&until=$((T + 10))" "$STACKS"
    put "service=api&rate=100&env=prod&from=$((T + 10))&until=$((T + 20))" $'main;handle;parse 8\n'
    put "service=db&rate=100&from=$T&until=$((T + 10))" $'query;scan 20\n'
    put "service=api&type=alloc_space&unit=bytes&from=$T&until=$((T + 10))" $'main;alloc 4096\n'
}

# The folded stacks of a selector over the last hour, sorted.
folded_of() {
    get /api/v1/query "query=$1" format=folded from=now-1h
    assert_status "folded $1" 200
    printf '%s\n' "$BODY" | LC_ALL=C sort
}

test_grafana_flamegraph_equals_folded() {
    start_server
    push_data
    local want codec
    want=$(folded_of '{service="api",type="cpu"}')
    assert_contains "reference" "$want" "main;handle;parse 200000000"
    for codec in proto json; do
        gf SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"api\\\"}\",
            \"start\":$(((T - 60) * 1000)),\"end\":$(($(now) * 1000))}" $codec
        assert_eq "$codec: status" 200 "$(gfj .status)"
        assert_contains "$codec: content type" "$(gfj .content_type)" "application/$codec"
        assert_eq "$codec: the stacks of the folded push" "$want" "$(gfj '.folded[]' | LC_ALL=C sort)"
        assert_eq "$codec: total" 650000000 "$(gfj .total)"
        assert_eq "$codec: names[0]" total "$(gfj '.answer.flamegraph.names[0]')"
        assert_eq "$codec: max_self" 300000000 "$(gfj '.answer.flamegraph.max_self')"
    done
    # max_nodes keeps the largest totals (main, handle, render, other)
    gf SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"max_nodes\":3}"
    assert_eq "max_nodes 3: names" '["total","main","handle","render \"html\""]' \
        "$(gfj '.answer.flamegraph.names' | jq -c .)"
    # the other type, by its Pyroscope ID
    gf SelectMergeStacktraces '{"profile_typeID":"memory:alloc_space:bytes:space:bytes","label_selector":"{}"}'
    assert_eq "alloc_space" "main;alloc 4096" "$(gfj '.folded[]')"
}

test_grafana_merge_profile_equals_folded() {
    start_server
    push_data
    local want
    want=$(folded_of '{service="api",type="cpu"}')
    gf SelectMergeProfile "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"api\\\"}\"}"
    assert_eq "status" 200 "$(gfj .status)"
    assert_eq "pprof's stacks" "$want" "$(gfj '.folded[]' | LC_ALL=C sort)"
    gf SelectMergeProfile "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"api\\\"}\"}" json
    assert_eq "pprof's stacks, JSON" "$want" "$(gfj '.folded[]' | LC_ALL=C sort)"
}

test_grafana_listings() {
    start_server
    push_data
    gf ProfileTypes '{}'
    assert_eq "profile types" "memory:alloc_space:bytes:space:bytes $CPU" \
        "$(gfj '[.answer.profile_types[].ID] | join(" ")')"
    assert_eq "cpu's parts" "process_cpu cpu nanoseconds cpu nanoseconds" \
        "$(gfj ".answer.profile_types[] | select(.ID == \"$CPU\") | [.name, .sample_type, .sample_unit, .period_type, .period_unit] | join(\" \")")"
    gf LabelNames '{}'
    assert_eq "label names" "env service service_name type" "$(gfj '.answer.names | join(" ")')"
    gf LabelNames '{"matchers":["{service_name=\"db\"}"]}'
    assert_eq "label names of db" "service service_name type" "$(gfj '.answer.names | join(" ")')"
    gf LabelValues '{"name":"service_name"}'
    assert_eq "service_name values" "api db" "$(gfj '.answer.names | join(" ")')"
    gf LabelValues '{"name":"__profile_type__","matchers":["{service_name=\"db\"}"]}'
    assert_eq "db's profile types" "$CPU" "$(gfj '.answer.names | join(" ")')"
    gf Series "{\"matchers\":[\"{__profile_type__=\\\"$CPU\\\"}\"],\"label_names\":[\"service_name\",\"__profile_type__\"]}"
    assert_eq "series of cpu" "api $CPU,db $CPU" \
        "$(gfj '[.answer.labels_set[] | .labels | map(.value) | reverse | join(" ")] | join(",")')"
    gf Series '{"matchers":["{service_name=\"api\"}"]}'
    assert_eq "api: one set a type" 2 "$(gfj '.answer.labels_set | length')"
    assert_contains "__name__" "$GF" '"name": "__name__", "value": "memory"'
    gf GetProfileStats '{}'
    assert_eq "data ingested" true "$(gfj .answer.data_ingested)"
    assert_eq "oldest" "$((T * 1000))" "$(gfj .answer.oldest_profile_time)"
    assert_eq "newest" "$(((T + 20) * 1000))" "$(gfj .answer.newest_profile_time)"
}

test_grafana_select_series() {
    start_server
    push_data
    local start=$(((T - 60) * 1000)) end=$(((T + 60) * 1000))
    gf SelectSeries "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"start\":$start,\"end\":$end,
        \"step\":10,\"group_by\":[\"service_name\"]}"
    assert_eq "status" 200 "$(gfj .status)"
    assert_eq "two series, the larger first" "api db" "$(gfj '[.answer.series[].labels[0].value] | join(" ")')"
    assert_eq "api's points add up to its total" 650000000 "$(gfj '[.answer.series[0].points[].value // 0] | add')"
    assert_eq "one point per 10 s" 12 "$(gfj '.answer.series[0].points | length')"
    assert_eq "timestamps in ms, from start" "$start" "$(gfj '.answer.series[0].points[0].timestamp')"
    gf SelectSeries "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"start\":$start,\"end\":$end,
        \"step\":10,\"group_by\":[\"service_name\"],\"limit\":1}"
    assert_eq "limit 1" "api" "$(gfj '[.answer.series[].labels[0].value] | join(" ")')"
    gf SelectSeries "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"start\":$start,\"end\":$end}"
    assert_eq "no group_by: one series of everything" 850000000 "$(gfj '[.answer.series[0].points[].value // 0] | add')"
}

test_grafana_errors() {
    start_server --max-body 64k
    push_data
    gf Nope '{}'
    assert_eq "unknown method: 404" 404 "$(gfj .status)"
    assert_eq "unknown method: unimplemented" unimplemented "$(gfj .answer.code)"
    gf SelectMergeStacktraces '{"profile_typeID":"cpu","label_selector":"{}"}'
    assert_eq "bad type ID: 400" 400 "$(gfj .status)"
    assert_eq "bad type ID: code" invalid_argument "$(gfj .answer.code)"
    assert_contains "bad type ID: message" "$(gfj .answer.message)" "profile_typeID 'cpu'"
    gf SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=}\"}"
    assert_eq "bad selector" invalid_argument "$(gfj .answer.code)"
    assert_contains "bad selector: named" "$(gfj .answer.message)" "label_selector: at column"
    gf SelectSeries "{\"profile_typeID\":\"$CPU\",\"start\":2000,\"end\":1000}"
    assert_contains "start after end" "$(gfj .answer.message)" "start (2000) must be before end (1000)"
    # not protobuf, not JSON, another content type, gzip'd
    post /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: application/proto' --data-binary $'\xff\xff\xff'
    assert_status "bad protobuf" 400
    assert_json "bad protobuf: code" .code invalid_argument
    assert_contains "bad protobuf: message" "$(jq -r .message <<<"$BODY")" "not a protobuf querier.v1.ProfileTypesRequest"
    post /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: application/json' --data-binary '{"start": "x"'
    assert_status "bad JSON" 400
    assert_json "bad JSON: code" .code invalid_argument
    post /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: application/json' --data-binary '{"start": "x"}'
    assert_contains "bad JSON field: named" "$(jq -r .message <<<"$BODY")" "start"
    post /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: text/plain' --data-binary '{}'
    assert_status "wrong content type" 415
    assert_contains "wrong content type: said" "$(jq -r .message <<<"$BODY")" "application/proto"
    post /querier.v1.QuerierService/LabelValues -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' \
        --data-binary @<(printf '{"name":"service_name"}' | gzip)
    assert_status "gzip'd request" 200
    assert_json "gzip'd request: answered" '.names | join(" ")' "api db"
    get /querier.v1.QuerierService/ProfileTypes
    assert_status "GET" 405
    # a 413 of the shared limits is a Connect error too
    post /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: application/json' \
        --data-binary @<(head -c 70000 /dev/zero | tr '\0' ' ')
    assert_status "over --max-body" 413
    assert_json "over --max-body: code" .code resource_exhausted
}

test_grafana_tenants() {
    it_tmp
    local tokens="$IT_TMP/tokens"
    {
        printf 'a read,write sha256:%s\n' "$(printf tok-a | sha256sum | cut -d' ' -f1)"
        printf 'b read,write sha256:%s\n' "$(printf tok-b | sha256sum | cut -d' ' -f1)"
    } >"$tokens"
    start_server --auth "$tokens"
    T=$(($(now) - 120))
    post "/api/v1/ingest?service=shop&rate=100&from=$T&until=$((T + 10))" -H 'Authorization: Bearer tok-a' \
        --data-binary $'main;a_only 5\n'
    assert_status "push a" 200
    post "/api/v1/ingest?service=shop&rate=100&from=$T&until=$((T + 10))" -H 'Authorization: Bearer tok-b' \
        --data-binary $'main;b_only 7\n'
    assert_status "push b" 200
    gf SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"shop\\\"}\"}" proto tok-a
    assert_eq "tenant a sees a's" "main;a_only 50000000" "$(gfj '.folded[]')"
    gf SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\"}" proto tok-b
    assert_eq "tenant b sees b's" "main;b_only 70000000" "$(gfj '.folded[]')"
    gf LabelNames '{}' proto tok-a
    assert_eq "the tenant label is no label name" "service service_name type" "$(gfj '.answer.names | join(" ")')"
    gf Series '{}' proto tok-a
    assert_not_contains "nor in series" "$GF" "__tenant__"
    gf SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{__tenant__=\\\"b\\\"}\"}" proto tok-a
    assert_eq "the tenant label refused" invalid_argument "$(gfj .answer.code)"
    gf ProfileTypes '{}'
    assert_eq "no token: 401" 401 "$(gfj .status)"
    assert_eq "no token: Connect's code" unauthenticated "$(gfj .answer.code)"
}

# GET /pyroscope/render: flamebearer, decoded, equals the folded push.
test_grafana_render() {
    start_server
    push_data
    local want
    want=$(folded_of '{service="api",type="cpu"}')
    get /pyroscope/render "query=$CPU{service_name=\"api\"}" from=now-1h
    assert_status "render" 200
    assert_json "numTicks" .flamebearer.numTicks 650000000
    assert_json "format" .metadata.format single
    local got
    got=$("$GF_PY" - "$BODY_FILE" <<'EOF'
import json, sys
fb = json.load(open(sys.argv[1]))["flamebearer"]
rows, out = [], []
for d, v in enumerate(fb["levels"]):
    row, end = [], 0
    for i in range(0, len(v), 4):
        x = end + v[i]; end = x + v[i + 1]
        p = next(q for q in rows[d - 1] if q[0] <= x and x + v[i + 1] <= q[0] + q[1]) if d else None
        n = (x, v[i + 1], fb["names"][v[i + 3]], p)
        row.append(n)
        if v[i + 2]:
            s, m = [], n
            while m[3] is not None: s.append(m[2]); m = m[3]
            out.append("%s %d" % (";".join(reversed(s)), v[i + 2]))
    rows.append(row)
print("\n".join(sorted(out)))
EOF
)
    assert_eq "render's stacks" "$want" "$(LC_ALL=C sort <<<"$got")"
    get /pyroscope/render "query=nope:x"
    assert_status "bad type ID" 400
    get /pyroscope/render
    assert_status "no query" 400
}

# GET /pyroscope/render-diff: each side of the double flamebearer, decoded,
# equals its range pushed as folded text.
test_grafana_render_diff() {
    start_server
    push_data
    local left right got
    get /api/v1/query "query={service=\"api\",type=\"cpu\"}" format=folded from=$T until=$((T + 10))
    left=$(LC_ALL=C sort <<<"$BODY")
    get /api/v1/query "query={service=\"api\",type=\"cpu\"}" format=folded from=$((T + 10)) until=$((T + 20))
    right=$(LC_ALL=C sort <<<"$BODY")
    get /pyroscope/render-diff "leftQuery=$CPU{service_name=\"api\"}" "rightQuery=$CPU{service_name=\"api\"}" \
        leftFrom=$T leftUntil=$((T + 10)) rightFrom=$((T + 10)) rightUntil=$((T + 20))
    assert_status "render-diff" 200
    assert_json "format" .metadata.format double
    assert_json "leftTicks" .leftTicks 570000000
    assert_json "rightTicks" .rightTicks 80000000
    assert_json "numTicks" .flamebearer.numTicks 650000000
    got=$("$GF_PY" - "$BODY_FILE" <<'EOF2'
import json, sys
fb = json.load(open(sys.argv[1]))["flamebearer"]
rows, out = [], {0: [], 1: []}
for d, v in enumerate(fb["levels"]):
    row, end = [], [0, 0]
    for i in range(0, len(v), 7):
        n = {"x": [0, 0], "t": [0, 0], "s": [0, 0], "name": fb["names"][v[i + 6]], "p": None}
        for s in (0, 1):
            n["x"][s] = end[s] + v[i + 3 * s]; n["t"][s] = v[i + 3 * s + 1]; n["s"][s] = v[i + 3 * s + 2]
            end[s] = n["x"][s] + n["t"][s]
        if d:
            s = 0 if n["t"][0] else 1
            n["p"] = next(q for q in rows[d - 1] if q["x"][s] <= n["x"][s] < q["x"][s] + q["t"][s]
                          and n["x"][s] + n["t"][s] <= q["x"][s] + q["t"][s])
        row.append(n)
        for s in (0, 1):
            if n["s"][s]:
                st, m = [], n
                while m["p"] is not None: st.append(m["name"]); m = m["p"]
                out[s].append("%s %d" % (";".join(reversed(st)), n["s"][s]))
    rows.append(row)
print("\n".join(sorted(out[0])) + "\n--\n" + "\n".join(sorted(out[1])))
EOF2
)
    assert_eq "left side" "$left" "$(sed '/^--$/,$d' <<<"$got" | LC_ALL=C sort)"
    assert_eq "right side" "$right" "$(sed '1,/^--$/d' <<<"$got" | LC_ALL=C sort)"
    get /pyroscope/render-diff "leftQuery=$CPU{}" "rightQuery=memory:alloc_space:bytes:space:bytes{}"
    assert_status "different units" 400
    assert_contains "said" "$(jq -r .error <<<"$BODY")" "a diff compares one unit"
}

# format=levels: decoded into a tree, node for node the nested JSON tree
# (names, totals, selfs, children in order), also per group and with
# max_nodes.
test_levels_format_matches_tree() {
    start_server
    push_data
    local args
    for args in "max_nodes=0" "max_nodes=3" "group_by=service"; do
        get /api/v1/query 'query={type="cpu"}' from=now-1h "$args"
        assert_status "json $args" 200
        cp "$BODY_FILE" "$IT_TMP/tree.json"
        get /api/v1/query 'query={type="cpu"}' from=now-1h "$args" format=levels
        assert_status "levels $args" 200
        local diff
        diff=$("$GF_PY" - "$IT_TMP/tree.json" "$BODY_FILE" <<'EOF'
import json, sys
tree, lv = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def build(names, levels):
    rows = []
    for d, v in enumerate(levels):
        row, end = [], 0
        for i in range(0, len(v), 4):
            x = end + v[i]; end = x + v[i + 1]
            n = {"x": x, "total": v[i + 1], "self": v[i + 2], "name": names[v[i + 3]], "children": []}
            if d:
                next(p for p in rows[d - 1] if p["x"] <= x and x + n["total"] <= p["x"] + p["total"])["children"].append(n)
            row.append(n)
        rows.append(row)
    return rows[0][0]
def same(a, b, path):
    if a["name"] != b["name"] and path: return "%s: %r != %r" % (path, a["name"], b["name"])
    for k in ("total", "self"):
        if a[k] != b[k]: return "%s/%s: %s %r != %r" % (path, a["name"], k, a[k], b[k])
    if len(a["children"]) != len(b["children"]): return "%s/%s: children" % (path, a["name"])
    for x, y in zip(a["children"], b["children"]):
        r = same(x, y, path + "/" + a["name"])
        if r: return r
    return ""
pairs = [(tree, lv)] if "groups" not in tree else list(zip(tree["groups"], lv["groups"]))
for t, l in pairs:
    if t["truncated"] != l["truncated"]: print("truncated differs"); break
    r = same(t["tree"], build(l["names"], l["levels"]), "")
    if r: print(r); break
    if l["names"][0] != "total": print("names[0]")
print("groups %d" % len(pairs) if "groups" in tree else "one tree")
EOF
)
        case $args in
        group_by=*) assert_eq "levels = tree ($args)" "groups 2" "$diff" ;;
        *) assert_eq "levels = tree ($args)" "one tree" "$diff" ;;
        esac
    done
    get /api/v1/query 'query={}' format=levels lines=1
    assert_status "levels with lines" 400
}
