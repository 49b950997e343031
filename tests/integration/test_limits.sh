# test_limits.sh — connection limits and slow clients (issue 12, point 8):
# slow request heads (slowloris) cannot lock other clients out, whatever
# their number; idle and slow connections are closed after
# --connection-timeout; the connection limit stays below the open-file
# limit; the log stays small.  No assertion on durations: waits are bounded
# loops, and curl's own --max-time (60 s) only bounds a request.

# slow_clients N SECONDS [SOURCE-ADDRESS] — in the background: N connections
# that each send the start of a request head, then one more header byte a
# second, and open again when the server closes them, for SECONDS (or until
# $IT_TMP/slow.stop exists).  $IT_TMP/slow.ready appears once all N are
# connected; $IT_TMP/slow.out gets "opened N reopened M" at the end.
# Sets SLOW_PID.
slow_clients() {
    it_tmp
    local port=${BASE##*:}
    rm -f "$IT_TMP/slow.ready" "$IT_TMP/slow.stop" "$IT_TMP/slow.out"
    cat >"$IT_TMP/slow.py" <<'EOF'
import os, socket, sys, time
port, n, secs, tmp = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
src = sys.argv[5] if len(sys.argv) > 5 else None
def connect():
    s = socket.socket()
    s.settimeout(5)
    if src:
        s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return s
socks, reopened = [], 0
for i in range(n):
    try:
        socks.append(connect())
    except OSError:
        socks.append(None)
open(os.path.join(tmp, "slow.ready"), "w").close()
end = time.time() + secs
while time.time() < end and not os.path.exists(os.path.join(tmp, "slow.stop")):
    for i, s in enumerate(socks):
        try:
            if s is None:
                raise OSError
            s.sendall(b"x")
        except OSError:
            try:
                if s is not None:
                    s.close()
                socks[i] = connect()
                reopened += 1
            except OSError:
                socks[i] = None
    time.sleep(1)
with open(os.path.join(tmp, "slow.out"), "w") as f:
    f.write("opened %d reopened %d\n" % (n, reopened))
EOF
    python3 "$IT_TMP/slow.py" "$port" "$1" "$2" "$IT_TMP" ${3:+"$3"} &
    SLOW_PID=$!
    local tries=600
    while [ ! -e "$IT_TMP/slow.ready" ] && [ $tries -gt 0 ]; do
        kill -0 "$SLOW_PID" 2>/dev/null || die "the slow client exited before connecting"
        sleep 0.05
        tries=$((tries - 1))
    done
    [ -e "$IT_TMP/slow.ready" ] || die "the slow client did not connect within the wait bound"
}

stop_slow_clients() {
    [ -n "${SLOW_PID:-}" ] || return 0
    : >"$IT_TMP/slow.stop"
    wait "$SLOW_PID"
    SLOW_PID=""
}

# While slow clients hold connections: health, an ingest and a query answer.
# The first health check that gets no answer (curl gives up after 30 s)
# ends the test, so that a regression does not flood the disk with the log
# for minutes (the old server wrote 8 GB in two).
assert_others_served() {
    local what=$1 i code
    for i in 1 2 3 4 5; do
        code=$(curl -s -o /dev/null --max-time 30 -w '%{http_code}' "$BASE/healthz")
        [ "$code" = 200 ] || die "$what: healthz $i while slow clients hold connections: expected HTTP 200, got $code"
        sleep 0.2
    done
    ingest 'service=busy' $'main;work 3\n'
    assert_status "$what: ingest while slow clients hold connections" 200
    query 'busy{}' format=folded
    assert_status "$what: query while slow clients hold connections" 200
    assert_contains "$what: the ingest was stored" "$BODY" "main;work"
}

# The server's log: at most this many lines and bytes.
assert_log_small() {
    local lines bytes
    lines=$(wc -l <"$LOG")
    bytes=$(wc -c <"$LOG")
    assert_le "$1: server log lines" "$2" "$lines" || tail -5 "$LOG" | sed 's/^/      /' >>"$IT_FAILS"
    assert_le "$1: server log bytes" "$3" "$bytes"
}

test_limits_slow_heads_do_not_lock_others_out() {
    start_server --max-connections 16 --threads 4
    slow_clients 48 60
    assert_others_served "48 slow connections, limit 16"
    get /metrics
    assert_ge "slow connections were evicted" 1 "$(metric 'flamedb_http_connections_closed_total{reason="evicted"}')"
    assert_le "open connections within the limit" 16 "$(metric flamedb_http_connections)"
    assert_eq "the limit in /metrics" 16 "$(metric flamedb_http_connections_max)"
    stop_slow_clients
    assert_log_small "48 slow connections" 200 65536
    assert_contains "the limit is logged at start" "$(cat "$LOG")" "at most 16 connections"
}

# The issue's case: 256 file descriptors, 200 slow connections.  Before, the
# connection limit (4096) was above the file limit: accept() failed with
# EMFILE, libmicrohttpd logged in a busy loop (12 M lines in 30 s) and no
# other client got in.
test_limits_low_file_limit() {
    ulimit -n 256 || die "cannot lower the open-file limit"
    start_server
    local line n
    line=$(grep -o 'at most [0-9]* connections fit in the open-file limit of 256' "$LOG")
    assert_contains "the lower limit is logged" "$line" "open-file limit of 256"
    n=$(grep -o 'at most [0-9]* connections;' "$LOG" | grep -o '[0-9]*')
    assert_ge "some connections fit" 8 "$n"
    assert_le "below the file limit" 200 "$n"
    slow_clients 200 60
    assert_others_served "200 slow connections, 256 files"
    get /metrics
    assert_le "open connections within the limit" "$n" "$(metric flamedb_http_connections)"
    stop_slow_clients
    assert_log_small "200 slow connections, 256 files" 200 65536
    assert_not_contains "no accept() failure" "$(cat "$LOG")" "Too many open files"
}

test_limits_connection_timeout() {
    start_server --connection-timeout 2s
    it_tmp
    cat >"$IT_TMP/trickle.py" <<'EOF'
import socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(1)
if mode == "trickle":
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
elif mode == "keepalive":
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
for _ in range(40):  # a bound, not a measure
    try:
        if mode == "trickle":
            s.sendall(b"x")
        data = s.recv(4096)
        if mode == "keepalive" and data.startswith(b"HTTP/1.1 200"):
            mode = "idle"  # answered; now say nothing
            continue
        if not data:
            print("closed")
            break
    except socket.timeout:
        continue
    except OSError:
        print("closed")
        break
else:
    print("still open")
EOF
    local port=${BASE##*:} mode
    for mode in trickle idle keepalive; do
        assert_eq "a connection that is $mode is closed after --connection-timeout" "closed" \
            "$(python3 "$IT_TMP/trickle.py" "$port" "$mode")"
    done
    get /metrics
    assert_ge "closed connections counted" 3 "$(metric 'flamedb_http_connections_closed_total{reason="timeout"}')"
    # a client that sends its request at once is answered as before
    get /healthz
    assert_status "healthz" 200
}

test_limits_per_ip() {
    # 127.0.0.2 is this host too (127/8 is loopback)
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
        die "cannot bind 127.0.0.2 for a second client address"
    start_server --max-connections-per-ip 4 --max-connections 64
    slow_clients 20 60 127.0.0.2
    assert_others_served "20 slow connections from one address, 4 allowed"
    stop_slow_clients
    assert_log_small "per-IP limit" 200 65536
}

test_limits_flags() {
    it_tmp
    local rc err
    (
        ulimit -n 1024
        timeout 20 "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" --max-connections 5000 \
            >/dev/null 2>"$IT_TMP/err" </dev/null
    )
    rc=$?
    err=$(cat "$IT_TMP/err")
    assert_eq "--max-connections above the open-file limit: exit code" 2 "$rc"
    assert_contains "message names the flag" "$err" "--max-connections 5000"
    assert_contains "message says what to raise" "$err" "ulimit"
    (
        ulimit -n 64
        timeout 20 "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$IT_TMP/d" >/dev/null 2>"$IT_TMP/err" </dev/null
    )
    rc=$?
    assert_eq "64 files: too few for the defaults: exit code" 2 "$rc"
    assert_contains "64 files: says so" "$(cat "$IT_TMP/err")" "too few are left for connections"
}

# --max-series (issue 12, point 6): a query over more series than the limit
# is refused before any merge, naming the count and the flag; a narrower
# selector answers; every merging endpoint goes through the same check.
test_limits_max_series() {
    start_server --max-series 2
    local t i
    t=$(($(now) - 60))
    for i in 1 2 3; do put "service=wide&instance=i$i&from=$t&until=$((t + 10))" $'main;work 5\n'; done
    get /api/v1/query 'query={service="wide"}' from=now-1h
    assert_error "3 series, limit 2" 400 "matches 3 series" "--max-series"
    get /api/v1/top 'query={service="wide"}' from=now-1h
    assert_error "top too" 400 "--max-series"
    get /api/v1/compare 'left={service="wide"}' 'right={service="wide",instance="i1"}' from=now-1h
    assert_error "compare too" 400 "--max-series"
    get /api/v1/hotspots/metrics 'query={service="wide"}' range=1h
    assert_error "hotspots too" 400 "--max-series"
    get /api/v1/query 'query={service="wide",instance=~"i[12]"}' from=now-1h
    assert_status "2 series: answered" 200
    assert_json "their total" .total 10
    restart_server --max-series 0
    get /api/v1/query 'query={service="wide"}' from=now-1h
    assert_json "no limit: all three" .total 15
}

# --max-pairs (issue 12, point 6): the (stack, count) pairs one query may
# merge.  Over it, every merging endpoint answers 422 naming the limit and
# the flag, and nothing partial; a narrower range answers; /metrics counts
# the stopped queries.
test_limits_max_pairs() {
    start_server --max-pairs 5
    local t
    t=$(($(now) - 600))
    put "service=pairs&from=$t&until=$((t + 10))" $'main;a 1\nmain;b 2\nmain;c 3\n'
    put "service=pairs&from=$((t + 300))&until=$((t + 310))" $'main;a 4\nmain;b 5\nmain;c 6\n'
    get /api/v1/query 'query=pairs' from=$((t - 1)) until=$((t + 400))
    assert_error "6 pairs, limit 5" 422 "more than the 5 (stack, count) pairs" "--max-pairs"
    get /api/v1/timeline 'query=pairs' from=$((t - 1)) until=$((t + 400)) step=60
    assert_error "timeline too" 422 "--max-pairs"
    get /api/v1/top 'query=pairs' from=$((t - 1)) until=$((t + 400))
    assert_error "top too" 422 "--max-pairs"
    get /api/v1/query 'query=pairs' from=$((t - 1)) until=$((t + 100))
    assert_status "3 pairs: answered" 200
    assert_json "their total" .total 6
    get /metrics
    assert_eq "stopped queries counted" 3 "$(metric 'flamedb_queries_stopped_total{reason="max_pairs"}')"
    restart_server --max-pairs 0
    get /api/v1/query 'query=pairs' from=$((t - 1)) until=$((t + 400))
    assert_json "no limit: both" .total 21
    restart_server --max-pairs 1k
    get /api/v1/query 'query=pairs' from=$((t - 1)) until=$((t + 400))
    assert_json "1k: both" .total 21
}

# A read whose client went away stops.  The server is stopped (SIGSTOP)
# while a client connects, sends its request whole and shuts the
# connection, so when it goes on the request and the FIN wait together:
# the query's work ends at its first check, the log says so, /metrics
# counts it, and the answer (499) goes nowhere.
test_limits_query_stops_when_client_goes() {
    start_server
    local t port
    t=$(($(now) - 600))
    put "service=gone&from=$t&until=$((t + 10))" $'main;a 1\nmain;b 2\n'
    port=${BASE##*:}
    kill -STOP "$PID"
    python3 - "$port" "$PID" <<'PY' || fail "the raw client failed"
import os, signal, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /api/v1/query?query=gone&from=now-1h HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
s.shutdown(socket.SHUT_WR)
os.kill(int(sys.argv[2]), signal.SIGCONT)
reply = s.recv(65536)
assert reply == b"" or reply.startswith(b"HTTP/1.1 499"), reply[:200]
PY
    kill -CONT "$PID" 2>/dev/null
    assert_eq "counted in /metrics" 1 "$(wait_metric 'flamedb_queries_stopped_total{reason="client_gone"}' 1)"
    assert_contains "the log says so" "$(cat "$LOG")" "the client went away; its query was stopped"
    get /api/v1/query 'query=gone' from=now-1h
    assert_json "a client that stays gets its answer" .total 3
}

# --max-answer (issue 12, point 6): a read's answer over the limit is a 422
# naming the size, the limit and the flag, in every format; a smaller
# answer of the same data passes; the viewer and /metrics are not reads.
test_limits_max_answer() {
    start_server --max-answer 2k
    local t i body=""
    t=$(($(now) - 600))
    for i in $(seq 1 60); do body+="main;handler_$i;work_function_number_$i $i"$'\n'; done
    put "service=big&from=$t&until=$((t + 10))" "$body"
    get /api/v1/query 'query=big' from=now-1h max_nodes=0
    assert_error "a 60-stack tree over 2k" 422 "more than the 2048 one answer may be" "--max-answer"
    get /api/v1/query 'query=big' from=now-1h format=folded
    assert_error "folded too" 422 "--max-answer"
    get /api/v1/top 'query=big' from=now-1h limit=0
    assert_error "top too" 422 "--max-answer"
    get /api/v1/query 'query=big' from=now-1h max_nodes=3
    assert_status "3 nodes: answered" 200
    assert_json "the whole total in it" .total 1830
    get /metrics
    assert_status "/metrics is not a read" 200
    get /
    assert_status "the viewer is not a read" 200
    restart_server --max-answer 0
    get /api/v1/query 'query=big' from=now-1h format=folded
    assert_status "no limit" 200
}
