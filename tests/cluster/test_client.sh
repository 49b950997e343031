# test_client.sh — cluster/chclient.c against a real ClickHouse 18.16:
# every RowBinary type flamedb uses through insert and select, errors as
# ClickHouse's code and message, connection failures naming the URL.

test_roundtrip_every_type() {
    ch_cluster_start single
    tool_ok "roundtrip" roundtrip "${CH_URL[1]}" rt
    assert_eq "roundtrip output" "roundtrip: 1000 rows ok" "$OUT"
    # the server agrees with what the tool wrote: a few values read as text
    assert_eq "edge row as the server reads it" \
        "255	65535	4294967295	18446744073709551615	-9223372036854775808	-inf	127" \
        "$(chq 1 "SELECT u8, u16, u32, u64, i64, f64, length(str) FROM rt.rt WHERE id = 1 FORMAT TSV")"
    assert_eq "all bytes in a String (NUL, 0xff...)" \
        "$(python3 -c 'print("".join("%02X" % (k % 256) for k in range(399)))')" \
        "$(chq 1 "SELECT hex(str) FROM rt.rt WHERE id = 3 FORMAT TSV")"
    assert_eq "arrays" "3 3" \
        "$(chq 1 "SELECT length(arr), length(sarr) FROM rt.rt WHERE id = 15 FORMAT TSV" | tr '\t' ' ')"
    # the sample rows of the schema's samples table, summed by the server
    tool_ok "schema" schema "${CH_URL[1]}"
    tool_ok "samples" samples "${CH_URL[1]}" flamedb.samples 7 5000
    local sum=$OUT
    tool_ok "u64" u64 "${CH_URL[1]}" "SELECT sum(value) FROM flamedb.samples"
    assert_eq "sum read back" "$sum" "$OUT"
    tool_ok "u64" u64 "${CH_URL[1]}" "SELECT count() FROM flamedb.samples"
    assert_eq "rows read back" 5000 "$OUT"
}

test_errors_named() {
    ch_cluster_start single
    tool exec "${CH_URL[1]}" "SELECT nope"
    assert_eq "exit on a bad statement" 3 "$RC"
    assert_contains "code and message" "$ERR" "code 47: ClickHouse at ${CH_URL[1]} answered code 47: Unknown identifier: nope"
    tool u64 "${CH_URL[1]}" "SELECT count() FROM nowhere.t"
    assert_contains "unknown table" "$ERR" "answered code 81: Database nowhere doesn't exist"
    # settings travel as URL parameters: a limit ClickHouse enforces
    tool exec "${CH_URL[1]}" "SELECT number FROM system.numbers LIMIT 100000 FORMAT TSV" max_result_rows=10 result_overflow_mode=throw
    assert_contains "a setting applied" "$ERR" "code 396"
    tool exec "${CH_URL[1]}" "SELECT 1" no_such_setting=1
    assert_contains "an unknown setting" "$ERR" "code 115"
    # an exception after the first rows (throwIf on the last of 300,000)
    # is an error, never rows with a message glued on
    tool u64 "${CH_URL[1]}" "SELECT toUInt64(number + throwIf(number = 299999)) FROM system.numbers LIMIT 300000"
    assert_eq "exit on a late exception" 3 "$RC"
    assert_contains "late exception" "$ERR" "code 395"
    assert_eq "no rows printed" "" "$OUT"
    # the server gone: connection refused, naming the URL
    local url=${CH_URL[1]}
    ch_stop 1
    tool u64 "$url" "SELECT 1"
    assert_eq "exit when nobody listens" 3 "$RC"
    assert_contains "refused" "$ERR" "cannot connect: code 0: cannot connect to ClickHouse at $url"
}

test_timeout_named() {
    ch_cluster_start single
    # a server that accepts connections (the kernel does) and never answers
    kill -STOP "${CH_PID[1]}"
    CHTOOL_TIMEOUT_MS=300 tool u64 "${CH_URL[1]}" "SELECT 1"
    kill -CONT "${CH_PID[1]}"
    assert_eq "exit on a timeout" 3 "$RC"
    assert_contains "timeout" "$ERR" "timeout: code 0: ClickHouse at ${CH_URL[1]} did not answer in time"
    assert_contains "the limit said" "$ERR" "request timeout 300 ms"
    # the same client settings work once it answers
    CHTOOL_TIMEOUT_MS=30000 tool_ok "after SIGCONT" u64 "${CH_URL[1]}" "SELECT toUInt64(1)"
    assert_eq "answer" 1 "$OUT"
}
