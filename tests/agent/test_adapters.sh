# shellcheck shell=bash
# test_adapters.sh — interpreted runtimes: a Python process is profiled by
# py-spy when it is on PATH (here a stand-in script that speaks py-spy's
# command line and writes collapsed stacks, as the real one does: py-spy is
# not in Debian), pushed with label spy=py-spy; and JIT code of a Node
# process run with --perf-basic-prof is named through /tmp/perf-PID.map.

test_python_adapter_runs_py_spy() {
    command -v python3 >/dev/null || die "python3 is not installed (make deps installs it)"
    local bin="$AT_TMP/bin" calls="$AT_TMP/py-spy.calls"
    mkdir -p "$bin"
    cat >"$bin/py-spy" <<STANDIN
#!/usr/bin/env bash
# A stand-in for py-spy: records its arguments, waits the duration, writes
# collapsed stacks to --output like 'py-spy record --format raw'.
echo "\$*" >>"$calls"
out= dur=1
while [ \$# -gt 0 ]; do
  case "\$1" in --output) out=\$2; shift;; --duration) dur=\$2; shift;; esac
  shift
done
sleep "\$dur"
printf '<module> (app.py:1);main (app.py:9);hot_python_function (app.py:4) 40\n<module> (app.py:1);main (app.py:9);cold_python_function (app.py:6) 10\n' >"\$out"
STANDIN
    chmod +x "$bin/py-spy"
    start_server
    start_workload python3 -c 'import time
while True: time.sleep(0.05)'
    PATH="$bin:$PATH" start_agent --pid "$WPID" --service pyapp --interval 2 --duration 4 --frequency 99
    wait_agent 40
    require_agent_ok
    assert_contains "py-spy was run for the python process" "$(cat "$calls" 2>/dev/null)" "record --pid $WPID"
    local spy
    spy=$(curl -sS -G "$BASE/api/v1/series" --data-urlencode 'query={service="pyapp"}' -d from=now-1h |
        jq -r '[.series[].labels.spy] | unique | join(",")')
    assert_eq "pushed with label spy" "py-spy" "$spy"
    local f
    f=$(folded pyapp)
    assert_contains "the stand-in's stacks arrive" "$f" "main (app.py:9);hot_python_function (app.py:4)"
    # 40 of every 50 samples: the shares survive the trip.
    local share
    share=$(curl -sS -G "$BASE/api/v1/top" --data-urlencode 'query={service="pyapp"}' -d from=now-1h |
        jq -r '.functions[] | select(.name == "hot_python_function (app.py:4)") | .self_share * 100')
    assert_near "hot_python_function share" 80 "$share" 0.01
}

test_node_jit_frames_named_by_perf_map() {
    command -v node >/dev/null || die "node is not installed (make deps installs it)"
    start_server
    (cd "$AT_TMP" && exec node --perf-basic-prof -e '
function hotLoop(n) { let x = 0; for (let i = 0; i < n; i++) x = (x + i * 7) % 1000003; return x; }
let s = 0; for (;;) s += hotLoop(2e6);') >"$AT_TMP/node.out" 2>&1 &
    WPID=$!
    sleep 1 # let V8 compile hotLoop and write its perf map
    kill -0 "$WPID" 2>/dev/null || die "node did not start: $(cat "$AT_TMP/node.out")"
    start_agent --pid "$WPID" --service jsapp --interval 2 --duration 4 --frequency 99 --no-kernel
    wait_agent 40
    require_agent_ok
    kill "$WPID" 2>/dev/null
    local f
    f=$(folded jsapp)
    assert_contains "JIT frame from /tmp/perf-$WPID.map" "$f" "hotLoop"
    # Most samples are in hotLoop itself: its self share leads.
    local lead
    lead=$(curl -sS -G "$BASE/api/v1/top" --data-urlencode 'query={service="jsapp"}' -d from=now-1h -d limit=1 |
        jq -r '.functions[0].name')
    assert_contains "hottest function is the JIT'd hotLoop" "$lead" "hotLoop"
}
