# test_cli.sh — the flamedb command line: help, version, flag errors.

# run_cli ARGS... — runs the binary, sets CLI_RC, CLI_OUT, CLI_ERR.
run_cli() {
    it_tmp
    timeout 20 "$FLAMEDB" "$@" >"$IT_TMP/cli.out" 2>"$IT_TMP/cli.err" </dev/null
    CLI_RC=$?
    CLI_OUT=$(cat "$IT_TMP/cli.out")
    CLI_ERR=$(cat "$IT_TMP/cli.err")
    if grep -Eq 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$IT_TMP/cli.err"; then
        fail "sanitizer report running flamedb $*: $(head -c 1500 "$IT_TMP/cli.err")"
    fi
}

test_cli_help() {
    run_cli --help
    assert_eq "flamedb --help exit code" 0 "$CLI_RC"
    assert_contains "flamedb --help names serve" "$CLI_OUT" "serve"
    run_cli serve --help
    assert_eq "serve --help exit code" 0 "$CLI_RC"
    local flag
    for flag in --listen --data --retention --max-body; do
        assert_contains "serve --help mentions $flag" "$CLI_OUT" "$flag"
    done
    run_cli help
    assert_eq "flamedb help" 0 "$CLI_RC"
}

test_cli_version() {
    run_cli --version
    assert_eq "exit code" 0 "$CLI_RC"
    assert_contains "version" "$CLI_OUT" "flamedb"
}

test_cli_usage_errors() {
    run_cli
    assert_eq "no command: exit code" 2 "$CLI_RC"
    assert_contains "no command: usage on stderr" "$CLI_ERR" "serve"
    run_cli frobnicate
    assert_ge "unknown command exits non-zero" 1 "$CLI_RC"
    assert_contains "unknown command named" "$CLI_ERR" "frobnicate"
    run_cli --bogus
    assert_ge "flamedb --bogus exits non-zero" 1 "$CLI_RC"
    assert_contains "flamedb --bogus message" "$CLI_ERR" "--bogus"
}

test_cli_unknown_serve_flag() {
    it_tmp
    run_cli serve --data "$IT_TMP/d1" --bogus 1
    assert_ge "serve --bogus 1 exits non-zero" 1 "$CLI_RC"
    assert_contains "message names the flag" "$CLI_ERR" "--bogus"
    assert_contains "message says unknown" "$CLI_ERR" "unknown"
    run_cli serve --data "$IT_TMP/d2" --bogus
    assert_ge "serve --bogus (last) exits non-zero" 1 "$CLI_RC"
    assert_contains "message names the flag" "$CLI_ERR" "--bogus"
    assert_contains "message says unknown (not 'missing value')" "$CLI_ERR" "unknown"
    run_cli serve --data "$IT_TMP/d3" stray
    assert_ge "stray argument exits non-zero" 1 "$CLI_RC"
    assert_contains "stray argument named" "$CLI_ERR" "stray"
}

test_cli_bad_flag_values() {
    it_tmp
    local args
    while read -r args; do
        # shellcheck disable=SC2086
        run_cli serve --data "$IT_TMP/d" --listen 127.0.0.1:0 $args
        assert_ge "serve $args exits non-zero" 1 "$CLI_RC"
        assert_contains "serve $args: message names the flag" "$CLI_ERR" "${args%% *}"
    done <<'ARGS'
--max-body lots
--max-body -5
--max-body 0
--retention forever
--retention 5x
--threads 0
--commit-wait 5x
--commit-wait 2s
--merge-threads 0
--merge-threads 65
--merge-threads many
--listen nocolon
--listen 127.0.0.1:http
--max-connections 0
--max-connections lots
--max-connections 5000000
--max-connections-per-ip -1
--max-connections-per-ip many
--connection-timeout 0
--connection-timeout 500ms
--connection-timeout 2h
--connection-timeout soon
--allowed-host http://x.example
--allowed-host x.example:4040
--allowed-host x/y
--data
--listen
ARGS
}

test_cli_port_in_use() {
    start_server
    it_tmp
    local port=${BASE##*:}
    run_cli serve --listen "127.0.0.1:$port" --data "$IT_TMP/other"
    assert_ge "second server on a busy port exits non-zero" 1 "$CLI_RC"
    assert_contains "message names the address" "$CLI_ERR" "127.0.0.1:$port"
    get /healthz
    assert_status "first server unaffected" 200
}

test_cli_creates_data_dir_and_takes_every_flag() {
    it_tmp
    DATA="$IT_TMP/nested/dir/data"
    LOG="$IT_TMP/nested.log"
    : >"$LOG"
    launch_server --retention 30d --max-body 64m --threads 4 --commit-wait 10ms --max-connections 100 \
        --max-connections-per-ip 50 --connection-timeout 30s --allowed-host flamedb.example.com --merge-threads 2
    [ -d "$DATA" ] || fail "data directory $DATA not created"
    get /healthz
    assert_status "healthz" 200
    ingest 'service=x' $'a 1\n'
    assert_status "ingest" 200
    stop_server
}

# Without --auth (issue 12) every interface needs --insecure-no-auth (test_auth.sh), and then says so at
# start; loopback says nothing of it.
test_cli_listen_every_interface_warns() {
    it_tmp
    local listen port line pid tries out
    for listen in ':0' '0.0.0.0:0' '[::]:0'; do
        if [ "$listen" = '[::]:0' ] && ! [ -e /proc/net/if_inet6 ]; then continue; fi
        out="$IT_TMP/every.log"
        : >"$out"
        "$FLAMEDB" serve --listen "$listen" --data "$IT_TMP/every" --insecure-no-auth >"$out" 2>&1 </dev/null &
        pid=$!
        line=""
        tries=300
        while [ -z "$line" ] && [ $tries -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
            line=$(grep -o 'listening on http://[^ ]*' "$out" | head -1)
            sleep 0.05
            tries=$((tries - 1))
        done
        [ -n "$line" ] || fail "--listen $listen: no 'listening on' line: $(tail -3 "$out")"
        port=${line##*:}
        # the warning comes right after; wait for it like for the line above
        tries=100
        while ! grep -q 'every interface' "$out" && [ $tries -gt 0 ]; do sleep 0.05; tries=$((tries - 1)); done
        assert_contains "--listen $listen: warning" "$(cat "$out")" \
            "listening on every interface with no authentication: anyone who can reach port $port can read and write every profile"
        kill -TERM "$pid"
        wait "$pid"
        assert_eq "--listen $listen: exit code after SIGTERM" 0 "$?"
    done
    start_server
    assert_not_contains "loopback: no warning" "$(cat "$LOG")" "no authentication"
}
