# shellcheck shell=bash
# test_perf.sh — where perf_event is not permitted, the agent says so (the
# reason and how to fix it) and exits non-zero.  Provoked by running it as
# an unprivileged user with --all (per-CPU events need perf_event_paranoid
# <= 0 or CAP_PERFMON).

test_not_permitted_says_why() {
    local p out rc
    p=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
    command -v setpriv >/dev/null || die "setpriv (util-linux) is needed to run the agent unprivileged"
    [ "$(id -u)" = 0 ] || die "this test drops to user nobody and so must start as root ($(perf_context))"
    if [ "$p" -le 0 ]; then
        echo "perf_event_paranoid=$p: every user may sample every CPU, the refusal cannot be provoked" >&2
        return 0
    fi
    out=$(cd / && timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$AGENT" --all --duration 2 --output /dev/null 2>&1)
    rc=$?
    [ $rc -ne 0 ] || die "agent as nobody with --all (perf_event_paranoid=$p) exited 0; output: $out"
    [ $rc -ne 124 ] || die "agent as nobody with --all did not exit within 20 s"
    assert_contains "agent's refusal names perf_event_paranoid" "$out" "perf_event_paranoid"
}
