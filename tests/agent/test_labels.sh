# shellcheck shell=bash
# test_labels.sh — the labels the agent fills without being told: service
# (--service, else the executable's name), instance (HOSTNAME/PID for the
# processes named with --pid, HOSTNAME for the children it follows), node
# (hostname), build (first 12 hex digits of the executable's GNU build-id),
# plus --labels; and the rate.  Bounded (issue 13): children of one program
# make one series, processes nothing named one "unknown" series.
# (container_id and pod_uid: tests/agent/test_agent_labels.c, from
# synthetic /proc/PID/cgroup texts.)

test_default_labels() {
    local bin=$AT_BUILD/spin_pie bid host labels
    bid=$(readelf -n "$bin" | awk '/Build ID:/ { print substr($3, 1, 12) }')
    host=$(hostname)
    start_server
    start_workload "$bin" 10
    start_agent --pid "$WPID" --service lbl --labels env=test,team=perf --interval 2 \
        --duration 2 --frequency 99 --unwind fp --no-kernel
    wait_agent 30
    require_agent_ok
    labels=$(curl -sS -G "$BASE/api/v1/series" --data-urlencode 'query={service="lbl"}' -d from=now-1h |
        jq -c '[.series[].labels]')
    assert_eq "one series" 1 "$(jq length <<<"$labels")"
    assert_eq "instance" "$host/$WPID" "$(jq -r '.[0].instance' <<<"$labels")"
    assert_eq "node" "$host" "$(jq -r '.[0].node' <<<"$labels")"
    assert_eq "build" "$bid" "$(jq -r '.[0].build' <<<"$labels")"
    assert_eq "--labels env" test "$(jq -r '.[0].env' <<<"$labels")"
    assert_eq "--labels team" perf "$(jq -r '.[0].team' <<<"$labels")"
    # pushed with rate=99: the answer is in nanoseconds
    assert_eq "unit (rate sent)" nanoseconds \
        "$(curl -sS -G "$BASE/api/v1/query" --data-urlencode 'query={service="lbl"}' -d from=now-1h -d max_nodes=1 | jq -r .unit)"
}

# build_forker: $AT_TMP/forker MODE SECONDS (fork without exec, so the
# children are the same program):
#   long   after 1.5 s (the agent attached by then: inherit follows only
#          children forked later), 3 children burn SECONDS beside the parent
#          (and die with it)
#   short  after 1 s, children that burn 25 ms and exit, one after the
#          other, for SECONDS; the parent only waits for them
build_forker() {
    cc -O1 -o "$AT_TMP/forker" -x c - <<'CEOF' || die "could not build the forker"
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void burn(double s) { double e = now() + s; volatile unsigned long a = 0; while (now() < e) for (int i = 0; i < 10000; i++) a += i; }
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    double secs = atof(argv[2]);
    if (argv[1][0] == 'l') {
        usleep(1500000);
        for (int i = 0; i < 3; i++) if (fork() == 0) { prctl(PR_SET_PDEATHSIG, SIGKILL); burn(secs); _exit(0); }
        burn(secs);
        while (wait(NULL) > 0) {}
    } else {
        usleep(1000000);
        double e = now() + secs;
        while (now() < e) { pid_t p = fork(); if (p == 0) { burn(0.025); _exit(0); } waitpid(p, NULL, 0); usleep(5000); }
    }
    return 0;
}
CEOF
}

# series_json QUERY: the labels and profile counts of the matching series.
series_json() {
    curl -sS -G "$BASE/api/v1/series" --data-urlencode "query=$1" -d from=now-1h |
        jq -c '[.series[] | {l: .labels, profiles, samples}]'
}

# The service is the executable's name (issue 13), not the command name:
# run through a symlink, the command is the link's name.
test_service_is_the_executable() {
    local host s
    host=$(hostname)
    ln -s "$AT_BUILD/spin_pie" "$AT_TMP/renamed_link"
    start_server
    start_workload "$AT_TMP/renamed_link" 10
    [ "$(cat "/proc/$WPID/comm")" = renamed_link ] || die "fixture: comm is $(cat "/proc/$WPID/comm")"
    start_agent --pid "$WPID" --interval 2 --duration 2 --frequency 99 --unwind fp --no-kernel
    wait_agent 30
    require_agent_ok
    s=$(series_json "{node=\"$host\"}")
    assert_eq "one series" 1 "$(jq length <<<"$s")"
    assert_eq "service: the executable's name" spin_pie "$(jq -r '.[0].l.service' <<<"$s")"
    assert_eq "instance: --pid's process" "$host/$WPID" "$(jq -r '.[0].l.instance' <<<"$s")"
}

# Children that --pid's inherit follows are no series each: they share
# instance=HOSTNAME, and their windows are merged into one profile.
test_children_share_one_series() {
    local host s intervals
    host=$(hostname)
    build_forker
    start_server
    start_workload "$AT_TMP/forker" long 10
    start_agent --pid "$WPID" --interval 2 --duration 5 --frequency 99 --unwind fp --no-kernel --fsp 1 \
        --metrics "$AT_TMP/agent.prom"
    wait_agent 30
    require_agent_ok
    s=$(series_json "{node=\"$host\"}")
    intervals=$(awk '$1 == "flamedb_agent_intervals_total" { print $2 }' "$AT_TMP/agent.prom")
    assert_eq "two series: the parent and its children (log: $(agent_log_tail))" 2 "$(jq length <<<"$s")"
    assert_eq "services" forker "$(jq -r '[.[].l.service] | unique | join(",")' <<<"$s")"
    assert_eq "the parent's instance" 1 "$(jq --arg i "$host/$WPID" '[.[] | select(.l.instance == $i)] | length' <<<"$s")"
    assert_eq "the children's instance" 1 "$(jq --arg i "$host" '[.[] | select(.l.instance == $i)] | length' <<<"$s")"
    # one profile per window for the 3 children together (3 a window
    # unmerged), as for the parent
    local kids
    kids=$(jq --arg i "$host" '[.[] | select(.l.instance == $i) | .profiles] | add' <<<"$s")
    assert_eq "children's profiles ($kids): at most one per interval ($intervals), merged" 1 \
        "$( [ "${kids:-99}" -le "${intervals:-0}" ] && echo 1 || echo 0)"
    assert_ge "children's profiles: in the last 2 intervals at least" 2 "$kids"
    assert_ge "the children's samples (3 of them beside the parent)" \
        "$(jq --arg i "$host/$WPID" '[.[] | select(.l.instance == $i) | .samples] | add' <<<"$s")" \
        "$(jq --arg i "$host" '[.[] | select(.l.instance == $i) | .samples] | add' <<<"$s")"
}

# Processes that exit before the agent could name them (a forked child of
# 25 ms has no /proc/PID by the time its samples are read, and no exec
# record): one service "unknown" for the node, never "pid-N".
test_unnamed_processes_are_one_unknown_series() {
    local host s unnamed
    host=$(hostname)
    build_forker
    start_server
    start_workload "$AT_TMP/forker" short 3
    start_agent --pid "$WPID" --interval 2 --duration 5 --frequency 99 --unwind fp --no-kernel --fsp 1 \
        --metrics "$AT_TMP/agent.prom"
    wait_agent 30
    require_agent_ok
    s=$(series_json "{node=\"$host\"}")
    unnamed=$(awk '$1 == "flamedb_agent_samples_unnamed_total" { print $2 }' "$AT_TMP/agent.prom")
    assert_ge "samples of unnamed processes (log: $(agent_log_tail))" 1 "$unnamed"
    assert_eq "one unknown series" 1 "$(jq '[.[] | select(.l.service == "unknown")] | length' <<<"$s")"
    assert_eq "its instance: the node" "$host" "$(jq -r '.[] | select(.l.service == "unknown") | .l.instance' <<<"$s")"
    assert_eq "its samples: the unnamed ones" "$unnamed" \
        "$(jq '[.[] | select(.l.service == "unknown") | .samples] | add' <<<"$s")"
    assert_eq "no other services" "" \
        "$(jq -r '[.[].l.service | select(. != "unknown" and . != "forker")] | join(",")' <<<"$s")"
    assert_eq "at most 3 series (parent, named children, unknown)" 1 \
        "$(jq 'length <= 3 | if . then 1 else 0 end' <<<"$s")"
}
