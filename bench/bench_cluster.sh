#!/usr/bin/env bash
# bench_cluster.sh — ingest through flamedb front ends into a two-shard
# ClickHouse cluster, beside a single-node flamedb, in one run (issue 10,
# "Benchmarks").  Figures and ratios; it never fails on a timing.
#
#   bash bench/bench_cluster.sh [/abs/path/to/flamedb]   (default: the repository's bin/flamedb)
#
# What it starts, on 127.0.0.1 only, everything in one temporary directory
# (tests/cluster/lib.sh, the cluster tests' harness):
#   * the two_shards topology: ZooKeeper + 2 ClickHouse 18.16 servers, 2
#     shards x 1 replica, ReplicatedMergeTree (retried blocks deduplicated);
#   * front ends 1 and 2: flamedb serve --store clickhouse=URL1,URL2 (front
#     end 2 lists URL2 first, so each inserts through its own server)
#     --clickhouse-cluster two_shards --spool-max $BENCH_CLUSTER_SPOOL_MAX;
#   * a single-node flamedb (LMDB) beside them.
# Then, for each kind of stacks and number of clients, three rows of the same
# seeded workload (bench/bench_cluster.c, the load driver: bench_ingest's
# compact folded bodies of 2,000 lines, 50 instances, 10 s windows) for
# $BENCH_CLUSTER_SECONDS each: (a) the single node, (b) front end 1, (c) front
# ends 1 and 2, requests round-robin.  Each row gets its own week of windows,
# so its totals can be checked on their own; the pool of stacks is sent once
# to each target (untimed, another week) before the repeated rows.  After a
# front-end row, the driver waits for the spools to drain into ClickHouse.
# Then the totals are checked (printed, not failed): ClickHouse's samples
# over the Distributed table, and the single node's /api/v1/query, against
# what was acknowledged.
# Last, bytes per stored pair: the same $BENCH_CLUSTER_SIZE_PROFILES profiles
# into a fresh single node and, through a third front end, into a fresh
# ClickHouse database (flamedb_size); system.parts bytes_on_disk (active
# parts) of every table on both servers before and after OPTIMIZE TABLE ...
# FINAL, and samples' bytes by column (system.columns), against the single
# node's data directory (du, allocated bytes) right after the push and once
# its background compaction has built the rollups.
#
# Env:  BENCH_CLUSTER_SECONDS=10        seconds of load a row
#       BENCH_CLUSTER_CLIENTS="1 4"     client threads (repeated stacks)
#       BENCH_CLUSTER_NEW_CLIENTS=4     client threads (all-new stacks: their drain is the
#                                       longest part of a run, 3-6x the load)
#       BENCH_CLUSTER_KINDS="repeated new"
#       BENCH_CLUSTER_SIZE_PROFILES=500 profiles of 2,000 pairs for bytes/pair (0: skip)
#       BENCH_CLUSTER_SPOOL_MAX=8g      the front ends' --spool-max
#       BENCH_CLUSTER_DRIVER=PATH       the load driver (default build/bench/bench_cluster,
#                                       compiled from bench/bench_cluster.c when older)
#       BENCH_CLUSTER_KEEP=1            keep the temporary directory (ClickHouse's logs, the data)
#       BENCH_CLUSTER_PERF=1            perf record the front end(s) during each front-end
#                                       row (perf.data files kept in bench/out/)
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
FLAMEDB=${1:-$REPO/bin/flamedb}
SECS=${BENCH_CLUSTER_SECONDS:-10}
CLIENTS=${BENCH_CLUSTER_CLIENTS:-"1 4"}
NEW_CLIENTS=${BENCH_CLUSTER_NEW_CLIENTS:-4}
KINDS=${BENCH_CLUSTER_KINDS:-"repeated new"}
SIZE_REQ=${BENCH_CLUSTER_SIZE_PROFILES:-500}
SPOOL_MAX=${BENCH_CLUSTER_SPOOL_MAX:-8g}
DRIVER=${BENCH_CLUSTER_DRIVER:-$REPO/build/bench/bench_cluster}
DAY=86400
BASE0=1780272000   # 2026-06-01T00:00:00Z: the pool's windows; row r (from 1) at BASE0 + r weeks,
                   # the bytes/pair step at BASE0 - 1 week
WARM_BASE=$BASE0

for tool in curl jq java python3 /usr/sbin/clickhouse-server; do
    command -v "$tool" >/dev/null || { echo "bench_cluster: $tool is required (make deps installs it)" >&2; exit 2; }
done
[ -x "$FLAMEDB" ] || { echo "bench_cluster: $FLAMEDB is not an executable (make all builds bin/flamedb)" >&2; exit 2; }
if [ -z "${BENCH_CLUSTER_DRIVER:-}" ] && { [ ! -x "$DRIVER" ] || [ "$HERE/bench_cluster.c" -nt "$DRIVER" ] ||
    [ "$HERE/gen.h" -nt "$DRIVER" ] || [ "$HERE/server.h" -nt "$DRIVER" ]; }; then
    mkdir -p "$(dirname "$DRIVER")"
    cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread "$HERE/bench_cluster.c" -o "$DRIVER" -lcurl -lm ||
        { echo "bench_cluster: cannot build the driver $DRIVER" >&2; exit 2; }
fi

# shellcheck source=../tests/cluster/lib.sh
source "$REPO/tests/cluster/lib.sh"

declare -a FE_PID=() FE_PORT=()
SN_PID="" SN_PORT="" SN_DIR=""
T_START=$EPOCHREALTIME

# fe_start I URLS [flags...]: front end I (data in $CT_TMP/fe-I).
fe_start() {
    local i=$1 urls=$2
    shift 2
    FE_PORT[$i]=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:${FE_PORT[$i]}" --data "$CT_TMP/fe-$i" --store "clickhouse=$urls" \
        --clickhouse-cluster two_shards --retention 0 --spool-max "$SPOOL_MAX" "$@" >>"$CT_TMP/fe-$i.log" 2>&1 &
    FE_PID[$i]=$!
    ct_wait_healthz "http://127.0.0.1:${FE_PORT[$i]}" "${FE_PID[$i]}" "$CT_TMP/fe-$i.log"
}
fe_url() { echo "http://127.0.0.1:${FE_PORT[$1]}"; }

# sn_start DIR: the single node on DIR.
sn_start() {
    SN_DIR=$1
    SN_PORT=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:$SN_PORT" --data "$SN_DIR" --retention 0 >>"$SN_DIR.log" 2>&1 &
    SN_PID=$!
    ct_wait_healthz "http://127.0.0.1:$SN_PORT" "$SN_PID" "$SN_DIR.log"
}
sn_stop() {
    [ -n "$SN_PID" ] || return 0
    _ct_stop_pid "single node" "$SN_PID"
    SN_PID=""
}
sn_url() { echo "http://127.0.0.1:$SN_PORT"; }

cleanup() {
    local i
    for i in "${!FE_PID[@]}"; do [ -n "${FE_PID[$i]}" ] && _ct_stop_pid "front end $i" "${FE_PID[$i]}"; done
    sn_stop
    ch_cluster_stop
    if [ -n "${BENCH_CLUSTER_KEEP:-}" ]; then echo "  kept $CT_TMP (configs, logs, data)"
    elif [ -n "$CT_TMP" ]; then rm -rf "$CT_TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the servers --------------------------------------------------------------

echo "bench_cluster: ingest through flamedb front ends into ClickHouse (two_shards: 2 shards x 1 replica,"
echo "  ZooKeeper), beside a single-node flamedb; $SECS s a row; $(nproc) cores shared by everything"
echo "  (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
t=$EPOCHREALTIME
ch_cluster_start two_shards
printf '  cluster up in %.1f s: ClickHouse %s (pids %s %s), ZooKeeper pid %s\n' \
    "$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" \
    "$(chq 1 "SELECT version() FORMAT TSV")" "${CH_PID[1]}" "${CH_PID[2]}" "$ZK_PID"
t=$EPOCHREALTIME
fe_start 1 "${CH_URL[1]},${CH_URL[2]}"
fe_start 2 "${CH_URL[2]},${CH_URL[1]}"
sn_start "$CT_TMP/single"
printf '  front ends 1, 2 and the single node up in %.1f s (the schema ON CLUSTER, once per front end)\n' \
    "$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')"
CH_PIDS="${CH_PID[1]},${CH_PID[2]}"

# drive ARGS...: runs the driver; its key=value lines into the array R.
declare -A R
drive() {
    R=()
    local out k v
    out=$("$DRIVER" load "$@" 2>&1)
    while IFS= read -r line; do
        [[ "$line" == *=* ]] || { echo "  driver: $line"; continue; }
        k=${line%%=*}
        v=${line#*=}
        R[$k]=$v
    done <<<"$out"
    [ -n "${R[first_error]:-}" ] && echo "  driver: first error: ${R[first_error]}"
    [ "${R[failed]:-1}" = 0 ] || echo "  driver: a client failed (see the first error)"
}

calc() { awk "BEGIN { printf \"$1\", ($2) }"; }  # parenthesized: a bare > is awk's redirection

# ---- the rows ---------------------------------------------------------------------

# the pool of stacks, once to each target (untimed), for the repeated rows
if [[ " $KINDS " == *" repeated "* ]]; then
    drive --urls "$(sn_url)" --clients 1 --kind pool --requests 10 --base "$WARM_BASE"
    drive --urls "$(fe_url 1)" --clients 1 --kind pool --requests 10 --base "$WARM_BASE" --drain "$(fe_url 1)"
    drive --urls "$(fe_url 2)" --clients 1 --kind pool --requests 10 --base "$WARM_BASE" --drain "$(fe_url 2)"
fi

echo
printf '  %-8s %2s %-6s %7s %8s %5s %7s %7s %8s %5s %5s %6s %6s %5s %5s %5s %4s %6s %10s %9s  %s\n' \
    kind cl target prof/s Mlines/s ratio drain_s spoolMB e2e_Ml/s ratio srv% srv%dr srvMiB ch% ch%dr chMiB zk% other% Ml/srvCPUs Ml/chCPUs "totals (acked = stored)"
declare -A SN_LPS SN_E2E
row=0
CHECKS_OK=0 CHECKS_BAD=0
results=()
for kind in $KINDS; do
    cls=$CLIENTS
    [ "$kind" = new ] && cls=$NEW_CLIENTS
    for cl in $cls; do
        for target in single fe1 fe12; do
            row=$((row + 1))
            base=$((BASE0 + row * 7 * DAY))
            common=(--clients "$cl" --kind "$kind" --seconds "$SECS" --base "$base" --salt "$row"
                --watch "ch=$CH_PIDS" --watch "zk=$ZK_PID")
            perf_pid=""
            case $target in
            single) drive --urls "$(sn_url)" --watch "srv=$SN_PID" "${common[@]}" ;;
            fe1 | fe12)
                urls=$(fe_url 1) pids=${FE_PID[1]}
                if [ "$target" = fe12 ]; then urls="$urls,$(fe_url 2)" pids="$pids,${FE_PID[2]}"; fi
                if [ -n "${BENCH_CLUSTER_PERF:-}" ]; then
                    mkdir -p "$HERE/out"
                    perf record -F 499 -o "$HERE/out/perf-cluster-$kind-$cl-$target.data" -p "$pids" \
                        >/dev/null 2>&1 &
                    perf_pid=$!
                fi
                drive --urls "$urls" --drain "$urls" --watch "srv=$pids" "${common[@]}"
                ;;
            esac
            if [ -n "$perf_pid" ]; then
                kill -INT "$perf_pid" 2>/dev/null
                wait "$perf_pid" 2>/dev/null
            fi
            load=${R[load_s]:-0} drain=${R[drain_s]:-0}
            [ "$(calc '%d' "$load > 0")" = 1 ] || { echo "  $kind $cl $target: no load measured"; continue; }
            lps=$(calc '%.0f' "${R[lines]} / $load")
            e2e=$(calc '%.0f' "${R[lines]} / ($load + $drain)")
            [ "$target" = single ] && { SN_LPS[$kind$cl]=$lps; SN_E2E[$kind$cl]=$e2e; }
            ratio=$(calc '%.2f' "$lps / ${SN_LPS[$kind$cl]:-$lps}")
            ratio_e2e=$(calc '%.2f' "$e2e / ${SN_E2E[$kind$cl]:-$e2e}")
            wall=$(calc '%.6f' "$load + $drain")
            watched=$(calc '%.2f' "${R[cpu_load.srv]} + ${R[cpu_drain.srv]} + ${R[cpu_load.ch]} + ${R[cpu_drain.ch]} + ${R[cpu_load.zk]} + ${R[cpu_drain.zk]} + ${R[self_cpu]}")
            other=$(calc '%.0f' "100 * (${R[busy_cpu]} - $watched) / $wall")
            srv_dr="-"
            [ "$target" = single ] || srv_dr=$(calc '%.0f' "$drain > 0 ? 100 * ${R[cpu_drain.srv]} / $drain : 0")
            # the totals: what the store holds in this row's week against what was acknowledged
            wend=$((base + 7 * DAY))
            if [ "$target" = single ]; then
                got=$(curl -s "$(sn_url)/api/v1/query?query=%7Bservice%3D%22bench%22%7D&from=$base&until=$wend&max_nodes=1" |
                    jq -r '"\(.total) \(.profiles)"')
                want="${R[samples]} ${R[requests]}"
                what="samples, profiles (/api/v1/query)"
            else
                got=$(chq 1 "SELECT sum(value), count() FROM flamedb.samples WHERE window_start >= $((base * 1000)) AND window_start < $((wend * 1000)) FORMAT TSV" | tr '\t' ' ')
                got="$got $(chq 1 "SELECT count() FROM flamedb.profiles WHERE window_start >= $((base * 1000)) AND window_start < $((wend * 1000)) FORMAT TSV")"
                want="${R[samples]} ${R[lines]} ${R[requests]}"
                what="samples, pairs, profiles (ClickHouse, Distributed)"
            fi
            if [ "$got" = "$want" ]; then
                check="equal: $want $what"
                CHECKS_OK=$((CHECKS_OK + 1))
            else
                check="DIFFER: acked $want, stored $got ($what)"
                CHECKS_BAD=$((CHECKS_BAD + 1))
            fi
            [ "${R[drained]:-1}" = 1 ] || check="$check; NOT DRAINED after the wait bound"
            [ "${R[refused]:-0}" = 0 ] || check="$check; ${R[refused]} answers 503"
            ch_dr="-"
            [ "$target" = single ] || ch_dr=$(calc '%.0f' "$drain > 0 ? 100 * ${R[cpu_drain.ch]} / $drain : 0")
            srv_cpu=$(calc '%.6f' "${R[cpu_load.srv]} + ${R[cpu_drain.srv]}")
            ch_cpu=$(calc '%.6f' "${R[cpu_load.ch]} + ${R[cpu_drain.ch]}")
            per_ch="-" spool="-"
            if [ "$target" != single ]; then
                per_ch=$(calc '%.2f' "$ch_cpu > 0 ? ${R[lines]} / $ch_cpu / 1e6 : 0")
                spool=$(calc '%.0f' "${R[spool_end]} / 1048576")
            fi
            printf '  %-8s %2s %-6s %7.1f %8.3f %5s %7.2f %7s %8.3f %5s %5.0f %6s %6.0f %5.0f %5s %5.0f %4.0f %6s %10.2f %9s  %s\n' \
                "$kind" "$cl" "$target" "$(calc '%.3f' "${R[requests]} / $load")" "$(calc '%.6f' "$lps / 1e6")" "$ratio" \
                "$drain" "$spool" "$(calc '%.6f' "$e2e / 1e6")" "$ratio_e2e" \
                "$(calc '%.3f' "100 * ${R[cpu_load.srv]} / $load")" "$srv_dr" "$(calc '%.3f' "${R[rss_kb.srv]} / 1024")" \
                "$(calc '%.3f' "100 * ${R[cpu_load.ch]} / $load")" "$ch_dr" \
                "$(calc '%.3f' "${R[rss_kb.ch]} / 1024")" \
                "$(calc '%.3f' "100 * (${R[cpu_load.zk]} + ${R[cpu_drain.zk]}) / $wall")" "$other" \
                "$(calc '%.6f' "$srv_cpu > 0 ? ${R[lines]} / $srv_cpu / 1e6 : 0")" "$per_ch" "$check"
            results+=("RESULT cluster $kind $cl $target: $lps lines/s acknowledged ($ratio x single), $e2e lines/s end to end ($ratio_e2e x single), drain ${drain} s")
        done
    done
done
cat <<'EOF'

  columns: prof/s, Mlines/s = profiles and stack lines answered 200 per second of load (single node:
  committed to LMDB; front end: fsync'd in its spool); ratio = to the single node of the same kind
  and clients in this run; drain_s = from the end of the load until every front end's spool is
  empty (GET /healthz), all in ClickHouse; spoolMB = what the spools held when the load ended;
  e2e = lines / (load + drain); srv% = CPU of the flamedb
  process(es) taking the load (100 = one core), during the load; srv%dr = during the drain;
  srvMiB = the largest RSS of one of them (sampled every 100 ms); ch%, ch%dr = both ClickHouse
  servers' CPU during the load and during the drain (background merges of earlier rows included),
  chMiB the larger server's RSS; zk% = ZooKeeper's CPU over load + drain; other% = the rest of
  the machine meanwhile (other processes), from /proc/stat; Ml/srvCPUs = M lines per CPU-second
  of the flamedb process(es), load + drain; Ml/chCPUs = M lines per CPU-second of both ClickHouse
  servers over load + drain (what sizing needs: these hold when the machine is shared, rates do
  not). Each row's totals are checked in its own week of windows.
EOF

# ---- bytes per stored pair ------------------------------------------------------

if [ "$SIZE_REQ" -gt 0 ]; then
    echo
    pairs=$((SIZE_REQ * 2000))
    sb=$((BASE0 - 7 * DAY))
    echo "  bytes per stored pair: the same $SIZE_REQ profiles x 2,000 stacks ($pairs pairs, repeated kind, 50"
    echo "  instances, 4 clients) into a fresh single node and, through a third front end, a fresh database"
    sn_stop
    sn_start "$CT_TMP/size-single"
    drive --urls "$(sn_url)" --clients 4 --kind repeated --requests "$SIZE_REQ" --base "$sb"
    sn_acked=${R[lines]}
    sn_before=$(du -s --block-size=1 "$CT_TMP/size-single" | cut -f1)
    # the single node builds its rollups (and packs closed buckets) in the background, every
    # 2 s when idle: wait until flamedb_rollups_built_total has not moved for 6 s (at most 90 s)
    rolled() { curl -s "$(sn_url)/metrics" | awk '/^flamedb_rollups_built_total/ { print $2 }'; }
    last=$(rolled) still=0 waited=0
    while [ "$still" -lt 12 ] && [ "$waited" -lt 180 ]; do
        sleep 0.5
        now=$(rolled)
        if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0 last=$now; fi
        waited=$((waited + 1))
    done
    sn_stop
    sn_bytes=$(du -s --block-size=1 "$CT_TMP/size-single" | cut -f1)
    sn_mdb=$(find "$CT_TMP/size-single" -name '*.mdb' -printf '%b\n' | awk '{ s += $1 * 512 } END { print s + 0 }')
    fe_start 3 "${CH_URL[1]},${CH_URL[2]}" --clickhouse-database flamedb_size
    drive --urls "$(fe_url 3)" --clients 4 --kind repeated --requests "$SIZE_REQ" --base "$sb" --drain "$(fe_url 3)"
    ch_acked=${R[lines]}
    ch_pairs=$(chq 1 "SELECT count() FROM flamedb_size.samples FORMAT TSV")
    # parts_sizes: "table rows bytes parts" summed over both servers, active parts only
    parts_sizes() {
        local i
        for i in 1 2; do
            chq "$i" "SELECT table, sum(rows), sum(bytes_on_disk), count() FROM system.parts WHERE database = 'flamedb_size' AND active GROUP BY table FORMAT TSV"
        done | awk -F'\t' '{ r[$1] += $2; b[$1] += $3; n[$1] += $4 } END { for (t in r) print t, r[t], b[t], n[t] }' | sort
    }
    before=$(parts_sizes)
    t=$EPOCHREALTIME
    for i in 1 2; do
        # not meta (one row): 18.16 answers OPTIMIZE of a Replicated meta_local on the shard
        # that never had a row with code 49, "Unknown log entry type: 0"
        for tb in $(chq "$i" "SELECT name FROM system.tables WHERE database = 'flamedb_size' AND engine LIKE '%MergeTree' AND name != 'meta_local' FORMAT TSV"); do
            ans=$(chq "$i" "OPTIMIZE TABLE flamedb_size.$tb FINAL") ||
                echo "  OPTIMIZE TABLE $tb FINAL on server $i: HTTP $(cat "$CT_TMP/status"): ${ans:0:300}"
        done
    done
    opt_s=$(calc '%.1f' "$EPOCHREALTIME - $t")
    after=$(parts_sizes)
    printf '  acknowledged pairs: single node %s, front end %s; pairs in ClickHouse: %s\n' "$sn_acked" "$ch_acked" "$ch_pairs"
    printf '  %-18s %9s %11s %7s %5s   %9s %11s %7s %5s\n' table rows "bytes" B/pair parts "rows" "bytes" B/pair parts
    printf '  %-18s %35s   %35s\n' "" "------- before merges -------" "---- after OPTIMIZE FINAL ----"
    join -a1 -a2 <(echo "$before") <(echo "$after") | while read -r tb r1 b1 n1 r2 b2 n2; do
        printf '  %-18s %9s %11s %7.2f %5s   %9s %11s %7.2f %5s\n' "$tb" "$r1" "$b1" "$(calc '%.6f' "$b1 / $pairs")" "$n1" \
            "$r2" "$b2" "$(calc '%.6f' "$b2 / $pairs")" "$n2"
    done
    # where samples' bytes go, by column (compressed, both servers)
    printf '  samples_local by column (compressed bytes / pair):'
    for i in 1 2; do
        chq "$i" "SELECT name, data_compressed_bytes, data_uncompressed_bytes FROM system.columns WHERE database = 'flamedb_size' AND table = 'samples_local' FORMAT TSV"
    done | awk -F'\t' -v p="$pairs" '{ c[$1] += $2; u[$1] += $3; if (!($1 in o)) { o[$1] = n++; k[n - 1] = $1 } }
        END { for (i = 0; i < n; i++) printf " %s %.2f (of %.2f)", k[i], c[k[i]] / p, u[k[i]] / p; printf "\n" }'
    tot() { awk -v re="$2" '$1 ~ re { s += $3 } END { print s + 0 }' <<<"$1"; }
    raw_re='^(samples|profiles|stacks|series|labels)_local$'
    all_re='.'
    for when in before after; do
        v=${!when}
        printf '  ClickHouse %-6s: raw tables %12s bytes = %6.2f B/pair; with the 4 rollups and meta %12s = %6.2f B/pair\n' \
            "$when" "$(tot "$v" "$raw_re")" "$(calc '%.6f' "$(tot "$v" "$raw_re") / $pairs")" \
            "$(tot "$v" "$all_re")" "$(calc '%.6f' "$(tot "$v" "$all_re") / $pairs")"
    done
    printf '  (OPTIMIZE ... FINAL of every table on both servers: %s s; parts replaced by merges and not yet removed are not counted)\n' "$opt_s"
    printf '  single node : data directory %12s bytes allocated = %6.2f B/pair (LMDB files %s = %.2f B/pair),\n' \
        "$sn_bytes" "$(calc '%.6f' "$sn_bytes / $pairs")" "$sn_mdb" "$(calc '%.6f' "$sn_mdb / $pairs")"
    printf '                after its compaction (%s rollups built); %s bytes = %.2f B/pair right after the push\n' \
        "${last:-?}" "$sn_before" "$(calc '%.6f' "$sn_before / $pairs")"
    results+=("RESULT cluster bytes/pair: ClickHouse $(calc '%.2f' "$(tot "$after" "$all_re") / $pairs") after FINAL ($(calc '%.2f' "$(tot "$before" "$all_re") / $pairs") before), raw tables $(calc '%.2f' "$(tot "$after" "$raw_re") / $pairs"); single node $(calc '%.2f' "$sn_bytes / $pairs")")
fi

echo
printf '  totals checked: %d equal, %d differ\n' "$CHECKS_OK" "$CHECKS_BAD"
printf '%s\n' "${results[@]}"
printf '  total time %.0f s\n' "$(awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')"
