#!/usr/bin/env bash
# measure.sh [CHTOOL] — figures for docs/cluster.md (no pass/fail): start
# time (launch to the first /ping, ZooKeeper: to "srvr" serving) and RSS of
# one ClickHouse 18.16 server and of ZooKeeper, on this machine, the way
# tests/cluster/lib.sh runs them; RSS again after flamedb's schema and
# 100,000 sample rows; SIGTERM-to-exit times.
set -u
CT_FAILS=/dev/stderr
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -ge 1 ] && CHTOOL=$1
trap ct_cleanup EXIT
rss() { awk '/^VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$1/status"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f s", b - a }'; }

t0=$EPOCHREALTIME; zk_start; t1=$EPOCHREALTIME
echo "zookeeper: start $(secs "$t0" "$t1"), RSS $(rss "$ZK_PID")"
for run in 1 2 3; do
    ZK_PORT_SAVE=$ZK_PORT ZK_PID_SAVE=$ZK_PID
    ZK_PORT="" ZK_PID=""   # single: no ZooKeeper in the server's config
    t0=$EPOCHREALTIME; ch_cluster_start single; t1=$EPOCHREALTIME
    echo "clickhouse 18.16, run $run: start $(secs "$t0" "$t1"), RSS $(rss "${CH_PID[1]}")"
    if [ "$run" = 3 ] && [ -x "$CHTOOL" ]; then
        "$CHTOOL" schema "${CH_URL[1]}" >/dev/null
        t0=$EPOCHREALTIME
        for s in 1 2 3 4 5 6 7 8 9 10; do "$CHTOOL" samples "${CH_URL[1]}" flamedb.samples "$s" 10000 >/dev/null; done
        t1=$EPOCHREALTIME
        echo "  100,000 rows in 10 inserts: $(secs "$t0" "$t1"); RSS then $(rss "${CH_PID[1]}")"
    fi
    t0=$EPOCHREALTIME; ch_stop 1; t1=$EPOCHREALTIME
    echo "  SIGTERM to exit: $(secs "$t0" "$t1")"
    rm -rf "${CH_DIR[1]}"
    ZK_PORT=$ZK_PORT_SAVE ZK_PID=$ZK_PID_SAVE
done
echo "zookeeper RSS after the runs: $(rss "$ZK_PID")"
t0=$EPOCHREALTIME; zk_stop; t1=$EPOCHREALTIME
echo "zookeeper SIGTERM to exit: $(secs "$t0" "$t1")"
