#!/usr/bin/env bash
# bench_cluster_query.sh — merge latency in cluster mode against a single
# node holding the same data, in one run (issue 10, "Benchmarks": merge
# latency of one service and of everything over 1 h and 24 h, cluster vs
# single node; pairs/s per shard).  Figures and ratios; it never fails on a
# timing.  One command, so that it can be rerun before and after a change:
#
#   bash bench/bench_cluster_query.sh [/abs/path/to/flamedb]   (default: bin/flamedb)
#
# What it starts, on 127.0.0.1 only, in one temporary directory
# (tests/cluster/lib.sh, the cluster tests' harness):
#   * the two_shards topology: ZooKeeper + 2 ClickHouse 18.16 servers, 2
#     shards x 1 replica, ReplicatedMergeTree;
#   * front ends 1 and 2 (--store clickhouse=URL1,URL2, front end 2 listing
#     URL2 first; --clickhouse-cluster two_shards; --query-timeout 0): the
#     data is pushed through both, round-robin; queries go to front end 1;
#   * a single-node flamedb (LMDB; --query-timeout 0) beside them.
# The data (bench/bench_cluster.c, the load driver: bench_ingest's folded
# bodies of 2,000 distinct lines drawn Zipf(1.1) from a pool of 20,000
# stacks, so stacks repeat across profiles as in a fleet): $SERIES series
# (instances i0..i<SERIES-1>, services s00..s<SERVICES-1>, instance i<k> in
# service s<k % SERVICES>), one 10 s profile per series every $STEP s over
# 24 h.  The same requests go to the single node and to the front ends; the
# script waits for the spools to drain and for the single node's background
# compaction to build its rollups (flamedb_rollups_built_total still).
# Then for each of {one service (s03), everything} x {1 h (12:00-13:00 of
# the day), 24 h}, and each of GET /api/v1/query (format json) and
# GET /api/v1/top: one untimed call to both (the answers are compared byte
# for byte: "answers equal"), then $RUNS timed calls to each, alternating
# single node / front end (curl's time_total).  Printed per row: median and
# p90 on both, the ratio cluster / single (of the medians), the pairs the
# range holds (raw samples rows in ClickHouse = profiles x 2,000; checked
# against the single node's answer's profile count), pairs/s (pairs / median)
# on both and per shard for the cluster (/ 2), the largest RSS of the front
# end and of the single node while their calls ran (sampled every 50 ms),
# what ClickHouse read for the front end's calls: rows and bytes per call
# and statements per call (system.query_log's read_rows and read_bytes of
# the initial queries: 18.16 has no SelectedRows event and the harness's
# config.xml no query_log, so the script gives both servers one in
# config.d, and log_queries=1 in users.d, and restarts them once before the
# front ends start), and how many rows the 10 min and 1 h rollup tables
# hold for the same range (what a pushdown onto them would read).
# To compare two builds (before / after a change), run it once with each
# binary: the data, the queries and the seed are the same every run.
#
# Env:  BENCH_CQ_RUNS=5          timed calls per endpoint and target
#       BENCH_CQ_SERIES=20       series (instances)
#       BENCH_CQ_SERVICES=10     services
#       BENCH_CQ_STEP=300        seconds between a series' profiles (24 h / STEP per series)
#       BENCH_CQ_CASES="svc1h all1h svc24h all24h"
#       BENCH_CQ_ENDPOINTS="query top"
#       BENCH_CQ_DRIVER=PATH     the load driver (default build/bench/bench_cluster, compiled
#                                from bench/bench_cluster.c when older)
#       BENCH_CQ_QUERY_LOG=0     leave ClickHouse's query_log off (no CHrows/CH_MB columns)
#       BENCH_CQ_KEEP=1          keep the temporary directory
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
FLAMEDB=${1:-$REPO/bin/flamedb}
RUNS=${BENCH_CQ_RUNS:-5}
SERIES=${BENCH_CQ_SERIES:-20}
SERVICES=${BENCH_CQ_SERVICES:-10}
STEP=${BENCH_CQ_STEP:-300}
CASES=${BENCH_CQ_CASES:-"svc1h all1h svc24h all24h"}
ENDPOINTS=${BENCH_CQ_ENDPOINTS:-"query top"}
QLOG=${BENCH_CQ_QUERY_LOG:-1}
DRIVER=${BENCH_CQ_DRIVER:-$REPO/build/bench/bench_cluster}
LINES=2000                 # lines (pairs) of every body the driver sends
SHARDS=2
DAY=86400
BASE=1780272000            # 2026-06-01T00:00:00Z: the day of data
REQUESTS=$((SERIES * DAY / STEP))

for tool in curl jq java python3 /usr/sbin/clickhouse-server; do
    command -v "$tool" >/dev/null || { echo "bench_cluster_query: $tool is required (make deps installs it)" >&2; exit 2; }
done
[ -x "$FLAMEDB" ] || { echo "bench_cluster_query: $FLAMEDB is not an executable (make all builds bin/flamedb)" >&2; exit 2; }
[ $((DAY % STEP)) = 0 ] && [ "$STEP" -ge 10 ] ||
    { echo "bench_cluster_query: BENCH_CQ_STEP=$STEP: expected a divisor of 86400, at least 10" >&2; exit 2; }
[ "$SERVICES" -ge 4 ] && [ "$SERVICES" -le "$SERIES" ] ||
    { echo "bench_cluster_query: BENCH_CQ_SERVICES=$SERVICES: expected 4..BENCH_CQ_SERIES (the one service is s03)" >&2; exit 2; }
if [ -z "${BENCH_CQ_DRIVER:-}" ] && { [ ! -x "$DRIVER" ] || [ "$HERE/bench_cluster.c" -nt "$DRIVER" ] ||
    [ "$HERE/gen.h" -nt "$DRIVER" ] || [ "$HERE/server.h" -nt "$DRIVER" ]; }; then
    mkdir -p "$(dirname "$DRIVER")"
    cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread "$HERE/bench_cluster.c" -o "$DRIVER" -lcurl -lm ||
        { echo "bench_cluster_query: cannot build the driver $DRIVER" >&2; exit 2; }
fi

# shellcheck source=../tests/cluster/lib.sh
source "$REPO/tests/cluster/lib.sh"

# sq I SQL: chq with a query_id "bench-...": the script's own statements,
# told from the front end's in system.query_log
QN=0
sq() { QN=$((QN + 1)); chq "$1" "$2" "query_id=bench-$$-$QN"; }

declare -a FE_PID=() FE_PORT=()
SN_PID="" SN_PORT=""
SAMPLER=""
T_START=$EPOCHREALTIME

# fe_start I URLS: front end I (data in $CT_TMP/fe-I).
fe_start() {
    local i=$1 urls=$2
    FE_PORT[$i]=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:${FE_PORT[$i]}" --data "$CT_TMP/fe-$i" --store "clickhouse=$urls" \
        --clickhouse-cluster two_shards --retention 0 --query-timeout 0 >>"$CT_TMP/fe-$i.log" 2>&1 &
    FE_PID[$i]=$!
    ct_wait_healthz "http://127.0.0.1:${FE_PORT[$i]}" "${FE_PID[$i]}" "$CT_TMP/fe-$i.log"
}
fe_url() { echo "http://127.0.0.1:${FE_PORT[$1]}"; }
sn_url() { echo "http://127.0.0.1:$SN_PORT"; }

cleanup() {
    local i
    for i in "$SAMPLER" "${snp:-}" "${fep:-}"; do [ -n "$i" ] && kill "$i" 2>/dev/null; done
    for i in "${!FE_PID[@]}"; do [ -n "${FE_PID[$i]}" ] && _ct_stop_pid "front end $i" "${FE_PID[$i]}"; done
    [ -n "$SN_PID" ] && _ct_stop_pid "single node" "$SN_PID"
    ch_cluster_stop
    if [ -n "${BENCH_CQ_KEEP:-}" ]; then echo "  kept $CT_TMP (configs, logs, data)"
    elif [ -n "$CT_TMP" ]; then rm -rf "$CT_TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

calc() { awk "BEGIN { printf \"$1\", ($2) }"; }  # parenthesized: a bare > is awk's redirection
since() { calc '%.1f' "$EPOCHREALTIME - $1"; }

# ---- the servers and the data ---------------------------------------------------

echo "bench_cluster_query: merge latency, two_shards ClickHouse cluster (2 shards x 1 replica, ZooKeeper)"
echo "  through a flamedb front end, against a single-node flamedb with the same data; $(nproc) cores"
echo "  shared by everything (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
t=$EPOCHREALTIME
ch_cluster_start two_shards
# what ClickHouse reads: 18.16 has no SelectedRows event, and the harness's
# config.xml no <query_log>; so both servers get a query_log (config.d) and
# log_queries=1 (users.d) and are restarted once, before the front ends start
if [ "$QLOG" = 1 ]; then
    for i in 1 2; do
        mkdir -p "${CH_DIR[$i]}/config.d" "${CH_DIR[$i]}/users.d"
        echo '<yandex><query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log></yandex>' \
            >"${CH_DIR[$i]}/config.d/query_log.xml"
        echo '<yandex><profiles><default><log_queries>1</log_queries></default></profiles></yandex>' \
            >"${CH_DIR[$i]}/users.d/log_queries.xml"
        ch_stop "$i"
        ch_start "$i"
    done
fi
fe_start 1 "${CH_URL[1]},${CH_URL[2]}"
fe_start 2 "${CH_URL[2]},${CH_URL[1]}"
SN_PORT=$(ct_free_ports 1)
"$FLAMEDB" serve --listen "127.0.0.1:$SN_PORT" --data "$CT_TMP/single" --retention 0 --query-timeout 0 \
    >>"$CT_TMP/single.log" 2>&1 &
SN_PID=$!
ct_wait_healthz "$(sn_url)" "$SN_PID" "$CT_TMP/single.log"
printf '  ClickHouse %s, 2 front ends and the single node up in %s s\n' "$(sq 1 "SELECT version() FORMAT TSV")" "$(since "$t")"

printf '  data: %d series (%d services), one 10 s profile of %d pairs per series every %d s over 24 h:\n' \
    "$SERIES" "$SERVICES" "$LINES" "$STEP"
printf '        %d profiles, %d pairs, into each side\n' "$REQUESTS" $((REQUESTS * LINES))
# drive LABEL ARGS...: the driver; its key=value lines into R
declare -A R
drive() {
    local label=$1 out k v line
    shift
    R=()
    out=$("$DRIVER" load --clients 4 --kind repeated --requests "$REQUESTS" --base "$BASE" --instances "$SERIES" \
        --services "$SERVICES" --step "$STEP" "$@" 2>&1)
    while IFS= read -r line; do
        [[ "$line" == *=* ]] || { echo "  driver: $line"; continue; }
        k=${line%%=*}
        v=${line#*=}
        R[$k]=$v
    done <<<"$out"
    [ -n "${R[first_error]:-}" ] && echo "  driver: first error: ${R[first_error]}"
    [ "${R[failed]:-1}" = 0 ] || die "the push into $label failed (see the first error)"
    [ "${R[requests]:-0}" = "$REQUESTS" ] || die "the push into $label: ${R[requests]:-0} of $REQUESTS acknowledged"
    printf '  pushed into %-26s %7.1f s (%s of drain)\n' "$label" \
        "$(calc '%.1f' "${R[load_s]} + ${R[drain_s]:-0}")" "${R[drain_s]:-0} s"
}
drive "the single node" --urls "$(sn_url)"
drive "front ends 1 and 2 (ClickHouse)" --urls "$(fe_url 1),$(fe_url 2)" --drain "$(fe_url 1),$(fe_url 2)"
[ "${R[drained]:-1}" = 1 ] || die "the front ends' spools did not drain"

# the single node builds its rollups in the background (every 2 s when
# idle): until flamedb_rollups_built_total has not moved for 6 s (at most 180 s)
t=$EPOCHREALTIME
rolled() { curl -s "$(sn_url)/metrics" | awk '/^flamedb_rollups_built_total/ { print $2 }'; }
last=$(rolled) still=0 waited=0
while [ "$still" -lt 12 ] && [ "$waited" -lt 360 ]; do
    sleep 0.5
    now=$(rolled)
    if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0 last=$now; fi
    waited=$((waited + 1))
done
parts=$(for i in 1 2; do sq "$i" "SELECT table, count() FROM system.parts WHERE database = 'flamedb' AND active AND table IN ('samples_local', 'samples_10m_local', 'samples_1h_local') GROUP BY table FORMAT TSV"; done |
    awk -F'\t' '{ n[$1] += $2 } END { for (t in n) printf "%s %d, ", t, n[t] }')
printf '  single node: %s rollups built (waited %s s for them); ClickHouse active parts: %s\n' "${last:-?}" "$(since "$t")" "${parts%, }"

# ---- what ClickHouse reads --------------------------------------------------------

READS=none
if [ "$QLOG" = 1 ]; then
    sq 1 "SYSTEM FLUSH LOGS" >/dev/null
    sq 1 "SELECT count() FROM system.query_log FORMAT TSV" >/dev/null && READS=qlog
fi
case $READS in
qlog) echo "  ClickHouse reads: system.query_log of both servers (read_rows, read_bytes of the front end's statements)" ;;
none) echo "  ClickHouse reads: skipped (no system.query_log)" ;;
esac

# ---- the queries ------------------------------------------------------------------

# case -> selector, from, until
case_args() {
    local sel from until
    case $1 in
    svc*) sel='{service="s03"}' ;;
    all*) sel='{}' ;;
    esac
    case $1 in
    *1h) from=$((BASE + 12 * 3600)) until=$((BASE + 13 * 3600)) ;;
    *24h) from=$BASE until=$((BASE + DAY)) ;;
    esac
    echo "$sel $from $until"
}
# pairs in ClickHouse's table T (samples, samples_10m, samples_1h) for SEL's series over [FROM, UNTIL)
ch_rows() {
    local tbl=$1 sel=$2 from=$3 until=$4 col=window_start cond=""
    [ "$tbl" = samples ] || col=bucket
    [ "$sel" = '{}' ] || cond="AND series GLOBAL IN (SELECT series FROM flamedb.labels WHERE name = 'service' AND value = 's03')"
    sq 1 "SELECT count() FROM flamedb.$tbl WHERE $col >= $((from * 1000)) AND $col < $((until * 1000)) $cond FORMAT TSV"
}
# rss_watch PID FILE: the largest VmRSS (kB) of PID, sampled every 50 ms, into FILE when stopped
rss_watch() {
    local pid=$1 file=$2
    ( max=0; trap 'echo $max >"$file"; exit 0' TERM
      while :; do
          r=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
          [ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r
          sleep 0.05
      done ) &
    SAMPLER=$!
}
rss_stop() {  # rss_stop PID: stops the sampler PID
    kill -TERM "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    [ "$SAMPLER" = "$1" ] && SAMPLER=""
}
# median and p90 (nearest rank) of the numbers on stdin, "median p90"
stats() { sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); p = int(0.9 * NR + 0.999999); if (p < 1) p = 1; printf "%.6f %.6f", v[m], v[p] }'; }

echo
printf '  %-6s %-5s %9s %9s %9s %9s %7s %10s %9s %9s %9s %8s %8s %14s %8s %8s %5s\n' \
    case endpoint "single_md" "single_90" "clust_md" "clust_90" ratio pairs "Mp/s_sn" "Mp/s_cl" "Mp/s_shd" \
    "feMiB" "snMiB" "CHrows/st" "CH_MB" "r10m" "equal"
ALL_EQUAL=yes
results=()
mkdir -p "$CT_TMP/ans"
for case in $CASES; do
    read -r sel from until <<<"$(case_args "$case")"
    qsel=$(jq -rn --arg v "$sel" '$v|@uri')
    pairs=$(ch_rows samples "$sel" "$from" "$until")
    r10m=$(ch_rows samples_10m "$sel" "$from" "$until")
    r1h=$(ch_rows samples_1h "$sel" "$from" "$until")
    for ep in $ENDPOINTS; do
        case $ep in
        query) path="/api/v1/query?query=$qsel&from=$from&until=$until&format=json" ;;
        top) path="/api/v1/top?query=$qsel&from=$from&until=$until" ;;
        *) die "BENCH_CQ_ENDPOINTS: unknown endpoint $ep (query, top)" ;;
        esac
        # untimed: both answers, compared byte for byte
        a=$CT_TMP/ans/$case-$ep
        cs=$(curl -s -o "$a.single" -w '%{http_code}' "$(sn_url)$path")
        cc=$(curl -s -o "$a.cluster" -w '%{http_code}' "$(fe_url 1)$path")
        equal=yes
        if [ "$cs" != 200 ] || [ "$cc" != 200 ] || ! cmp -s "$a.single" "$a.cluster"; then
            equal=no ALL_EQUAL=no
            echo "  $case $ep: answers differ: HTTP $cs (single node) vs $cc (front end);" \
                "$(stat -c %s "$a.single") vs $(stat -c %s "$a.cluster") bytes; $(head -c 200 "$a.cluster")"
        fi
        profiles=""
        [ "$ep" = query ] && profiles=$(jq -r .profiles "$a.single")
        if [ -n "$profiles" ] && [ "$profiles" != null ] && [ $((profiles * LINES)) != "$pairs" ]; then
            echo "  $case: ClickHouse holds $pairs pairs in the range, the single node's answer $profiles profiles x $LINES"
        fi
        # timed: alternating; the front end's and the single node's RSS while theirs run
        : >"$a.tsn"
        : >"$a.tcl"
        rss_watch "$SN_PID" "$a.rsn"
        snp=$SAMPLER
        rss_watch "${FE_PID[1]}" "$a.rfe"
        fep=$SAMPLER
        if [ "$READS" = qlog ]; then
            # the front end's statements of this row: started after T (a second after the untimed calls)
            t0=$(sq 1 "SELECT toUInt32(now()) FORMAT TSV")
            sleep 1.1
        fi
        for ((r = 1; r <= RUNS; r++)); do
            curl -s -o /dev/null -w '%{time_total}\n' "$(sn_url)$path" >>"$a.tsn"
            curl -s -o /dev/null -w '%{time_total}\n' "$(fe_url 1)$path" >>"$a.tcl"
        done
        rss_stop "$snp"
        rss_stop "$fep"
        rows_read=0 bytes_read=0 stmts=0
        if [ "$READS" = qlog ]; then
            for i in 1 2; do sq "$i" "SYSTEM FLUSH LOGS" >/dev/null; done
            read -r rows_read bytes_read stmts <<<"$(for i in 1 2; do
                sq "$i" "SELECT sum(read_rows), sum(read_bytes), count() FROM system.query_log WHERE type = 2 AND is_initial_query AND query_id NOT LIKE 'bench-%' AND toUInt32(query_start_time) > $t0 FORMAT TSV"
            done | awk -F'\t' '{ r += $1; b += $2; n += $3 } END { printf "%d %d %d", r, b, n }')"
        fi
        read -r smd s90 <<<"$(stats <"$a.tsn")"
        read -r cmd c90 <<<"$(stats <"$a.tcl")"
        ratio=$(calc '%.2f' "$smd > 0 ? $cmd / $smd : 0")
        mps_sn=$(calc '%.2f' "$smd > 0 ? $pairs / $smd / 1e6 : 0")
        mps_cl=$(calc '%.2f' "$cmd > 0 ? $pairs / $cmd / 1e6 : 0")
        mps_sh=$(calc '%.2f' "$cmd > 0 ? $pairs / $cmd / $SHARDS / 1e6 : 0")
        chrows="-" chmb="-"
        if [ "$READS" != none ]; then
            chrows=$(calc '%.0f' "$rows_read / $RUNS")
            chmb=$(calc '%.1f' "$bytes_read / $RUNS / 1048576")
            chrows="$chrows/$(calc '%.0f' "$stmts / $RUNS")"
        fi
        printf '  %-6s %-5s %9.3f %9.3f %9.3f %9.3f %7s %10d %9s %9s %9s %8.0f %8.0f %14s %8s %8s %5s\n' \
            "$case" "$ep" "$smd" "$s90" "$cmd" "$c90" "$ratio" "$pairs" "$mps_sn" "$mps_cl" "$mps_sh" \
            "$(calc '%.1f' "$(cat "$a.rfe") / 1024")" "$(calc '%.1f' "$(cat "$a.rsn") / 1024")" "$chrows" "$chmb" \
            "$r10m" "$equal"
        results+=("RESULT cluster query $case $ep: median $(calc '%.3f' "$cmd") s cluster, $(calc '%.3f' "$smd") s single ($ratio x); $mps_sh M pairs/s per shard; answers equal: $equal")
    done
    printf '  %-6s rollup rows in ClickHouse for the range: 10 min %d, 1 h %d (raw pairs %d: %.1fx, %.1fx)\n' "" \
        "$r10m" "$r1h" "$pairs" "$(calc '%.6f' "$r10m > 0 ? $pairs / $r10m : 0")" "$(calc '%.6f' "$r1h > 0 ? $pairs / $r1h : 0")"
done
cat <<EOF

  columns: single_md / single_90, clust_md / clust_90 = median and p90 (nearest rank) of $RUNS calls,
  seconds (curl time_total, the whole answer received); ratio = cluster median / single median;
  pairs = (stack, count) pairs the range holds for the selector (ClickHouse's raw samples rows);
  Mp/s = M pairs / median on the single node, through the front end, and per shard (/ $SHARDS);
  feMiB, snMiB = the largest RSS of front end 1 and of the single node while the calls ran;
  CHrows/st, CH_MB = rows and MB (uncompressed) ClickHouse read per front-end call, and its
  statements (system.query_log read_rows, read_bytes of the initial queries);
  r10m = rows of the 10 min rollup for the range; equal = the two answers byte for byte.
  one service = {service="s03"} ($((SERIES / SERVICES)) of $SERIES series); 1 h = 12:00-13:00 of the day.
EOF
echo
echo "  answers equal: $ALL_EQUAL"
printf '%s\n' "${results[@]}"
printf '  total time %.0f s; load average after: %s\n' "$(awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
