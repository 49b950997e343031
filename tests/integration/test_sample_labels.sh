# test_sample_labels.sh — pprof sample labels (issue 11, point 5): kept as
# pseudo-frames, invisible to every answer by default, selected by a
# matcher on a name no series carries, with exact totals; the limits and
# the counts of the ingest answer.  Profiles are written by
# pprof_labels.py (pprof's wire format encoded by hand).

PPROF_LABELS="$REPO/tests/integration/pprof_labels.py"

# labels_pprof OUT [no_labels] — the profile every test pushes: samples in
# count and cpu in ns, four stacks, labels span_id/endpoint, a numeric
# label and a key that is no label name (both left out).
labels_pprof() {
    local out=$1 nolab=${2:-false}
    cat >"$IT_TMP/spec.json" <<EOF
{"types": [["samples", "count"], ["cpu", "nanoseconds"]], "no_labels": $nolab,
 "samples": [
  {"stack": "main;work", "values": [10, 100000000], "labels": {"span_id": "a1", "endpoint": "/api"},
   "num_labels": {"bytes": 512}},
  {"stack": "main;work", "values": [5, 50000000], "labels": {"span_id": "b2", "endpoint": "/api", "bad key": "x"}},
  {"stack": "main;idle", "values": [7, 70000000], "labels": {"span_id": "a1"}},
  {"stack": "main;io;read", "values": [3, 30000000]}
 ]}
EOF
    python3 "$PPROF_LABELS" "$IT_TMP/spec.json" "$out" || die "pprof_labels.py failed"
}

# push_pprof FILE SERVICE — ingests FILE as pprof for SERVICE, 200 required.
push_pprof() {
    ingest_file "format=pprof&service=$2&from=$(($(now) - 60))&until=$(now)" "$1"
    assert_status "pprof ingest of $2" 200
}

# A server holding the labelled pprof file as service lab and one folded
# stack without labels as service plain (main;plain 4).
lab_and_plain_server() {
    it_tmp
    labels_pprof "$IT_TMP/lab.pb"
    start_server
    push_pprof "$IT_TMP/lab.pb" lab
    ingest "service=plain&from=$(($(now) - 60))&until=$(now)" $'main;plain 4\n'
    assert_status "folded push" 200
}

# A server holding the labelled pprof file as service lab, for the tests
# that speak Connect through tests/integration/grafana_client.py.
grafana_lab_server() {
    it_tmp
    command -v protoc >/dev/null || die "protoc is not installed (make deps installs protobuf-compiler)"
    /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || die "python3-protobuf is not installed (make deps)"
    labels_pprof "$IT_TMP/lab.pb"
    start_server
    push_pprof "$IT_TMP/lab.pb" lab
}

test_sample_labels_default_answers_unchanged() {
    it_tmp
    labels_pprof "$IT_TMP/lab.pb"
    labels_pprof "$IT_TMP/plain.pb" true
    start_server
    push_pprof "$IT_TMP/lab.pb" lab
    assert_json "labels kept (2 + 2 + 1)" '.sample_labels.kept' 5
    assert_json "labels left out (numeric, a key that is no label name)" '.sample_labels.dropped' 2
    assert_json "no value over the limit" '.sample_labels.other' 0
    assert_json "stacks: one per (labels, frames)" '.stacks' 8
    push_pprof "$IT_TMP/plain.pb" plain
    local ep args a b f u
    f=$(($(now) - 3600))
    u=$(($(now) + 60))
    for ep in "/api/v1/query format=json" "/api/v1/query format=folded" "/api/v1/query format=levels" \
        "/api/v1/query format=speedscope" "/api/v1/top limit=0" "/api/v1/query format=json type=samples" \
        "/api/v1/query format=json lines=1"; do
        read -r -a args <<<"$ep"
        local path=${args[0]} extra=("${args[@]:1}")
        if [ "${extra[*]}" = "format=json type=samples" ]; then
            get "$path" 'query={service="lab",type="samples"}' from=$f until=$u format=json
            a=$BODY
            get "$path" 'query={service="plain",type="samples"}' from=$f until=$u format=json
        else
            get "$path" 'query={service="lab"}' from=$f until=$u "${extra[@]}"
            a=$BODY
            get "$path" 'query={service="plain"}' from=$f until=$u "${extra[@]}"
        fi
        assert_status "$ep" 200
        b=$BODY
        if [ "${extra[0]}" = format=speedscope ]; then
            # its frame list and samples follow the reader's node ids, which
            # follow the partition's: the same stacks, in another order
            local canon='.shared.frames as $f | .profiles[0] | [.samples, .weights] | transpose
                         | map([(.[0] | map($f[.].name) | join(";")), .[1]]) | sort'
            a=$(jq -c "$canon" <<<"$a")
            b=$(jq -c "$canon" <<<"$b")
            [ -n "$a" ] && [ "$(jq length <<<"$a")" -gt 2 ] || fail "speedscope: no samples"
        fi
        # the answers may name the service: compare with it replaced
        [ "${a//lab/X}" = "${b//plain/X}" ] || fail "$ep: the answer with sample labels differs from the one without"
    done
    query '{service="lab"}' from=now-1h until=now format=folded
    case $BODY in *$'\x1f'*|*span_id*) fail "a sample label shows in the default answer: $BODY" ;; esac
}

test_sample_labels_select_exact_totals() {
    it_tmp
    labels_pprof "$IT_TMP/lab.pb"
    start_server
    push_pprof "$IT_TMP/lab.pb" lab
    query '{service="lab",type="samples",span_id="a1"}' from=now-1h until=now format=folded
    assert_status "span a1" 200
    [ "$(printf '%s\n' "$BODY" | sort)" = "$(printf 'main;idle 7\nmain;work 10\n')" ] ||
        fail "span a1: want main;work 10 and main;idle 7, got: $BODY"
    query '{service="lab",type="samples",span_id="a1"}' from=now-1h until=now format=json
    assert_json "span a1 total" '.total' 17
    assert_json "span a1: no sample count once stacks were left out" '.samples' null
    query '{service="lab",type="samples",endpoint="/api"}' from=now-1h until=now format=json
    assert_json "endpoint /api" '.total' 15
    query '{service="lab",type="samples",span_id!="a1"}' from=now-1h until=now format=json
    assert_json "not span a1 (a missing label matches like \"\")" '.total' 8
    query '{service="lab",type="samples",span_id=~"a1|b2",endpoint="/api"}' from=now-1h until=now format=json
    assert_json "two matchers" '.total' 15
    query '{service="lab",type="samples",span_id="zz"}' from=now-1h until=now format=json
    assert_json "no such span" '.total' 0
    get /api/v1/top 'query={service="lab",span_id="b2"}' from=now-1h until=now
    assert_status "top of span b2" 200
    assert_json "top of span b2 in cpu ns" '.total' 50000000
    assert_json "its function" '.functions[0].name' work
    query '{service="lab",type="samples",span_id="a1",endpoint=""}' from=now-1h until=now format=json
    assert_json "endpoint=\"\" keeps the stacks without one" '.total' 7
    # one reader merges both sides of a diff, each with its own filter
    get /api/v1/diff 'left={service="lab",type="samples",span_id="a1"}' \
        'right={service="lab",type="samples",span_id="b2"}' from=now-1h until=now
    assert_status "diff of two spans" 200
    assert_json "diff left total" '.left_total' 17
    assert_json "diff right total" '.right_total' 5
    assert_json "work on the right" '.tree.children[0].children[]|select(.name=="work")|.right_self' 5
    assert_json "idle on the right" '.tree.children[0].children[]|select(.name=="idle")|.right_self' 0
    get /api/v1/timeline 'query={service="lab",span_id="a1"}' from=now-1h until=now
    assert_error "timeline with a sample label" 400 "sample labels"
}

test_sample_labels_limits() {
    it_tmp
    # 17 keys on one sample (the 17th in key order is left out); 1,001
    # distinct values of one key (the last becomes "other")
    python3 - "$IT_TMP/spec.json" <<'EOF'
import json, sys
samples = [{"stack": "main;many", "values": [1],
            "labels": {"k%02d" % i: "v" for i in range(17)}}]
for i in range(1001):
    samples.append({"stack": "main;req", "values": [2], "labels": {"req": "r%04d" % i}})
json.dump({"types": [["samples", "count"]], "samples": samples}, open(sys.argv[1], "w"))
EOF
    python3 "$PPROF_LABELS" "$IT_TMP/spec.json" "$IT_TMP/lim.pb" || die "pprof_labels.py failed"
    start_server
    push_pprof "$IT_TMP/lim.pb" lim
    assert_json "kept: 16 keys + 1,000 values + one other" '.sample_labels.kept' 1017
    assert_json "dropped: the 17th key" '.sample_labels.dropped' 1
    assert_json "values past the limit" '.sample_labels.other' 1
    query '{service="lim",req="other"}' from=now-1h until=now format=json
    assert_json "the 1,001st value is other" '.total' 2
    query '{service="lim",req="r0999"}' from=now-1h until=now format=json
    assert_json "the 1,000th keeps its name" '.total' 2
    query '{service="lim",k15="v"}' from=now-1h until=now format=json
    assert_json "the 16th key is kept" '.total' 1
    query '{service="lim",k16="v"}' from=now-1h until=now format=json
    assert_json "the 17th key is not" '.total' 0
    query '{service="lim"}' from=now-1h until=now format=json
    assert_json "everything by default" '.total' 2003
}

# Grafana's SelectMergeSpanProfile (Connect, as connect-go sends it:
# tests/integration/grafana_client.py): the flame graph of the stacks whose
# span_id is one of span_selector, equal to the same selection as folded.
test_sample_labels_grafana_span_profile() {
    grafana_lab_server
    local start=$((($(now) - 3600) * 1000)) end=$((($(now) + 60) * 1000)) gf want codec
    local cpu=process_cpu:cpu:nanoseconds:cpu:nanoseconds
    mkdir -p "$IT_TMP/gf"
    query '{service="lab",type="cpu",span_id=~"a1|b2"}' from=now-1h until=now format=folded
    want=$(printf '%s\n' "$BODY" | LC_ALL=C sort)
    [ "$want" = "$(printf 'main;idle 70000000\nmain;work 150000000')" ] || fail "folded of two spans: $want"
    for codec in proto json; do
        gf=$(/usr/bin/python3 "$REPO/tests/integration/grafana_client.py" "$BASE" "$REPO/proto" "$IT_TMP/gf" \
            SelectMergeSpanProfile "{\"profile_typeID\":\"$cpu\",\"label_selector\":\"{service_name=\\\"lab\\\"}\",
            \"span_selector\":[\"A1\",\"b2\"],\"start\":$start,\"end\":$end}" $codec) || die "grafana_client.py: $gf"
        assert_eq "$codec: status" 200 "$(jq -r .status <<<"$gf")"
        assert_eq "$codec: the stacks of the two spans (ids in any case)" "$want" \
            "$(jq -r '.folded[]' <<<"$gf" | LC_ALL=C sort)"
        assert_eq "$codec: total" 220000000 "$(jq -r .total <<<"$gf")"
    done
    gf=$(/usr/bin/python3 "$REPO/tests/integration/grafana_client.py" "$BASE" "$REPO/proto" "$IT_TMP/gf" \
        SelectMergeSpanProfile "{\"profile_typeID\":\"$cpu\",\"label_selector\":\"{}\",
        \"span_selector\":[\"b2\"],\"start\":$start,\"end\":$end}") || die "grafana_client.py: $gf"
    assert_eq "one span" "main;work 50000000" "$(jq -r '.folded[]' <<<"$gf")"
    gf=$(/usr/bin/python3 "$REPO/tests/integration/grafana_client.py" "$BASE" "$REPO/proto" "$IT_TMP/gf" \
        SelectMergeSpanProfile "{\"profile_typeID\":\"$cpu\",\"label_selector\":\"{}\",
        \"span_selector\":[\"not-hex\"],\"start\":$start,\"end\":$end}") || die "grafana_client.py: $gf"
    assert_eq "a bad span id: 400" 400 "$(jq -r .status <<<"$gf")"
    assert_contains "a bad span id: named" "$(jq -r .answer.message <<<"$gf")" "span_selector[0]"
}

# group_by_sample=KEY: one tree whose root frames are "key=value" (stacks
# without the label keep their own root), in any format; group_by still
# makes groups of series, each tree split so.
test_sample_labels_group_by_sample() {
    it_tmp
    labels_pprof "$IT_TMP/lab.pb"
    start_server
    push_pprof "$IT_TMP/lab.pb" lab
    push_pprof "$IT_TMP/lab.pb" lab2
    query '{service="lab",type="samples"}' from=now-1h until=now format=folded group_by_sample=span_id
    assert_status "group_by_sample span_id" 200
    [ "$(printf '%s\n' "$BODY" | LC_ALL=C sort)" = "$(printf 'main;io;read 3\nspan_id=a1;main;idle 7\nspan_id=a1;main;work 10\nspan_id=b2;main;work 5')" ] ||
        fail "group_by_sample span_id: got $BODY"
    query '{service="lab",type="samples"}' from=now-1h until=now group_by_sample=span_id
    assert_json "the span's root" '.tree.children[]|select(.name=="span_id=a1")|.total' 17
    assert_json "its total" '.total' 25
    query '{service="lab",type="samples",endpoint="/api"}' from=now-1h until=now format=folded group_by_sample=span_id
    [ "$(printf '%s\n' "$BODY" | LC_ALL=C sort)" = "$(printf 'span_id=a1;main;work 10\nspan_id=b2;main;work 5')" ] ||
        fail "filtered and split: got $BODY"
    query '{type="samples",service=~"lab.*"}' from=now-1h until=now group_by=service group_by_sample=span_id
    assert_status "group_by service, group_by_sample span_id" 200
    assert_json "groups by service" '.groups|length' 2
    assert_json "each with span roots" '[.groups[0].tree.children[].name]|sort|join(",")' "main,span_id=a1,span_id=b2"
    query '{service="lab"}' from=now-1h until=now group_by_sample=span_id,endpoint
    assert_error "two sample labels" 400 "group_by_sample"
    query '{service="lab"}' from=now-1h until=now group_by_sample=bad-name
    assert_error "not a label name" 400 "group_by_sample"
}

# Sample labels are discoverable: /api/v1/labels answers their names apart
# from the series' when asked (sample_labels=1; the member absent when
# there are none, and without the parameter the answer of before), /label/NAME/values their values when no series
# carries NAME; a selector's sample-label matchers keep the series holding
# such stacks; the scan obeys --max-pairs and says so.
test_sample_labels_discovered() {
    lab_and_plain_server
    get /api/v1/labels 'query={service="lab"}'
    assert_eq "not asked: the series labels alone, as before" \
        '{"labels":[{"name":"service","values":1},{"name":"type","values":2}]}' "$BODY"
    get /api/v1/labels 'query={service="lab"}' sample_labels=1
    assert_status "labels of lab" 200
    assert_json "series labels as before" '[.labels[]|"\(.name)=\(.values)"]|join(",")' "service=1,type=2"
    assert_json "sample labels apart, with their cardinality" '[.sample_labels[]|"\(.name)=\(.values)"]|join(",")' \
        "endpoint=1,span_id=2"
    get /api/v1/labels 'query={service="plain"}' sample_labels=1
    assert_eq "no sample labels: the answer of before, byte for byte" \
        '{"labels":[{"name":"service","values":1},{"name":"type","values":1}]}' "$BODY"
    get /api/v1/labels sample_labels=0
    assert_json "sample_labels=0: not looked for" 'has("sample_labels")' false
    assert_json "sample_labels=0: the series' names" '[.labels[].name]|join(",")' "service,type"
    get /api/v1/labels sample_labels=2
    assert_error "sample_labels not 0 or 1" 400 "sample_labels"
    get /api/v1/labels 'query={endpoint="/api"}' sample_labels=1
    assert_json "a sample matcher keeps the series with such stacks" '[.labels[]|"\(.name)=\(.values)"]|join(",")' \
        "service=1,type=2"
    assert_json "and the labels of the stacks it keeps" '[.sample_labels[].name]|join(",")' "endpoint,span_id"
    get /api/v1/labels 'query={endpoint="/none"}'
    assert_eq "a sample matcher no stack satisfies" '{"labels":[]}' "$BODY"
    get /api/v1/label/span_id/values from=now-1h until=now
    assert_eq "a sample label's values" '{"values":["a1","b2"]}' "$BODY"
    get /api/v1/label/span_id/values 'query={endpoint=""}'
    assert_eq "the values of the stacks the selector keeps" '{"values":["a1"]}' "$BODY"
    get /api/v1/label/endpoint/values 'query={service="plain"}'
    assert_eq "a series without them" '{"values":[]}' "$BODY"
    get /api/v1/label/service/values 'query={span_id="b2"}'
    assert_eq "series values under a sample matcher" '{"values":["lab"]}' "$BODY"
    get /api/v1/label/service/values
    assert_eq "series values as before" '{"values":["lab","plain"]}' "$BODY"
    # the scans are bounded as merges are: refused whole, never a shorter list
    restart_server --max-pairs 3
    get /api/v1/labels 'query={service="lab"}' sample_labels=1
    assert_error "labels past --max-pairs" 422 "--max-pairs"
    get /api/v1/label/span_id/values
    assert_error "values past --max-pairs" 422 "--max-pairs"
    get /api/v1/labels 'query={service="lab"}' sample_labels=0
    assert_status "labels without the scan" 200
    get /api/v1/label/service/values
    assert_eq "series values need no scan" '{"values":["lab","plain"]}' "$BODY"
}

# Grafana's label browser: LabelNames lists the sample label names after
# the series', LabelValues their values (Connect, protobuf and JSON).
test_sample_labels_grafana_label_browser() {
    grafana_lab_server
    ingest "service=plain&from=$(($(now) - 60))&until=$(now)" $'main;plain 4\n'
    local start=$((($(now) - 3600) * 1000)) end=$((($(now) + 60) * 1000)) gf codec
    mkdir -p "$IT_TMP/gf"
    gfc() {
        gf=$(/usr/bin/python3 "$REPO/tests/integration/grafana_client.py" "$BASE" "$REPO/proto" "$IT_TMP/gf" "$1" \
            "$2" "$codec") || die "grafana_client.py: $gf"
    }
    for codec in proto json; do
        gfc LabelNames "{\"start\":$start,\"end\":$end}"
        assert_eq "$codec: status" 200 "$(jq -r .status <<<"$gf")"
        assert_eq "$codec: series names, then sample label names" "service,service_name,type,endpoint,span_id" \
            "$(jq -r '.answer.names|join(",")' <<<"$gf")"
        gfc LabelNames "{\"matchers\":[\"{service_name=\\\"plain\\\"}\"],\"start\":$start,\"end\":$end}"
        assert_eq "$codec: a service without sample labels" "service,service_name,type" \
            "$(jq -r '.answer.names|join(",")' <<<"$gf")"
        gfc LabelValues "{\"name\":\"span_id\",\"start\":$start,\"end\":$end}"
        assert_eq "$codec: a sample label's values" "a1,b2" "$(jq -r '.answer.names|join(",")' <<<"$gf")"
        gfc LabelValues "{\"name\":\"span_id\",\"matchers\":[\"{endpoint=\\\"\\\"}\",\"{span_id=\\\"b2\\\"}\"],
            \"start\":$start,\"end\":$end}"
        assert_eq "$codec: over two selectors, each its stacks" "a1,b2" "$(jq -r '.answer.names|join(",")' <<<"$gf")"
        gfc LabelValues "{\"name\":\"service_name\",\"matchers\":[\"{span_id=\\\"a1\\\"}\"],\"start\":$start,\"end\":$end}"
        assert_eq "$codec: series values under a sample matcher" "lab" "$(jq -r '.answer.names|join(",")' <<<"$gf")"
    done
    restart_server --max-pairs 3
    codec=proto
    gfc LabelNames "{\"start\":$start,\"end\":$end}"
    assert_eq "past --max-pairs: a Connect error" 422 "$(jq -r .status <<<"$gf")"
    assert_eq "its code" out_of_range "$(jq -r .answer.code <<<"$gf")"
    assert_contains "its message" "$(jq -r .answer.message <<<"$gf")" "--max-pairs"
}

# /api/v1/top?group_by_sample=KEY: a ranking per value of the sample label
# (group_by's shape), exact totals, "" for the stacks without it.
test_sample_labels_top_group_by_sample() {
    it_tmp
    labels_pprof "$IT_TMP/lab.pb"
    start_server
    push_pprof "$IT_TMP/lab.pb" lab
    push_pprof "$IT_TMP/lab.pb" lab2
    get /api/v1/top 'query={service="lab",type="samples"}' from=now-1h until=now group_by_sample=span_id limit=0
    assert_status "top group_by_sample" 200
    assert_json "groups by total, exact" '[.groups[]|"\(.labels.span_id)=\(.total)"]|join(",")' "a1=17,b2=5,=3"
    assert_json "span a1's ranking" '[.groups[0].functions[]|"\(.name):\(.self):\(.total)"]|join(",")' \
        "work:10:10,idle:7:7,main:0:17"
    assert_json "span b2's" '[.groups[1].functions[]|"\(.name):\(.self):\(.total)"]|join(",")' "work:5:5,main:0:5"
    assert_json "no span: its own stacks" '[.groups[2].functions[]|"\(.name):\(.self):\(.total)"]|join(",")' \
        "read:3:3,io:0:3,main:0:3"
    assert_json "shares of the group's total" '.groups[0].functions[0].self_share' "$(jq -n '10/17')"
    assert_json "the label frame is no function" '[.groups[].functions[].name|select(test("="))]|length' 0
    assert_json "samples of a part are not known" '[.groups[].samples]|unique|tojson' '[null]'
    assert_json "functions_total" '[.groups[].functions_total]|join(",")' "3,2,3"
    assert_json "unit and type" '"\(.type) \(.groups[0].unit)"' "samples count"
    get /api/v1/top 'query={service="lab"}' from=now-1h until=now group_by_sample=endpoint limit=1
    assert_json "cpu ns, limit per group" '[.groups[]|"\(.labels.endpoint)=\(.total):\(.functions|length)"]|join(",")' \
        "/api=150000000:1,=100000000:1"
    get /api/v1/top 'query={service="lab",type="samples",endpoint="/api"}' from=now-1h until=now group_by_sample=span_id
    assert_json "filtered, then split" '[.groups[]|"\(.labels.span_id)=\(.total)"]|join(",")' "a1=10,b2=5"
    get /api/v1/top 'query={type="samples"}' from=now-1h until=now group_by=service group_by_sample=span_id
    assert_json "with group_by: both labels" '[.groups[]|"\(.labels.service)/\(.labels.span_id)=\(.total)"]|join(",")' \
        "lab/a1=17,lab2/a1=17,lab/b2=5,lab2/b2=5,lab/=3,lab2/=3"
    get /api/v1/top 'query={service="lab"}' group_by_sample=span_id,endpoint
    assert_error "two sample labels" 400 "group_by_sample"
    restart_server --max-groups 2
    get /api/v1/top 'query={service="lab",type="samples"}' from=now-1h until=now group_by_sample=span_id
    assert_error "past --max-groups" 400 "group_by_sample" "--max-groups"
}

# group_by_sample takes one name: its errors say so (not group_by's "label
# names separated by commas").
test_sample_labels_group_by_sample_errors() {
    it_tmp
    start_server
    local ep msg
    for ep in /api/v1/query /api/v1/top; do
        get $ep 'query={}' group_by_sample=
        assert_error "$ep: empty" 400 "parameter 'group_by_sample'" "one sample label name"
        get $ep 'query={}' group_by_sample=span_id,endpoint
        assert_error "$ep: a list" 400 "parameter 'group_by_sample'" "one sample label name, not a list"
        get $ep 'query={}' group_by_sample=bad-name
        assert_error "$ep: no label name" 400 "parameter 'group_by_sample'" "not a label name"
        msg=$(jq -r .error <<<"$BODY")
        case $msg in *commas*) fail "$ep: group_by's wording: $msg" ;; esac
    done
}

# /api/v1/series with a sample matcher: the series holding a stack it
# keeps, each with the figures of those stacks alone (exact: they add up
# to the query's total of the same selector); a profile's samples are
# unknown once a stack of it was left out.
test_sample_labels_series() {
    lab_and_plain_server
    local rows='[.series[]|"\(.labels.service)/\(.labels.type)=\(.total) \(.samples) \(.profiles)"]|join(",")'
    get /api/v1/series 'query={span_id="a1"}' from=now-1h
    assert_status "series of span a1" 200
    assert_json "the two series of lab, with a1's stacks only" "$rows" \
        "lab/cpu=170000000 null 1,lab/samples=17 null 1"
    assert_json "no truncated flag unless a limit is asked" 'has("truncated")' false
    get /api/v1/series 'query={span_id!="a1"}' from=now-1h
    assert_json "a missing label matches \"\": plain listed, its samples known (nothing left out)" "$rows" \
        "lab/cpu=80000000 null 1,lab/samples=8 null 1,plain/cpu=4 4 1"
    get /api/v1/series 'query={service="lab",span_id="zz"}' from=now-1h
    assert_status "no such span" 200
    assert_json "no series" '.series|length' 0
    get /api/v1/series 'query={service="lab"}' from=now-1h
    assert_json "without a sample matcher: as before" "$rows" "lab/cpu=250000000 25 1,lab/samples=25 25 1"
    local sel
    for sel in '{type="samples",endpoint="/api"}' '{type="cpu",span_id=~"a1|b2"}' '{type="samples",span_id!="b2"}'; do
        get /api/v1/series "query=$sel" from=now-1h
        local sum
        sum=$(jq '[.series[].total]|add' <<<"$BODY")
        query "$sel" from=now-1h format=json
        assert_json "$sel: the series' totals add up to the query's" '.total' "$sum"
    done
    get /api/v1/series 'query={span_id!="a1"}' from=now-1h limit=2
    assert_json "limit 2 of 3" "$rows" "lab/cpu=80000000 null 1,lab/samples=8 null 1"
    assert_json "cut" '.truncated' true
    get /api/v1/series 'query={span_id!="a1"}' from=now-1h limit=3
    assert_json "limit 3 of 3" '.series|length' 3
    assert_json "not cut" '.truncated' false
    get /api/v1/series 'query={}' from=now-1h limit=0
    assert_json "limit 0: all" '.series|length' 3
    assert_json "limit 0: not cut" '.truncated' false
    restart_server --max-pairs 3
    get /api/v1/series 'query={span_id="a1"}' from=now-1h
    assert_error "reading the stacks past --max-pairs: refused whole" 422 "--max-pairs"
}

# limit on the listings: the first LIMIT in their order, and "truncated"
# (with sample_labels=1 also "sample_labels_truncated") saying whether some
# were left out; bad values are refused naming the parameter.
test_sample_labels_listing_limit() {
    lab_and_plain_server
    get /api/v1/labels 'query={}'
    assert_eq "no limit: the answer of before" \
        '{"labels":[{"name":"service","values":2},{"name":"type","values":2}]}' "$BODY"
    get /api/v1/labels 'query={}' limit=1
    assert_eq "limit 1" '{"labels":[{"name":"service","values":2}],"truncated":true}' "$BODY"
    get /api/v1/labels 'query={}' limit=2
    assert_json "limit 2: all" '.truncated' false
    get /api/v1/labels 'query={service="lab"}' sample_labels=1 limit=1
    assert_json "both lists cut" '[(.labels|map(.name)|join(",")), (.sample_labels|map(.name)|join(",")), .truncated, .sample_labels_truncated]|map(tostring)|join(" ")' \
        "service endpoint true true"
    get /api/v1/labels 'query={service="lab"}' sample_labels=1 limit=2
    assert_json "neither cut" '[.truncated, .sample_labels_truncated]|map(tostring)|join(" ")' "false false"
    get /api/v1/labels 'query={service="lab"}' sample_labels=1
    assert_json "no limit: no flags" '[has("truncated"), has("sample_labels_truncated")]|map(tostring)|join(" ")' \
        "false false"
    get /api/v1/label/span_id/values 'query={service="lab"}' limit=1
    assert_eq "a sample label's values, cut" '{"values":["a1"],"truncated":true}' "$BODY"
    get /api/v1/label/span_id/values 'query={service="lab"}' limit=2
    assert_eq "a sample label's values, whole" '{"values":["a1","b2"],"truncated":false}' "$BODY"
    get /api/v1/label/service/values limit=1
    assert_eq "a series label's values, cut" '{"values":["lab"],"truncated":true}' "$BODY"
    get /api/v1/label/service/values limit=0
    assert_eq "limit 0: all" '{"values":["lab","plain"],"truncated":false}' "$BODY"
    local ep bad
    for ep in /api/v1/labels /api/v1/label/service/values /api/v1/label/span_id/values /api/v1/series; do
        for bad in -1 abc 1.5 4294967296 ''; do
            get $ep "limit=$bad"
            assert_error "$ep limit=$bad" 400 "parameter 'limit'"
        done
    done
}
