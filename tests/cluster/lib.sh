# lib.sh — a ClickHouse cluster on 127.0.0.1 for flamedb's cluster tests
# (issue 10).  Sourced by run.sh with one test_*.sh file; every test_*
# function runs in its own subshell and cleans up after itself.
#
# Everything lives in a fresh temporary directory: generated config.xml and
# users.xml per server, their data, tmp and log directories, one ZooKeeper
# (zoo.cfg and data dir) when the topology needs it.  Servers listen on
# 127.0.0.1 only, on free ports picked at start.  Nothing goes through
# systemd or /etc/clickhouse-server.
#
# Cluster life:  ch_cluster_start TOPOLOGY   starts ZooKeeper (unless single)
#                                            and the servers, waits for /ping
#                ch_cluster_stop             stops every server, then ZooKeeper
#                ch_stop I / ch_kill I       stops (SIGTERM) / kills server I,
#                                            waiting for its pid to exit
#                ch_start I                  starts server I again (same dir)
# Topologies (the remote_servers cluster of the same name, servers 1..N):
#   single                  one server, no cluster, no ZooKeeper
#   two_shards              2 shards x 1 replica  (servers 1, 2)
#   one_shard_two_replicas  1 shard x 2 replicas  (servers 1, 2)
#   two_shards_two_replicas 2 shards x 2 replicas (servers 1..4)
# ON CLUSTER DDL goes through ZooKeeper's distributed DDL queue in 18.16,
# so every topology but single gets one.  The 2-server topologies list both
# 2-server clusters in remote_servers; macros {shard} and {replica} follow
# the one started.
# After start:   CH_N (servers), CH_URL[i] (http://127.0.0.1:port),
#                CH_TCP[i], CH_PID[i], CH_DIR[i], ZK_PORT, ZK_PID,
#                CT_CLUSTER (the cluster name, empty for single).
# Replication:   ch_sync_replicas [DB]  each running server fetched its
#                                       replication queue (flamedb's tables)
# Queries:       chq I SQL [k=v ...]  SQL posted to server I (settings as
#                URL parameters); the body on stdout, the HTTP status in
#                the file $CT_TMP/status; answers 0 only for HTTP 200.
# Assertions:    fail / die / assert_eq / assert_contains / assert_ok
#
# Timeouts only bound waiting loops; no assertion depends on a duration.

CT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$CT_LIB_DIR/../.." && pwd)
CH_SERVER=${CH_SERVER:-/usr/sbin/clickhouse-server}
ZK_JAR=${ZK_JAR:-/usr/share/java/zookeeper.jar}
ZK_LOG_JAR=${ZK_LOG_JAR:-/usr/share/java/slf4j-simple.jar}  # its log, to zk.log

: "${CT_FAILS:=/dev/stderr}"

CT_TMP=""
CT_CLUSTER=""
CH_N=0
declare -a CH_URL=() CH_TCP=() CH_HTTP=() CH_ISP=() CH_PID=() CH_DIR=() CH_SHARD=() CH_REPLICA=()
ZK_PORT=""
ZK_PID=""

ct_tmp() {
    if [ -z "$CT_TMP" ]; then
        CT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-ct.XXXXXX")
    fi
}

# ---- failures and assertions: tests/assert.sh -------------------------------
# shellcheck source=../assert.sh
source "$(dirname "${BASH_SOURCE[0]}")/../assert.sh"

# assert_ok desc I SQL [k=v...]: the statement succeeds; its answer on stdout.
assert_ok() {
    local desc=$1 out
    shift
    if ! out=$(chq "$@"); then
        fail "$desc: HTTP $(cat "$CT_TMP/status"): $out"
        return 1
    fi
    printf '%s' "$out"
}

# ---- ports, processes -----------------------------------------------------

# n free TCP ports on 127.0.0.1, one a line (bound together, then
# released).  Drawn below the kernel's ephemeral range: a port the kernel
# hands out for port 0 may be given again to any process's outgoing
# connection before the server meant to listen on it starts (a CI run saw
# "Address already in use" that way); a port below the range is only taken
# by someone binding it on purpose.
ct_free_ports() {
    python3 - "$1" <<'EOF'
import random, socket, sys
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
lo = lo if lo > 12000 else 32768
socks = []
while len(socks) < int(sys.argv[1]):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(10000, lo)))
    except OSError:
        s.close()
        continue
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
EOF
}

# _ct_wait_exit PID SECONDS: 0 once the process is gone (or a zombie).
_ct_wait_exit() {
    local pid=$1 tries=$(( ${2:-30} * 20 ))
    while [ $tries -gt 0 ]; do
        [ -e "/proc/$pid" ] || return 0
        grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null && return 0
        sleep 0.05
        tries=$((tries - 1))
    done
    return 1
}

_ct_alive() {
    [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# _ct_stop_pid NAME PID: SIGTERM, wait for the exit (SIGKILL and a failure
# after 60 s), reap it.
_ct_stop_pid() {
    local name=$1 pid=$2
    kill -TERM "$pid" 2>/dev/null
    if ! _ct_wait_exit "$pid" 60; then
        fail "$name (pid $pid) still running 60 s after SIGTERM; killing it"
        kill -KILL "$pid" 2>/dev/null
        _ct_wait_exit "$pid" 30
    fi
    { wait "$pid"; } 2>/dev/null
    return 0
}

# ---- ZooKeeper ------------------------------------------------------------

# zk_start: one standalone ZooKeeper on 127.0.0.1:$ZK_PORT, run straight
# from Debian's jar (its manifest names the jars it needs) without
# zkServer.sh or systemd; waits until "srvr" says it serves (Mode:).
# Not "ruok": it answers imok before the server serves sessions, and a
# ClickHouse 18.16 whose first ZooKeeper session fails can crash (SIGSEGV
# in zkutil::ZooKeeper::createImpl, seen at the first ON CLUSTER DDL).
zk_start() {
    ct_tmp
    local dir=$CT_TMP/zk tries=1200 r
    mkdir -p "$dir/data"
    [ -n "$ZK_PORT" ] || ZK_PORT=$(ct_free_ports 1)
    cat >"$dir/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
maxClientCnxns=200
EOF
    java -Xms32m -Xmx128m -XX:+UseSerialGC -Dzookeeper.log.dir="$dir" \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
        -cp "$ZK_JAR:$ZK_LOG_JAR" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
        >>"$dir/zk.log" 2>&1 &
    ZK_PID=$!
    while [ $tries -gt 0 ]; do
        r=$(_zk_cmd srvr)
        [[ "$r" == *"Mode: standalone"* ]] && return 0
        _ct_alive "$ZK_PID" || die "zookeeper exited before answering; log: $(tail -5 "$dir/zk.log")"
        sleep 0.05
        tries=$((tries - 1))
    done
    die "zookeeper did not serve on 127.0.0.1:$ZK_PORT within the wait bound; log: $(tail -5 "$dir/zk.log")"
}

# _zk_cmd WORD: ZooKeeper's answer to a four-letter word (a socket
# timeout of 1 s: one that is starting may accept and never answer).
_zk_cmd() {
    python3 - "$ZK_PORT" "$1" <<'EOF' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(sys.argv[2].encode())
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
sys.stdout.write(out.decode(errors="replace"))
EOF
}

zk_stop() {
    [ -n "$ZK_PID" ] || return 0
    _ct_stop_pid zookeeper "$ZK_PID"
    ZK_PID=""
}

# ---- ClickHouse -----------------------------------------------------------

_ch_replica_xml() {
    printf '<replica><host>127.0.0.1</host><port>%s</port></replica>' "${CH_TCP[$1]}"
}

# The remote_servers section: the clusters the started servers can form.
# internal_replication on every shard, one replica or more: flamedb's
# tables are Replicated in a cluster, and 18.16 refuses ALTER ... ON
# CLUSTER on them otherwise (code 371), and a Distributed INSERT would
# write every replica itself instead of letting them replicate.
_ch_remote_servers() {
    case $CT_CLUSTER in
    two_shards | one_shard_two_replicas)
        printf '<two_shards><shard><internal_replication>true</internal_replication>%s</shard><shard><internal_replication>true</internal_replication>%s</shard></two_shards>\n' \
            "$(_ch_replica_xml 1)" "$(_ch_replica_xml 2)"
        printf '<one_shard_two_replicas><shard><internal_replication>true</internal_replication>%s%s</shard></one_shard_two_replicas>\n' \
            "$(_ch_replica_xml 1)" "$(_ch_replica_xml 2)"
        ;;
    two_shards_two_replicas)
        printf '<two_shards_two_replicas>'
        printf '<shard><internal_replication>true</internal_replication>%s%s</shard>' "$(_ch_replica_xml 1)" "$(_ch_replica_xml 2)"
        printf '<shard><internal_replication>true</internal_replication>%s%s</shard>' "$(_ch_replica_xml 3)" "$(_ch_replica_xml 4)"
        printf '</two_shards_two_replicas>\n'
        ;;
    esac
}

# _ch_write_config I: config.xml and users.xml of server I.
_ch_write_config() {
    local i=$1 d=${CH_DIR[$1]} zk=""
    mkdir -p "$d/data" "$d/tmp" "$d/log" "$d/user_files" "$d/format_schemas"
    if [ -n "$ZK_PORT" ]; then
        zk="<zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node><session_timeout_ms>6000</session_timeout_ms></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>"
    fi
    cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<!-- Generated by tests/cluster/lib.sh for server $i of topology ${CT_CLUSTER:-single}. -->
<yandex>
  <logger>
    <level>information</level>
    <log>$d/log/server.log</log>
    <errorlog>$d/log/error.log</errorlog>
    <size>20M</size>
    <count>1</count>
  </logger>
  <display_name>ch$i</display_name>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${CH_HTTP[$i]}</http_port>
  <tcp_port>${CH_TCP[$i]}</tcp_port>
  <interserver_http_port>${CH_ISP[$i]}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <max_connections>256</max_connections>
  <keep_alive_timeout>3</keep_alive_timeout>
  <max_concurrent_queries>64</max_concurrent_queries>
  <uncompressed_cache_size>16777216</uncompressed_cache_size>
  <mark_cache_size>16777216</mark_cache_size>
  <path>$d/data/</path>
  <tmp_path>$d/tmp/</tmp_path>
  <user_files_path>$d/user_files/</user_files_path>
  <format_schema_path>$d/format_schemas/</format_schema_path>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
  <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
  <remote_servers>
$(_ch_remote_servers)
  </remote_servers>
  <macros><shard>${CH_SHARD[$i]}</shard><replica>${CH_REPLICA[$i]}</replica></macros>
  $zk
</yandex>
EOF
    cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_memory_usage>2000000000</max_memory_usage>
      <load_balancing>in_order</load_balancing>
      <distributed_ddl_task_timeout>60</distributed_ddl_task_timeout>
      <!-- how often an idle TCP connection (another server's pooled one)
           checks for shutdown: 10 s by default, the time SIGTERM then takes -->
      <poll_interval>1</poll_interval>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas>
    <default>
      <interval>
        <duration>3600</duration>
        <queries>0</queries><errors>0</errors><result_rows>0</result_rows>
        <read_rows>0</read_rows><execution_time>0</execution_time>
      </interval>
    </default>
  </quotas>
</yandex>
EOF
}

# ch_start I: launches server I on its directory and waits for its /ping.
ch_start() {
    local i=$1 tries=1200 d=${CH_DIR[$1]}
    [ -z "${CH_PID[$i]:-}" ] || die "ch_start: server $i (pid ${CH_PID[$i]}) is already running"
    "$CH_SERVER" --config-file="$d/config.xml" >>"$d/log/stdout.log" 2>&1 &
    CH_PID[$i]=$!
    while [ $tries -gt 0 ]; do
        [ "$(curl -s -m 2 "${CH_URL[$i]}/ping" 2>/dev/null)" = "Ok." ] && return 0
        if ! _ct_alive "${CH_PID[$i]}"; then
            CH_PID[$i]=""
            die "clickhouse server $i exited before answering /ping; log: $(tail -5 "$d/log/error.log" "$d/log/stdout.log" 2>/dev/null | tr '\n' '|')"
        fi
        sleep 0.05
        tries=$((tries - 1))
    done
    die "clickhouse server $i did not answer ${CH_URL[$i]}/ping within the wait bound"
}

# ch_stop I: SIGTERM, wait for the pid to exit.
ch_stop() {
    local i=$1
    [ -n "${CH_PID[$i]:-}" ] || return 0
    _ct_stop_pid "clickhouse server $i" "${CH_PID[$i]}"
    CH_PID[$i]=""
}

# ch_kill I: SIGKILL, wait for the pid to exit.
ch_kill() {
    local i=$1
    [ -n "${CH_PID[$i]:-}" ] || return 0
    kill -KILL "${CH_PID[$i]}" 2>/dev/null
    _ct_wait_exit "${CH_PID[$i]}" 30
    { wait "${CH_PID[$i]}"; } 2>/dev/null
    CH_PID[$i]=""
}

# ch_cluster_start TOPOLOGY (see the top of this file).
ch_cluster_start() {
    local topo=$1 n i shards replicas s r
    case $topo in
    single) n=1 shards=1 replicas=1 ;;
    two_shards) n=2 shards=2 replicas=1 ;;
    one_shard_two_replicas) n=2 shards=1 replicas=2 ;;
    two_shards_two_replicas) n=4 shards=2 replicas=2 ;;
    *) die "ch_cluster_start: unknown topology $topo" ;;
    esac
    ct_tmp
    CT_CLUSTER=""
    [ "$topo" = single ] || CT_CLUSTER=$topo
    CH_N=$n
    local ports
    mapfile -t ports < <(ct_free_ports $((3 * n)))
    for ((i = 1; i <= n; i++)); do
        CH_HTTP[$i]=${ports[$((3 * (i - 1)))]}
        CH_TCP[$i]=${ports[$((3 * (i - 1) + 1))]}
        CH_ISP[$i]=${ports[$((3 * (i - 1) + 2))]}
        CH_URL[$i]="http://127.0.0.1:${CH_HTTP[$i]}"
        CH_DIR[$i]=$CT_TMP/ch$i
        s=$(( (i - 1) / replicas + 1 ))
        r=$(( (i - 1) % replicas + 1 ))
        CH_SHARD[$i]=$(printf '%02d' "$s")
        CH_REPLICA[$i]="ch${i}_r$r"
        CH_PID[$i]=""
    done
    [ "$topo" = single ] || zk_start
    for ((i = 1; i <= n; i++)); do _ch_write_config "$i"; done
    # Started one after the other: on 2 cores, parallel starts only compete.
    for ((i = 1; i <= n; i++)); do ch_start "$i"; done
}

ch_cluster_stop() {
    local i
    for ((i = 1; i <= CH_N; i++)); do ch_stop "$i"; done
    zk_stop
}

# chq I SQL [k=v ...]: posts SQL to server I with the settings as URL
# parameters; prints the body, answers 0 for HTTP 200.
chq() {
    local i=$1 sql=$2 code qs="" kv
    shift 2
    ct_tmp
    for kv in "$@"; do
        qs+="${qs:+&}${kv%%=*}=$(jq -rn --arg v "${kv#*=}" '$v|@uri')"
    done
    code=$(curl -s -m 120 -o "$CT_TMP/body" -w '%{http_code}' "${CH_URL[$i]}/?$qs" --data-binary "$sql")
    echo "$code" >"$CT_TMP/status"
    cat "$CT_TMP/body"
    [ "$code" = 200 ]
}

# ch_sync_replicas [DB]: every running server has fetched what its
# replication queue holds for each of flamedb's _local tables (SYSTEM SYNC
# REPLICA; DB defaults to flamedb).  Replication is asynchronous: a drained
# front end's rows are on the replica it inserted into, and the others
# fetch them later.  Replicated topologies only.
ch_sync_replicas() {
    local db=${1:-flamedb} i t
    for ((i = 1; i <= CH_N; i++)); do
        [ -n "${CH_PID[$i]:-}" ] || continue
        for t in $CT_TABLES; do
            assert_ok "server $i: SYSTEM SYNC REPLICA $db.${t}_local" "$i" "SYSTEM SYNC REPLICA $db.${t}_local" >/dev/null || return 1
        done
    done
}

# The tool built by `make cluster-test` (tests/cluster/chtool.c).
CHTOOL=${CHTOOL:-$REPO/build/tests/chtool}

# tool ARGS...: runs chtool; sets OUT (stdout), ERR (stderr) and RC.
tool() {
    ct_tmp
    "$CHTOOL" "$@" >"$CT_TMP/tool.out" 2>"$CT_TMP/tool.err"
    RC=$?
    OUT=$(cat "$CT_TMP/tool.out")
    ERR=$(cat "$CT_TMP/tool.err")
}

# tool_ok desc ARGS...: runs chtool and records a failure unless it exits 0.
tool_ok() {
    local desc=$1
    shift
    tool "$@"
    if [ "$RC" -ne 0 ]; then
        fail "$desc: chtool $1 exited $RC: $ERR $OUT"
        return 1
    fi
}

# The tables chschema.c creates (the data-holding ones), sorted.
CT_TABLES="labels meta profiles profiles_10m profiles_1h samples samples_10m samples_1h series stacks"
CT_VIEWS="profiles_10m_mv profiles_1h_mv samples_10m_mv samples_1h_mv"

# A test file may define ct_cleanup_extra: run first (its own processes).
ct_cleanup() {
    local rc=$? i
    if declare -F ct_cleanup_extra >/dev/null; then ct_cleanup_extra; fi
    for ((i = 1; i <= CH_N; i++)); do
        if [ -n "${CH_PID[$i]:-}" ]; then ch_stop "$i"; fi
    done
    if [ -s "$CT_FAILS" ] && [ -n "$CT_TMP" ]; then
        for ((i = 1; i <= CH_N; i++)); do
            [ -s "${CH_DIR[$i]}/log/error.log" ] || continue
            { echo "  -- server $i error log, last errors:"; grep '<Error>' "${CH_DIR[$i]}/log/error.log" | tail -3 | cut -c1-300 | sed 's/^/     /'; } >>"$CT_FAILS"
        done
    fi
    zk_stop
    if [ -n "$CT_TMP" ]; then
        if { [ -s "$CT_FAILS" ] && [ -n "${CT_KEEP:-}" ]; } || [ "${CT_KEEP:-}" = always ]; then
            echo "  (kept $CT_TMP)" >>"$CT_FAILS"
        else
            rm -rf "$CT_TMP"
        fi
    fi
    return $rc
}

# ---- flamedb front ends (cluster mode), for the test files that start them ----

# ct_wait_healthz URL PID LOG: until the flamedb at URL answers /healthz
# (bounded; dies with LOG's tail when it does not, or its PID exited).
ct_wait_healthz() {
    local url=$1 pid=$2 log=$3 tries=600
    while [ $tries -gt 0 ]; do
        curl -sf "$url/healthz" >/dev/null 2>&1 && return 0
        _ct_alive "$pid" || break
        sleep 0.05
        tries=$((tries - 1))
    done
    die "flamedb at $url did not start: $(tail -5 "$log")"
}

FLAMEDB=${FLAMEDB:-$REPO/bin/flamedb}
declare -a FE_PID=() FE_PORT=() FE_DIR=()

# fe_start I URLS [flags...]: front end I on a free port, data in
# $CT_TMP/fe-I; waits for /healthz.
fe_start() {
    local i=$1 urls=$2
    shift 2
    ct_tmp
    FE_DIR[$i]=$CT_TMP/fe-$i
    [ -n "${FE_PORT[$i]:-}" ] || FE_PORT[$i]=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:${FE_PORT[$i]}" --data "${FE_DIR[$i]}" --store "clickhouse=$urls" \
        --retention 0 --query-timeout 0 "$@" >>"$CT_TMP/fe-$i.log" 2>&1 &
    FE_PID[$i]=$!
    ct_wait_healthz "http://127.0.0.1:${FE_PORT[$i]}" "${FE_PID[$i]}" "$CT_TMP/fe-$i.log"
}

fe_stop() {
    [ -n "${FE_PID[$1]:-}" ] || return 0
    _ct_stop_pid "front end $1" "${FE_PID[$1]}"
    FE_PID[$1]=""
}

fe_kill() {
    kill -KILL "${FE_PID[$1]}" 2>/dev/null
    _ct_wait_exit "${FE_PID[$1]}" 30
    { wait "${FE_PID[$1]}"; } 2>/dev/null
    FE_PID[$1]=""
}

fe_url() { echo "http://127.0.0.1:${FE_PORT[$1]}"; }

# fe_drained I: waits (bounded) until front end I's spool is empty.
fe_drained() {
    local tries=600 h
    while [ $tries -gt 0 ]; do
        h=$(curl -sf "$(fe_url "$1")/healthz")
        [ "$(jq '.clickhouse.spool_bytes' <<<"$h")" = 0 ] && return 0
        sleep 0.1
        tries=$((tries - 1))
    done
    fail "front end $1's spool did not drain: $h"
    return 1
}

# push I PATH-AND-QUERY BODY-ARGS...: POSTs to front end I; prints the HTTP
# status, the answer in $CT_TMP/push.json.
push() {
    local i=$1 pq=$2
    shift 2
    curl -s -o "$CT_TMP/push.json" -w '%{http_code}' "$(fe_url "$i")$pq" "$@"
}

# fold_body N SEED: N folded lines with counts 1..N, stacks by the seed.
fold_body() {
    local n=$1 s=$2 k
    for ((k = 1; k <= n; k++)); do printf 'main;work_%s;leaf_%s_%s %s\n' "$s" "$s" "$k" "$k"; done
}

# ct_cleanup (lib.sh) calls this first: the front ends, and their logs' tails
# when the test failed.
ct_cleanup_extra() {
    local i
    sn_stop
    for i in "${!FE_PID[@]}"; do [ -n "${FE_PID[$i]}" ] && fe_stop "$i"; done
    if [ -s "$CT_FAILS" ] && [ -n "$CT_TMP" ]; then
        for i in "${!FE_DIR[@]}"; do
            [ -f "$CT_TMP/fe-$i.log" ] && { echo "  -- front end $i log:"; tail -5 "$CT_TMP/fe-$i.log" | cut -c1-300 | sed 's/^/     /'; } >>"$CT_FAILS"
        done
    fi
    return 0
}


# ---- a single node beside the cluster, and the equivalence workload ----

EQUIV="$REPO/tests/cluster/equiv.py"
SN_PID=""
# A day boundary well inside the data's retention: three days ago (UTC);
# equiv.py's workload lies in [EQ_BASE - 36 h, EQ_BASE + 36 h).
EQ_BASE=$(( ($(date +%s) / 86400 - 3) * 86400 ))

# sn_start [flags...]: a single-node flamedb, data in $CT_TMP/sn (the same
# port and data when started again); waits for /healthz.  It and the front
# ends run without --query-timeout: the tests compare answers, and a busy
# CI machine must not turn a slow read into a 503 (what a read costs in
# statements is checked through /metrics instead).
sn_start() {
    [ -n "${SN_PORT:-}" ] || SN_PORT=$(ct_free_ports 1)
    "$FLAMEDB" serve --listen "127.0.0.1:$SN_PORT" --data "$CT_TMP/sn" --retention 0 --query-timeout 0 "$@" \
        >>"$CT_TMP/sn.log" 2>&1 &
    SN_PID=$!
    ct_wait_healthz "http://127.0.0.1:$SN_PORT" "$SN_PID" "$CT_TMP/sn.log"
}

sn_url() { echo "http://127.0.0.1:$SN_PORT"; }

sn_stop() {
    [ -n "$SN_PID" ] || return 0
    _ct_stop_pid "single node" "$SN_PID"
    SN_PID=""
}

# equiv_load SEED FRONT-URLS: the workload into the single node and, in
# another order and round robin, into the front ends (both at once: pushing
# is mostly waiting for answers); waits until every front end's spool
# drained.
equiv_load() {
    local seed=$1 fronts=$2 i sn fe
    python3 "$EQUIV" workload --seed "$seed" --base "$EQ_BASE" --urls "$(sn_url)" >"$CT_TMP/load-sn.out" 2>&1 &
    sn=$!
    python3 "$EQUIV" workload --seed "$seed" --base "$EQ_BASE" --shuffle 7 --urls "$fronts" >"$CT_TMP/load-fe.out" 2>&1 &
    fe=$!
    wait "$sn" || { fail "workload into the single node: $(cat "$CT_TMP/load-sn.out")"; wait "$fe"; return 1; }
    wait "$fe" || { fail "workload into the front ends: $(cat "$CT_TMP/load-fe.out")"; return 1; }
    for i in "${!FE_PID[@]}"; do [ -n "${FE_PID[$i]}" ] && { fe_drained "$i" || return 1; }; done
    return 0
}

# equiv_check LABEL N SEED FRONT-URL: N random queries, the single node
# against one front end; every difference is a failure.
equiv_check() {
    local label=$1 n=$2 seed=$3 url=$4 out
    if ! out=$(python3 "$EQUIV" compare --seed "$seed" --base "$EQ_BASE" --n "$n" "$(sn_url)" "$url" 2>&1); then
        fail "$label: $(tail -c 3000 <<<"$out")"
        return 1
    fi
    assert_contains "$label" "$(tail -1 <<<"$out")" "equiv: $n queries, 0 differ"
}
