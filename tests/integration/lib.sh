# lib.sh — helpers for flamedb's HTTP integration tests (bash + curl + jq).
#
# Sourced by run.sh together with one test_*.sh file; every test_* function
# then runs in its own subshell.  A test fails when it records a failure
# (fail / assert_*) or exits non-zero.  Failures are appended to the file
# $IT_FAILS, so they survive subshells ($(...), background loops).
#
# Server life:   start_server [flags]   new temp data dir, sets BASE and PID
#                stop_server            SIGTERM, wait, assert exit code 0
#                kill9_server           SIGKILL, wait
#                restart_server [flags] stop_server + launch on the same dir
#                launch_server [flags]  start on the existing $DATA
# Requests:      get PATH [k=v ...]     GET with url-encoded params
#                post PATH [curl args]  POST
#                ingest QS BODY [curl args]      POST /api/v1/ingest?QS
#                query SEL [k=v ...]    GET /api/v1/query?query=SEL&k=v
#                each sets STATUS, BODY, BODY_FILE, HEADERS_FILE.
# Assertions:    assert_eq / assert_contains / assert_not_contains /
#                assert_status / assert_json / assert_ge / assert_le / fail
# Folded text:   fold_canon [FILE...]  stacks summed and sorted bytewise
#                fold_canon_exact [FILE...]  the same, exact above 2^31
#
# No assertion depends on wall-clock durations; timeouts only bound loops.

IT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$IT_LIB_DIR/../.." && pwd)
SYSTEM_MIX="$REPO/../shared/data/system-mix.folded"

: "${FLAMEDB:?FLAMEDB must name the flamedb binary}"
: "${IT_FAILS:=/dev/stderr}"

# Per-test scratch space, created on first use, removed by it_cleanup.
IT_TMP=""
it_tmp() {
    if [ -z "$IT_TMP" ]; then
        IT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-it.XXXXXX")
    fi
}

# ---- failures and assertions: tests/assert.sh -------------------------------
# shellcheck source=../assert.sh
source "$(dirname "${BASH_SOURCE[0]}")/../assert.sh"

# dist_ref "x1 x2 ..." "y1 y2 ...": the reference "manhattan jsd" of two
# distributions given as values per function (same positions), over all of them.
dist_ref() {
    awk -v xs="$1" -v ys="$2" 'function kl(p, m) { return p > 0 ? p * log(p / m) / log(2) : 0 }
        BEGIN { n = split(xs, x, " "); split(ys, y, " ")
                for (i = 1; i <= n; i++) { sx += x[i]; sy += y[i] }
                for (i = 1; i <= n; i++) {
                    p = x[i] / sx; q = y[i] / sy; m = (p + q) / 2
                    man += (p > q ? p - q : q - p); jsd += kl(p, m) / 2 + kl(q, m) / 2 }
                printf "%.17g %.17g", man, jsd }'
}

# assert_status desc code — checks $STATUS of the last request.
assert_status() {
    local desc=$1 want=$2
    if [ "$STATUS" != "$want" ]; then
        fail "$desc: expected HTTP $want, got HTTP $STATUS, body: $(head -c 400 "$BODY_FILE" 2>/dev/null)"
        return 1
    fi
}

# jq over $BODY.  The document is read with --stream because jq 1.6's
# parser refuses nesting deeper than 256, which a flamegraph tree of deep
# stacks easily exceeds; fromstream has no such limit.
jqd() {
    jq -r "$1" <<<"$BODY" 2>/dev/null || jq -n --stream -r "fromstream(inputs) | $1" <<<"$BODY"
}

# assert_json desc jq-expr expected — on $BODY.
assert_json() {
    local desc=$1 expr=$2 want=$3 got
    got=$(jqd "$expr" 2>&1) || got="(jq failed: $got; body: $(head -c 300 <<<"$BODY"))"
    assert_eq "$desc ($expr)" "$want" "$got"
}

# assert_error desc code needle... — an error answer: status, JSON {"error":
# string} and a message containing every needle.
assert_error() {
    local desc=$1 want=$2 msg n
    shift 2
    assert_status "$desc" "$want" || return 1
    msg=$(jq -er '.error | strings' <<<"$BODY" 2>/dev/null) || {
        fail "$desc: expected a JSON {\"error\": \"...\"} body, got [$BODY]"
        return 1
    }
    for n in "$@"; do assert_contains "$desc: error message" "$msg" "$n" || return 1; done
}

# Prints $BODY through a jq expression (raw output).
jqb() {
    jqd "$1"
}

# The tree of a query answer ($BODY) flattened to one line per node in
# display order: "path self total", root as "<root>".
tree_lines() {
    jqd 'def flat(p): (p + [.name]) as $q
             | "\(if ($q|length) == 1 then "<root>" else ($q[1:]|join(";")) end) \(.self) \(.total)",
               (.children[] | flat($q));
           .tree | flat([])'
}

# ---- HTTP -------------------------------------------------------------------

STATUS=""; BODY=""; BODY_FILE=""; HEADERS_FILE=""

# _curl METHOD URL [curl args...]
_curl() {
    local method=$1 url=$2
    shift 2
    it_tmp
    BODY_FILE="$IT_TMP/body.$BASHPID"
    HEADERS_FILE="$IT_TMP/headers.$BASHPID"
    STATUS=$(curl -sS -g --max-time 60 -X "$method" -D "$HEADERS_FILE" -o "$BODY_FILE" \
        -w '%{http_code}' "$@" "$url" 2>"$IT_TMP/curlerr.$BASHPID")
    [ -n "$STATUS" ] || STATUS=000
    BODY=$(cat "$BODY_FILE" 2>/dev/null)
}

# get PATH [name=value ...] — each pair is url-encoded into the query string.
get() {
    local path=$1 kv
    shift
    local args=(-G)
    for kv in "$@"; do args+=(--data-urlencode "$kv"); done
    _curl GET "$BASE$path" "${args[@]}"
}

# post PATH [curl args...]
post() {
    local path=$1
    shift
    _curl POST "$BASE$path" "$@"
}

# ingest QUERYSTRING BODY [curl args...] — the query string is used as is
# (use urlenc for awkward values); BODY is sent byte for byte.
ingest() {
    local qs=$1 body=$2
    shift 2
    # not a pipe: post must run in this shell to set STATUS and BODY
    post "/api/v1/ingest?$qs" --data-binary @- "$@" < <(printf '%s' "$body")
}

# put QUERY BODY: an ingest that must succeed.
put() {
    ingest "$1" "$2"
    assert_status "ingest $1" 200
}

# ingest_file QUERYSTRING FILE [curl args...]
ingest_file() {
    local qs=$1 file=$2
    shift 2
    post "/api/v1/ingest?$qs" --data-binary @"$file" "$@"
}

# query SELECTOR [name=value ...]
query() {
    local sel=$1
    shift
    get /api/v1/query "query=$sel" "$@"
}

# Percent-encodes one value for a query string.
urlenc() {
    jq -rn --arg v "$1" '$v|@uri'
}

# Header value (case-insensitive name) of the last answer.
header() {
    tr -d '\r' <"$HEADERS_FILE" | awk -v n="$(tr 'A-Z' 'a-z' <<<"$1")" -F': ' \
        'tolower($1) == n { sub(/^[^:]*: /, ""); print; exit }'
}

# ---- the server -------------------------------------------------------------

PID=""; BASE=""; DATA=""; LOG=""; SERVER_FLAGS=()

# Waits (bounded) until process $1 has exited (gone or zombie).
_wait_exit() {
    local pid=$1 tries=$(( ${2:-30} * 20 ))
    while [ $tries -gt 0 ]; do
        [ -e "/proc/$pid" ] || return 0
        grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null && return 0
        sleep 0.05
        tries=$((tries - 1))
    done
    return 1
}

# Fails the test when a server log shows a sanitizer report.
_check_logs() {
    local f
    [ -n "$IT_TMP" ] || return 0
    for f in "$IT_TMP"/*.log; do
        [ -e "$f" ] || continue
        [ -e "$f.checked" ] && continue
        if grep -Eq 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$f"; then
            fail "sanitizer report in server log $(basename "$f"):"
            grep -E -A25 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$f" | head -60 | sed 's/^/      /' >>"$IT_FAILS"
            : >"$f.checked"
        fi
    done
}

# launch_server [flags...] — starts the server on the existing $DATA and
# waits (at most ~15 s) for its "listening on" line.
launch_server() {
    [ -z "$PID" ] || die "launch_server: a server (pid $PID) is already running"
    SERVER_FLAGS=("$@")
    local before line port tries=300
    before=$(wc -l <"$LOG")
    "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$DATA" "$@" >>"$LOG" 2>&1 &
    PID=$!
    while [ $tries -gt 0 ]; do
        line=$(tail -n +"$((before + 1))" "$LOG" | grep -o 'listening on http://127\.0\.0\.1:[0-9]*' | head -1)
        [ -n "$line" ] && break
        if ! kill -0 "$PID" 2>/dev/null || grep -q '^State:[[:space:]]*Z' "/proc/$PID/status" 2>/dev/null; then
            wait "$PID"
            local rc=$?
            PID=""
            _check_logs
            die "server exited with code $rc before listening; log: $(tail -n +"$((before + 1))" "$LOG" | tail -5)"
        fi
        sleep 0.05
        tries=$((tries - 1))
    done
    [ -n "$line" ] || die "server did not print 'listening on' within the wait bound; log: $(tail -5 "$LOG")"
    port=${line##*:}
    BASE="http://127.0.0.1:$port"
}

# start_server [flags...] — a fresh data directory.
start_server() {
    it_tmp
    DATA=$(mktemp -d "$IT_TMP/data.XXXXXX")
    LOG="$DATA.log"
    : >"$LOG"
    launch_server "$@"
}

# stop_server — SIGTERM, wait for the exit, require exit code 0.
stop_server() {
    [ -n "$PID" ] || return 0
    local pid=$PID rc
    PID=""
    kill -TERM "$pid" 2>/dev/null
    if ! _wait_exit "$pid" 60; then
        fail "server (pid $pid) still running 60 s after SIGTERM; killing it"
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid"
    rc=$?
    _check_logs
    if [ "$rc" -ne 0 ]; then
        fail "server exited with code $rc after SIGTERM (expected 0); log tail: $(tail -3 "$LOG" | tr '\n' '|')"
        return 1
    fi
}

kill9_server() {
    [ -n "$PID" ] || return 0
    local pid=$PID
    PID=""
    kill -KILL "$pid" 2>/dev/null
    _wait_exit "$pid" 30
    { wait "$pid"; } 2>/dev/null
    _check_logs
    return 0
}

# restart_server [flags...] — SIGTERM restart on the same data directory,
# with the same flags unless others are given.
restart_server() {
    local flags=("${SERVER_FLAGS[@]}")
    [ $# -gt 0 ] && flags=("$@")
    stop_server
    launch_server "${flags[@]}"
}

# EXIT trap of every test: stop what runs, check logs, remove temp files.
it_cleanup() {
    local rc=$?
    if [ -n "$PID" ]; then stop_server; fi
    _check_logs
    if [ -n "$IT_TMP" ] && [ -s "$IT_FAILS" ] && [ -n "$LOG" ] && [ -e "$LOG" ]; then
        { echo "  -- server log tail ($LOG):"; tail -8 "$LOG" | sed 's/^/     /'; } >>"$IT_FAILS"
    fi
    [ -n "$IT_TMP" ] && rm -rf "$IT_TMP"
    exit "$rc"
}

# ---- small utilities -------------------------------------------------------

now() { date +%s; }

# Sums folded lines "frames count" per stack (split at the last space) and
# prints them sorted bytewise: the canonical form of a folded profile.
# fold_canon prints the sums with awk's %d (mawk caps it at 2^31-1);
# fold_canon_exact with %.0f, exact integers above 2^31.
fold_canon() { _fold_sum '%s %d\n' "$@"; }
fold_canon_exact() { _fold_sum '%s %.0f\n' "$@"; }

# _fold_sum FORMAT [FILE...] — fold_canon with FORMAT (stack, sum) for printf.
_fold_sum() {
    local fmt=$1
    shift
    awk -v fmt="$fmt" '{ line = $0; sub(/\r$/, "", line);
           if (line ~ /^[ \t]*$/) next;
           n = line; sub(/^.*[ \t]/, "", n);
           sub(/[ \t]+[0-9]+[ \t]*$/, "", line);
           sum[line] += n }
         END { for (k in sum) printf fmt, k, sum[k] }' "$@" | LC_ALL=C sort
}

# The value of one sample in a Prometheus text answer ($BODY), by its exact
# name{labels} as printed; empty when absent.
metric() {
    awk -v m="$1" '$1 == m { print $2; exit }' <<<"$BODY"
}

# Requires the shared real-data file; fails the test when it is missing.
# wait_metric NAME MIN — polls /metrics until the metric NAME reaches MIN
# (background work: compaction, retention; at most 20 s), then prints its
# last value for the caller to assert on.
wait_metric() {
    local name=$1 min=$2 tries=200 v=0
    while [ $tries -gt 0 ]; do
        get /metrics
        v=$(metric "$name")
        [ "${v:-0}" -ge "$min" ] && break
        sleep 0.1
        tries=$((tries - 1))
    done
    echo "${v:-0}"
}

need_system_mix() {
    [ -r "$SYSTEM_MIX" ] || die "real data file missing: $SYSTEM_MIX (expected shared/ beside the repo)"
}
