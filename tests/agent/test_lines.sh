# shellcheck shell=bash
# test_lines.sh — frames with lines (issue 15): the agent sends each frame's
# source file and line (DWARF line tables of the binary or of its debug
# file), the binary's path and build-id; the server shows them with
# `lines=1` and merges by function without.  Expected lines come from the
# fixtures' sources (the function's first line to its closing brace), never
# hard-coded.  Also: --no-lines, a binary without debug info, a stripped one
# with a .gnu_debuglink file, and --output.

LN_SECONDS=3
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# lines_json SERVICE: the merged tree with lines, every node.
lines_json() {
    curl -sS -G "$BASE/api/v1/query" --data-urlencode "query={service=\"$1\"}" \
        -d from=now-1h -d lines=1 -d max_nodes=0
}

# tree_json SERVICE: the merged tree, by function (the default).
tree_json() {
    curl -sS -G "$BASE/api/v1/query" --data-urlencode "query={service=\"$1\"}" \
        -d from=now-1h -d max_nodes=0
}

# src_range FILE REGEX: "FIRST LAST", the lines of the function whose
# definition starts at the first line matching REGEX, up to its closing
# brace (a '}' in column 1, or the end of a one-line definition).
src_range() {
    awk -v re="$2" '
        !start && $0 ~ re { start = NR; if ($0 ~ /}[ \t]*$/) { print start, NR; exit } next }
        start && /^}/ { print start, NR; exit }' "$1"
}

# located SERVICE FUNC: "file|line|mapping|build_id" of every node of FUNC
# in the tree with lines, one per line, unique.
located() {
    lines_json "$1" | jq -r --arg n "$2" '
        [.. | objects | select(.name? == $n)
         | "\(.file // "")|\(.line // 0)|\(.mapping // "")|\(.build_id // "")"] | unique | .[]'
}

build_id_of() { readelf -n "$1" 2>/dev/null | awk '/Build ID/ { print $3; exit }'; }

# check_lines SERVICE FUNC SOURCE BINARY REGEX: FUNC's nodes carry the file
# SOURCE (basename), lines inside FUNC's definition (REGEX), the mapping
# BINARY and its build-id.
check_lines() {
    local svc=$1 fn=$2 src=$3 bin=$4 re=$5 range first last rows file line map bid n=0
    range=$(src_range "$SRC/$src" "$re")
    [ -n "$range" ] || die "no definition of $fn in $src (regex $re)"
    read -r first last <<<"$range"
    bid=$(build_id_of "$bin")
    [ -n "$bid" ] || die "$bin has no build-id"
    rows=$(located "$svc" "$fn")
    [ -n "$rows" ] || die "$svc: no node $fn in the tree with lines; agent log: $(agent_log_tail)"
    while IFS='|' read -r file line map b; do
        n=$((n + 1))
        case $file in
            */"${src##*/}") ;;
            *) fail "$svc: $fn has file [$file], expected .../${src##*/} (row $file|$line|$map|$b)"; continue ;;
        esac
        [ "$line" -ge "$first" ] && [ "$line" -le "$last" ] ||
            fail "$svc: $fn at line $line, outside its definition ($src lines $first-$last)"
        assert_eq "$svc: $fn's mapping" "$bin" "$map"
        assert_eq "$svc: $fn's build-id" "$bid" "$b"
    done <<<"$rows"
    assert_ge "$svc: located nodes of $fn" 1 "$n"
}

# same_tree_by_function SERVICE: the tree with lines, its nodes merged by
# name path, is the default tree (by function): nothing lost or moved.
same_tree_by_function() {
    local svc=$1 by_lines by_name
    by_lines=$(lines_json "$svc" | jq -r '
        def walk_paths($p): ($p + [.name]) as $q
            | (if .self > 0 then [($q | join(";")), .self] else empty end),
              (.children[]? | walk_paths($q));
        [.tree.children[]? | walk_paths([])] | group_by(.[0])
        | map("\(.[0][0]) \(map(.[1]) | add)") | .[]' | sort)
    by_name=$(folded "$svc" | sort)
    [ -n "$by_name" ] || die "$svc: empty profile"
    assert_eq "$svc: tree with lines merged by function = default tree" "$by_name" "$by_lines"
    assert_eq "$svc: no file in the default tree" "0" \
        "$(tree_json "$svc" | jq '[.. | objects | select(has("file") or has("line"))] | length')"
    [[ "$by_name" != *$'\x1f'* ]] || fail "$svc: the separator 0x1F in the default folded output"
}

# profile BIN SERVICE UNWIND [AGENT ARGS...]
profile() {
    local bin=$1 svc=$2 unwind=$3
    shift 3
    start_server
    start_workload "$bin" $((LN_SECONDS + 10))
    start_agent --pid "$WPID" --service "$svc" --interval "$LN_SECONDS" --duration "$LN_SECONDS" \
        --frequency 199 --unwind "$unwind" --no-kernel --verbose "$@"
    wait_agent 30
    require_agent_ok
}

test_hot_functions_have_their_lines() {
    profile "$AT_BUILD/workload_fp" ln-fp fp
    check_lines ln-fp work_a workload.c "$AT_BUILD/workload_fp" '^NOINLINE void work_a[(]'
    check_lines ln-fp work_b workload.c "$AT_BUILD/workload_fp" '^NOINLINE void work_b[(]'
    check_lines ln-fp main workload.c "$AT_BUILD/workload_fp" '^int main[(]'
    assert_contains "pushed with locations=1" "$(grep -- '-> http' "$ALOG")" "&locations=1"
    same_tree_by_function ln-fp
    assert_contains "by function: the main thread's path" "$(folded ln-fp)" "main;run_a;work_a "
}

test_dwarf_unwinding_lines() {
    profile "$AT_BUILD/workload_dw" ln-dw dwarf
    check_lines ln-dw work_b workload.c "$AT_BUILD/workload_dw" '^NOINLINE void work_b[(]'
    check_lines ln-dw mid_b workload.c "$AT_BUILD/workload_dw" '^NOINLINE void mid_b[(]'
    same_tree_by_function ln-dw
    assert_contains "by function: full path" "$(folded ln-dw)" "main;run_b;mid_b;work_b "
}

test_no_lines_flag() {
    profile "$AT_BUILD/workload_fp" ln-off fp --no-lines
    local n
    n=$(lines_json ln-off | jq '[.. | objects | select(has("file") or has("line") or has("mapping"))] | length')
    assert_eq "--no-lines: located nodes (any frame, libc's included)" 0 "$n"
    assert_contains "--no-lines: names still there" "$(folded ln-off)" "main;run_a;work_a "
    if grep -- '-> http' "$ALOG" | grep -q 'locations='; then
        fail "--no-lines: pushed with locations=: $(grep -- '-> http' "$ALOG" | head -1)"
    fi
}

test_binary_without_debug_info() {
    # the fixture has its symbols but no DWARF
    readelf -S "$AT_BUILD/spin_nodebug" | grep -q '\.debug_line' &&
        die "fixture spin_nodebug still has .debug_line"
    readelf -S "$AT_BUILD/spin_nodebug" | grep -q '\.symtab' ||
        die "fixture spin_nodebug has no .symtab"
    profile "$AT_BUILD/spin_nodebug" ln-nodebug fp
    assert_contains "no debug info: names" "$(folded ln-nodebug)" "main;spin_outer;spin_leaf "
    local fn rows
    for fn in spin_leaf spin_outer main; do
        rows=$(located ln-nodebug "$fn")
        [ -n "$rows" ] || fail "no debug info: no node $fn"
        assert_eq "no debug info: $fn has no location" "|0||" "$(sort -u <<<"$rows")"
    done
}

test_stripped_with_debuglink_lines() {
    profile "$AT_BUILD/spin_stripped" ln-stripped fp
    check_lines ln-stripped spin_leaf fixtures/spin.c "$AT_BUILD/spin_stripped" 'static void spin_leaf[(]'
    check_lines ln-stripped spin_outer fixtures/spin.c "$AT_BUILD/spin_stripped" 'void spin_outer[(]'
}

test_output_file_has_lines() {
    local out="$AT_TMP/out.txt" off="$AT_TMP/off.txt" body
    start_server                      # unused: --output does not push
    start_workload "$AT_BUILD/workload_fp" $((LN_SECONDS + 10))
    "$AGENT" --pid "$WPID" --service ln-out --interval "$LN_SECONDS" --duration "$LN_SECONDS" \
        --unwind fp --no-kernel --output "$out" >"$AT_TMP/agent.log" 2>&1 ||
        die "agent --output failed: $(tail -3 "$AT_TMP/agent.log")"
    assert_contains "--output: header says locations=1" "$(head -1 "$out")" " locations=1"
    grep -q $'work_a\x1f[^;]*/workload.c\x1f[0-9]' "$out" ||
        fail "--output: no located work_a frame: $(grep -m1 work_a "$out" | cat -v | head -c 300)"
    # the text is what ingest takes with locations=1
    body=$(grep -v '^#' "$out" | grep -v '^$')
    curl -sS -f -X POST --data-binary @- \
        "$BASE/api/v1/ingest?service=ln-out&locations=1" <<<"$body" >/dev/null ||
        fail "--output's text refused by ingest with locations=1"
    check_lines ln-out work_a workload.c "$AT_BUILD/workload_fp" '^NOINLINE void work_a[(]'
    "$AGENT" --pid "$WPID" --service ln-out --interval 1 --duration 1 \
        --unwind fp --no-kernel --no-lines --output "$off" >"$AT_TMP/agent.log" 2>&1 ||
        die "agent --output --no-lines failed: $(tail -3 "$AT_TMP/agent.log")"
    grep -q 'work_a' "$off" || fail "--no-lines --output: no work_a"
    if grep -q $'\x1f\\|locations=' "$off"; then fail "--no-lines --output: a location or locations=1"; fi
}
