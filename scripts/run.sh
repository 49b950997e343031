#!/usr/bin/env bash
# `make run`: the server on http://localhost:4040 with data in ./data, and,
# when the agent is built, a local agent profiling this machine into it.
# Ctrl-C (or SIGTERM) stops both.
set -u
server=$1 agent=${2:-}
"$server" serve --listen 127.0.0.1:4040 --data ./data &
spid=$!
apid=
stop() { [ -n "$apid" ] && kill "$apid" 2>/dev/null; kill "$spid" 2>/dev/null; wait; exit 0; }
trap stop INT TERM
for _ in $(seq 1 100); do curl -fs http://127.0.0.1:4040/healthz >/dev/null 2>&1 && break; sleep 0.1; done
if [ -n "$agent" ] && [ -x "$agent" ]; then
  "$agent" --server http://127.0.0.1:4040 --all &
  apid=$!
fi
echo "flamedb: http://localhost:4040 (Ctrl-C stops)"
wait "$spid"
