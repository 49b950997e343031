# test_diskfull.sh — a data directory that cannot be written (issue 12,
# point 7): ingest answers 503/507 with a JSON error and Retry-After,
# nothing of the refused request is stored, queries keep answering, and
# ingest recovers by itself once writes work again; --min-free-space
# refuses before the disk is full; --max-ingest-queue bounds what waits.
#
# A full disk is made without root: the server's own file-size limit
# (prlimit --fsize on its pid, util-linux) makes its next write past the
# partition file's size fail, as a full file system would; raising the
# limit again is space coming back.

# Many new stacks: a commit that must grow the partition file.
big_body() {
    local i
    for i in $(seq 1 3000); do printf 'main;grow_%d;leaf_%d 1\n' "$i" "$i"; done
}

test_diskfull_refuses_then_recovers() {
    command -v prlimit >/dev/null || die "prlimit (util-linux) is not installed"
    start_server
    local t=$(( $(now) - 600 )) body
    ingest "service=df&from=$t&until=$((t + 10))" $'main;a 5\n'
    assert_status "first push" 200
    body=$(big_body)
    local part size
    part=$(ls "$DATA"/parts/*.mdb | head -1)
    size=$(stat -c %s "$part")
    prlimit --pid "$PID" --fsize="$((size + 4096)):unlimited" || die "prlimit --pid $PID failed"

    ingest "service=df&from=$((t + 10))&until=$((t + 20))" "$body"
    case $STATUS in
    503 | 507) ;;
    *) fail "push past the limit: expected 503 or 507, got $STATUS: $BODY" ;;
    esac
    assert_contains "error names the cause" "$(jqb '.error')" "could not be written"
    assert_eq "Retry-After" 30 "$(header Retry-After | tr -d '\r')"

    query 'df{}' from="$t" until="$((t + 60))"
    assert_status "query while writes fail" 200
    assert_json "only the first push" '.total' 5

    prlimit --pid "$PID" --fsize=unlimited:unlimited || die "prlimit --pid $PID failed"
    ingest "service=df&from=$((t + 10))&until=$((t + 20))" "$body"
    assert_status "same push once writes work again" 200
    query 'df{}' from="$t" until="$((t + 60))"
    assert_json "both pushes, once" '.total' 3005

    restart_server
    query 'df{}' from="$t" until="$((t + 60))"
    assert_json "after a restart" '.total' 3005
    stop_server
    local out rc=0
    out=$("$FLAMEDB" check "$DATA" 2>&1) || rc=$?
    assert_eq "flamedb check exit" 0 "$rc"
    assert_contains "check says sound" "$out" "is sound"
}

test_diskfull_min_free_space() {
    start_server
    local free t=$(( $(now) - 600 ))
    free=$(df --output=avail -B1 "$DATA" | tail -1 | tr -d ' ')
    [ "$((free + (1 << 30)))" -le "$((1 << 40))" ] || die "this file system has more than 1 TiB free: cannot ask for more"
    restart_server --min-free-space "$((free + (1 << 30)))"
    ingest "service=mf&from=$t&until=$((t + 10))" $'main;a 5\n'
    assert_status "push below --min-free-space" 507
    assert_contains "error names the flag" "$(jqb '.error')" "--min-free-space"
    assert_eq "Retry-After" 30 "$(header Retry-After | tr -d '\r')"
    query 'mf{}' from="$t" until="$((t + 60))"
    assert_status "queries still answer" 200
    get /api/v1/series
    assert_json "nothing stored" '.data | length' 0
    restart_server --min-free-space 0
    ingest "service=mf&from=$t&until=$((t + 10))" $'main;a 5\n'
    assert_status "check off" 200
}

# --max-ingest-queue: pushes in flight past the limit get 503 with
# Retry-After at once, nothing of them stored; what was answered 200 is
# stored.  --commit-wait 1s holds the first pushes in flight while the
# others arrive.
test_ingest_queue_bounded() {
    start_server --max-ingest-queue 3k --commit-wait 1s
    local t=$(( $(now) - 600 )) i body pids=() ok=0 busy=0 code
    body=$(for i in $(seq 1 60); do printf 'main;queue_fn_%02d 1\n' "$i"; done)
    ingest "service=q&instance=warm&from=$t&until=$((t + 10))" "$body"
    assert_status "warm-up push" 200
    it_tmp
    for i in $(seq 1 12); do
        curl -s -o "$IT_TMP/q$i.body" -D "$IT_TMP/q$i.head" -w '%{http_code}' --data-binary "$body" \
            "$BASE/api/v1/ingest?service=q&instance=i$i&from=$((t + 10))&until=$((t + 20))" >"$IT_TMP/q$i.code" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for i in $(seq 1 12); do
        code=$(cat "$IT_TMP/q$i.code")
        case $code in
        200) ok=$((ok + 1)) ;;
        503)
            busy=$((busy + 1))
            assert_contains "503 names the limit" "$(cat "$IT_TMP/q$i.body")" "--max-ingest-queue"
            assert_contains "503 has Retry-After" "$(tr -d '\r' <"$IT_TMP/q$i.head")" "Retry-After: 1"
            ;;
        *) fail "push $i: unexpected status $code: $(cat "$IT_TMP/q$i.body")" ;;
        esac
    done
    assert_ge "some pushes refused while the queue was full" 1 "$busy"
    assert_ge "some stored" 1 "$ok"
    query 'q{}' from="$t" until="$((t + 60))"
    assert_json "exactly the acknowledged pushes stored" '.total' "$(( (ok + 1) * 60 ))"
    get /metrics
    assert_eq "queue empty once answered" 0 "$(metric flamedb_ingest_queue_bytes)"
}
