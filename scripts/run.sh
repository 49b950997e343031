#!/usr/bin/env bash
# `make run`: the server on http://localhost:4040 with data in ./data, and,
# when the agent is built, a local agent profiling this machine into it.
#
#   bash scripts/run.sh SERVER_BINARY [AGENT_BINARY]
#
# Environment (unset: what `make run` always did):
#   FLAMEDB_LISTEN       where the server listens (127.0.0.1:4040; a port,
#                        not 0: the agent is pointed at it)
#   FLAMEDB_DATA         the server's data directory (./data)
#   FLAMEDB_AGENT_ARGS   more flags for the agent (e.g. "--interval 5")
#   FLAMEDB_START_WAIT   seconds to wait for the server's /healthz (30)
#
# The order of things (issue 15):
#   - the server starts; the agent only once the server answers /healthz.
#     If the address is taken, the server exits, or it does not answer in
#     time, the script says why, stops it, starts no agent and exits 1;
#   - Ctrl-C (SIGINT) or SIGTERM to this script: the agent is stopped first
#     (SIGINT: it pushes its last window while the server still takes it),
#     then the server; exit 0;
#   - the server exits on its own: the agent is stopped (it spools or drops
#     its last window, logged), and the script exits with the server's
#     status;
#   - the agent exits on its own (perf_event not permitted, ...): it said
#     why; the server keeps running.
# Both run as background jobs with job control on, each in its own process
# group, so that a Ctrl-C in the terminal reaches this script only and the
# two are stopped in that order rather than all at once.
set -u
server=$1 agent=${2:-}
listen=${FLAMEDB_LISTEN:-127.0.0.1:4040}
data=${FLAMEDB_DATA:-./data}
start_wait=${FLAMEDB_START_WAIT:-30}
url=http://$listen

say() { echo "flamedb run: $*" >&2; }

# Something already answers on the address: the server could not bind it,
# and /healthz below would be answered by that other process.
curl -s -o /dev/null --max-time 2 "$url/" 2>/dev/null
if [ $? -ne 7 ]; then
    say "something already listens on $listen (another flamedb?); stop it or set FLAMEDB_LISTEN. Not starting."
    exit 1
fi

set -m
"$server" serve --listen "$listen" --data "$data" &
spid=$!
apid=

stop_agent() {
    [ -n "$apid" ] || return 0
    kill -INT "$apid" 2>/dev/null      # the agent flushes its last window
    wait "$apid" 2>/dev/null
    apid=
}
stop_server() {
    kill -TERM "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
}
on_stop() {
    trap '' INT TERM
    stop_agent
    stop_server
    exit 0
}
trap on_stop INT TERM

# the server answers, or says why not
deadline=$((SECONDS + start_wait))
until curl -fs -o /dev/null --max-time 2 "$url/healthz" 2>/dev/null; do
    if ! kill -0 "$spid" 2>/dev/null; then
        wait "$spid" 2>/dev/null
        say "the server exited (status $?) before answering $url/healthz; its messages are above. The agent is not started."
        exit 1
    fi
    if [ $SECONDS -ge "$deadline" ]; then
        say "the server did not answer $url/healthz within $start_wait s (FLAMEDB_START_WAIT); stopping it. The agent is not started."
        stop_server
        exit 1
    fi
    sleep 0.1
done

if [ -n "$agent" ] && [ -x "$agent" ]; then
    # shellcheck disable=SC2086  # FLAMEDB_AGENT_ARGS is a list of flags
    "$agent" --server "$url" --all ${FLAMEDB_AGENT_ARGS:-} &
    apid=$!
fi
echo "flamedb: $url (Ctrl-C stops)"

while :; do
    wait -n                      # the server or the agent exited (or a signal: on_stop)
    rc=$?
    if ! kill -0 "$spid" 2>/dev/null; then
        say "the server exited (status $rc)${apid:+; stopping the agent}"
        stop_agent
        exit "$rc"
    fi
    if [ -n "$apid" ] && ! kill -0 "$apid" 2>/dev/null; then
        apid=
        say "the agent exited (status $rc, its messages are above); the server keeps running"
    fi
done
