#!/usr/bin/env bash
# bench_agent_fleet.sh FLAMEDB AGENT — fleet control (issue 13, point 5):
# the sampled fraction over time with 50 agents.  Figures only (never
# pass/fail on a number; non-zero exit only when something could not run).
#
#   bash bench/bench_agent_fleet.sh /abs/bin/flamedb /abs/bin/flamedb-agent
#
# BENCH_FLEET_AGENTS (default 50) agents in --simulate mode (no perf_event,
# made-up samples at 50 Hz, each its own node) against a server with
# --fleet-duty BENCH_FLEET_DUTY (default 0.1) and --fleet-period
# BENCH_FLEET_PERIOD seconds (default 5), for BENCH_FLEET_PERIODS periods
# (default 14).  Printed: per period, the nodes that stored samples and
# their fraction of the fleet (from /api/v1/timeline grouped by node, one
# step a period); the periods until every agent had sampled; the most
# periods any agent sampled in; and the agents' own CPU and RSS as their
# heartbeats report them (simulated agents: the cost of the loop, the
# heartbeats and the pushes, not of perf_event).
set -u
FLAMEDB=${1:?usage: $0 FLAMEDB AGENT}
AGENT=${2:?usage: $0 FLAMEDB AGENT}
N=${BENCH_FLEET_AGENTS:-50}
DUTY=${BENCH_FLEET_DUTY:-0.1}
P=${BENCH_FLEET_PERIOD:-5}
K=${BENCH_FLEET_PERIODS:-14}
command -v jq >/dev/null || { echo "bench_agent_fleet: jq is required" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-bench-fleet.XXXXXX")
SPID=""
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    [ -n "$SPID" ] && kill -TERM "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

"$FLAMEDB" serve --listen 127.0.0.1:0 --data "$TMP/data" --fleet-duty "$DUTY" --fleet-period "${P}s" >"$TMP/server.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do
    line=$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
    [ -n "$line" ] && break
    sleep 0.1
done
[ -n "${line:-}" ] || { echo "bench_agent_fleet: the server did not start: $(tail -3 "$TMP/server.log")" >&2; exit 1; }
BASE="http://${line#listening on http://}"

dur=$((P * K))
t0=$(date +%s)
for i in $(seq -w 1 "$N"); do
    "$AGENT" --server "$BASE" --simulate --service sim --labels "node=sim-$i" --interval 1 --duration "$dur" \
        --frequency 50 >"$TMP/agent-$i.log" 2>&1 &
    PIDS+=($!)
done
sleep $((dur - 2))
agents=$(curl -sS "$BASE/api/v1/agents")
for p in "${PIDS[@]}"; do wait "$p"; done
PIDS=()
t1=$(date +%s)
from=$((t0 / P * P)); until=$(((t1 / P + 1) * P))
tl=$(curl -sS -G "$BASE/api/v1/timeline" --data-urlencode 'query={service="sim"}' \
    -d from="$from" -d until="$until" -d step="$P" -d group_by=node)

echo "fleet control: $N simulated agents, --fleet-duty $DUTY (plan: $(awk -v n="$N" -v d="$DUTY" 'BEGIN { m = n * d; m = (m == int(m)) ? m : int(m) + 1; print m }') a period), ${P} s periods, ${dur} s"
echo "period  nodes sampling  fraction"
jq -r --argjson n "$N" '[.groups[] | [.points[] | .[1] > 0]] | transpose | to_entries[]
    | ([.value[] | select(.)] | length) as $c | "\(.key)\t\($c)\t\($c / $n * 100 | round / 100)"' <<<"$tl" |
    awk -F'\t' '{ printf "%6s  %14s  %8s\n", $1, $2, $3 }'
echo "nodes that sampled: $(jq '[.groups[] | select(any(.points[]; .[1] > 0))] | length' <<<"$tl") of $N"
echo "periods until every node had sampled: $(jq '[.groups[] | [.points | to_entries[] | select(.value[1] > 0) | .key] | .[0]] | max + 1' <<<"$tl")"
echo "most periods one node sampled in: $(jq '[.groups[] | [.points[] | select(.[1] > 0)] | length] | max' <<<"$tl")"
echo "agents' own CPU (% of a core over the run) and RSS, from their heartbeats:"
jq -r --argjson d "$dur" '[.agents[] | {c: (.cpu_seconds / $d * 100), r: (.rss_bytes / 1048576)}]
    | "  CPU mean \((map(.c) | add / length) * 100 | round / 100) %, max \((map(.c) | max) * 100 | round / 100) %;"
      + " RSS mean \((map(.r) | add / length) * 10 | round / 10) MiB, max \((map(.r) | max) * 10 | round / 10) MiB"' <<<"$agents"
