# test_import.sh — `flamedb import`: perf script text (recorded with
# `perf record -F 99 -g` and checked in, default fields and -F
# comm,pid,tid,time,ip,sym,dso) and folded files, pushed over HTTP.

PERF_TXT="$REPO/tests/fixtures/perf-script.txt"
PERF_FIELDS="$REPO/tests/fixtures/perf-script-fields.txt"

# Samples in a perf script text: its header lines.
perf_samples() {
    grep -c '^[^[:space:]#]' "$1"
}

# Non-empty windows of W seconds over the sample times of a perf script text.
perf_windows() {
    awk -v w="$2" '/^[^[:space:]#]/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t[n++] = $i + 0; break } }
        END { min = t[0]; for (i = 0; i < n; i++) if (t[i] < min) min = t[i];
              for (i = 0; i < n; i++) seen[int((t[i] - min) / w)] = 1;
              c = 0; for (k in seen) c++; print c }' "$1"
}

test_import_perf_script() {
    start_server
    it_tmp
    cp "$PERF_TXT" "$IT_TMP/perf.txt"
    local mtime=$(( $(now) - 100 ))
    touch -d "@$mtime" "$IT_TMP/perf.txt"
    local want windows
    want=$(perf_samples "$PERF_TXT")
    windows=$(perf_windows "$PERF_TXT" 1)
    assert_ge "fixture samples" 100 "$want"
    "$FLAMEDB" import --server "$BASE" --service perfapp --labels host=h1,env=test --rate 99 --window 1 \
        "$IT_TMP/perf.txt" >"$IT_TMP/out" 2>"$IT_TMP/err" || fail "import failed: $(cat "$IT_TMP/err")"
    assert_contains "summary" "$(cat "$IT_TMP/out")" "perf script, $want samples in $windows profiles"
    get /api/v1/series 'query=perfapp{}' from=now-1h
    assert_json "one series with the labels" '[.series[]|.labels|tojson]|join(",")' \
        '{"env":"test","host":"h1","service":"perfapp","type":"cpu"}'
    assert_json "samples and profiles" '.series[0]|"\(.samples) \(.profiles)"' "$want $windows"
    # the last window ends at the file's modification time
    assert_json "last window" '.series[0].last' $((mtime - 1))
    query 'perfapp{}' from=now-1h
    assert_json "rate: CPU time" '"\(.unit) \(.samples) \(.total)"' "nanoseconds $want $((want * 10101010))"
    query 'perfapp{}' from=now-1h format=folded
    local folded=$BODY
    assert_not_contains "offsets stripped" "$folded" "+0x"
    # root frames are the comms, with as many samples as the fixture has
    local comm n
    for comm in sha256sum gzip head; do
        n=$(awk -v c="$comm" '$1 == c' <<<"$(grep '^[^[:space:]#]' "$PERF_TXT")" | wc -l)
        assert_eq "samples of $comm (x 10101010 ns at 99 Hz)" "$((n * 10101010))" \
            "$(awk -v c="$comm" '{ split($0, f, ";"); if (f[1] == c) s += $NF } END { print s + 0 }' <<<"$folded")"
    done
    # an [unknown] symbol in a known dso is named by the dso's basename
    assert_contains "dso basename" "$folded" "sha256sum;sha256sum"
    assert_contains "kernel frames" "$folded" "entry_SYSCALL_64"
}

test_import_perf_script_fields_same_stacks() {
    start_server
    # fresh copies: windows are anchored at the file's mtime, and the
    # checkout's may be older than the hour queried below
    cp "$PERF_TXT" "$IT_TMP/a.txt"
    cp "$PERF_FIELDS" "$IT_TMP/b.txt"
    "$FLAMEDB" import --server "$BASE" --service a --window 1 "$IT_TMP/a.txt" >/dev/null 2>&1 || fail "import a"
    "$FLAMEDB" import --server "$BASE" --service b --window 1 "$IT_TMP/b.txt" >/dev/null 2>&1 || fail "import b"
    query 'a{}' from=now-1h format=folded
    local a=$BODY
    query 'b{}' from=now-1h format=folded
    assert_eq "-F comm,pid,tid,time,ip,sym,dso gives the same stacks" "$a" "$BODY"
    assert_eq "total" "$(perf_samples "$PERF_FIELDS")" "$(awk '{ s += $NF } END { print s }' <<<"$BODY")"
}

test_import_folded_and_stdin() {
    start_server
    it_tmp
    printf 'main;work 30\nmain;idle 12\n' >"$IT_TMP/a.folded"
    local mtime=$(( $(now) - 50 ))
    touch -d "@$mtime" "$IT_TMP/a.folded"
    "$FLAMEDB" import --server "$BASE" --service fold --window 20 "$IT_TMP/a.folded" >"$IT_TMP/out" 2>&1 ||
        fail "import folded: $(cat "$IT_TMP/out")"
    assert_contains "summary" "$(cat "$IT_TMP/out")" "folded, 42 samples in 1 profiles"
    get /api/v1/series 'query=fold{}' from=now-1h
    assert_json "window: [mtime - window, mtime)" '.series[0]|"\(.first) \(.samples)"' "$((mtime - 20)) 42"
    printf 'x;y 5\n' | "$FLAMEDB" import --server "$BASE" --service stdin - >/dev/null 2>&1 || fail "stdin import"
    query 'stdin{}' from=now-1h
    assert_json "stdin" '.total' 5
}

test_import_errors() {
    start_server
    it_tmp
    local rc=0
    "$FLAMEDB" import --server "$BASE" --service s --labels 1bad=x "$PERF_TXT" >"$IT_TMP/out" 2>"$IT_TMP/err" || rc=$?
    assert_eq "exit code on HTTP 400" 1 "$rc"
    assert_contains "server's error printed" "$(cat "$IT_TMP/err")" "HTTP 400"
    assert_contains "server's JSON error" "$(cat "$IT_TMP/err")" '"error"'
    assert_contains "names the label" "$(cat "$IT_TMP/err")" "1bad"
    get /api/v1/series from=now-1h
    assert_json "nothing stored" '.series|length' 0
    rc=0
    "$FLAMEDB" import --server http://127.0.0.1:1 --service s "$PERF_TXT" >/dev/null 2>"$IT_TMP/err" || rc=$?
    assert_eq "exit code when unreachable" 1 "$rc"
    assert_contains "unreachable" "$(cat "$IT_TMP/err")" "cannot reach"
    rc=0
    "$FLAMEDB" import --server "$BASE" --service s "$IT_TMP/missing.txt" >/dev/null 2>"$IT_TMP/err" || rc=$?
    assert_eq "exit code on a missing file" 1 "$rc"
    assert_contains "missing file" "$(cat "$IT_TMP/err")" "No such file"
    rc=0
    "$FLAMEDB" import --service s "$PERF_TXT" >/dev/null 2>"$IT_TMP/err" || rc=$?
    assert_eq "usage error" 2 "$rc"
    assert_contains "required flags" "$(cat "$IT_TMP/err")" "--server and --service are required"
    rc=0
    "$FLAMEDB" import --server "$BASE" --service s --window 0 "$PERF_TXT" >/dev/null 2>&1 || rc=$?
    assert_eq "bad window" 2 "$rc"
}

test_import_help() {
    local h
    h=$("$FLAMEDB" import --help)
    local flag
    for flag in --server --service --labels --rate --window --help; do
        assert_contains "import --help lists $flag" "$h" "$flag"
    done
    assert_contains "flamedb --help lists import" "$("$FLAMEDB" --help)" "flamedb import"
}
