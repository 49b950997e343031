# shellcheck shell=bash
# test_offcpu_alloc.sh — off-CPU and allocation profiles (issue 13), through
# the server: a program whose worker threads block in nanosleep, read on a
# pipe and a contended mutex (fixtures/offcpu.c, which measures the time it
# spends in each), and one that allocates at three sites with known counts
# and sizes (fixtures/alloc.c).  Shares within ±5 pp of the programs' own
# measurements, the units the server answers in, and the on-CPU profile
# beside them.  Where the kernel lacks the sched:sched_switch tracepoint or
# the uprobe PMU the test says SKIP with the agent's reason.

OA_TOL=5

# site_shares FOLDED "a b c": each site's percentage of the value of the
# stacks that hold one of the sites (folded text as the server exports it:
# names only), then the total value: "A B C TOTAL".
site_shares() {
    awk -v list="$2" '
        BEGIN { ns = split(list, S, " "); for (i = 1; i <= ns; i++) want[S[i]] = 1 }
        NF { n = split($0, a, " "); v = a[n]; s = substr($0, 1, length($0) - length(v) - 1)
             k = split(s, f, ";"); for (i = 1; i <= k; i++) if (f[i] in want) { t[f[i]] += v; break } }
        END { tot = 0; for (x in t) tot += t[x]
              if (tot == 0) { print "none"; exit }
              for (i = 1; i <= ns; i++) printf "%.2f ", t[S[i]] * 100 / tot; printf "%.0f\n", tot }' <<<"$1"
}

# typed_query SERVICE TYPE [FORMAT]: /api/v1/query of one profile type.
typed_query() {
    curl -sS -G "$BASE/api/v1/query" --data-urlencode "query={service=\"$1\",type=\"$2\"}" \
        -d from=now-1h -d max_nodes=0 ${3:+-d format=$3}
}

# The agent said it could not have the kind of profile: SKIP when the
# kernel lacks it, FAIL for anything else.
check_available() {
    local flag=$1 line
    line=$(grep -o -- "$flag: no [a-zA-Z-]* profiles: .*" "$ALOG" | head -1)
    [ -z "$line" ] && return 0
    case $line in
        *"not found"*|*"no uprobe PMU"*|*"not mounted"*) skip "$line" ;;
        *) die "the agent could not make the profiles: $line" ;;
    esac
}

# offcpu_run SERVICE UNWIND: the workload (2 workers, 9 s) under the agent
# for 6 s; checks the shares of the three blocking sites against the
# workload's measurement, the unit, and the time the agent counted.
offcpu_run() {
    local svc=$1 unwind=$2 truth want got sh a b c tot q
    start_server
    "$AT_BUILD/offcpu" 9 2 --truth >"$AT_TMP/truth.json" 2>&1 &
    WPID=$!
    sleep 0.3
    start_agent --pid "$WPID" --service "$svc" --offcpu --interval 2 --duration 6 --unwind "$unwind"
    wait_agent 40
    require_agent_ok
    check_available --offcpu
    wait "$WPID"; WPID=""
    truth=$(cat "$AT_TMP/truth.json")
    [ -n "$truth" ] || die "the workload printed no truth"
    sh=$(site_shares "$(typed_query "$svc" offcpu folded)" "site_sleep site_read site_lock")
    [ "$sh" != none ] || die "$svc: no off-CPU stacks through site_sleep/site_read/site_lock: $(typed_query "$svc" offcpu folded | head -5); log: $(agent_log_tail)"
    read -r a b c tot <<<"$sh"
    for k in sleep:$a read:$b lock:$c; do
        want=$(jq -r ".share.site_${k%%:*} * 100" <<<"$truth")
        assert_near "$svc: share of site_${k%%:*} (%) vs the workload's own time" "$want" "${k#*:}" "$OA_TOL"
    done
    # the weights are times: what the agent counted in its 6 s, per second,
    # against the workload's blocked time per second over its 9 s (±15 %)
    got=$(awk -v t="$tot" 'BEGIN { print t / 6 }')
    want=$(jq -r '(.ns.site_sleep + .ns.site_read + .ns.site_lock) / 9' <<<"$truth")
    assert_near "$svc: blocked ns per second in the sites" "$want" "$got" "$(awk -v w="$want" 'BEGIN { print w * 0.15 }')"
    q=$(typed_query "$svc" offcpu)
    assert_eq "$svc: unit of the offcpu type" nanoseconds "$(jq -r .unit <<<"$q")"
    assert_eq "$svc: type answered" offcpu "$(jq -r .type <<<"$q")"
    # the on-CPU profile goes on beside it, in its own type
    assert_contains "$svc: cpu profile beside it" "$(typed_query "$svc" cpu folded)" "spin"
    assert_contains "$svc: types of the service" \
        "$(curl -sS -G "$BASE/api/v1/label/type/values" --data-urlencode "query={service=\"$svc\"}" -d from=now-1h)" offcpu
}

# Frame pointers: the splice of libdw's top frames with the kernel's chain
# is what puts site_read between worker_main and read.
test_offcpu_shares_fp() {
    offcpu_run at-offcpu-fp fp
    local f
    f=$(typed_query at-offcpu-fp offcpu folded)
    assert_contains "the wrapper's caller is in the stack" "$f" "worker_main;site_read;read"
    assert_contains "kernel frames where it blocks" "$f" "schedule_[k]"
}

test_offcpu_shares_auto() {
    offcpu_run at-offcpu-auto auto
}

# A thread blocked across pushes (site_long: from 1 s after the workload's
# start to 1 s before its end) is in every 2 s profile with at most its
# window, and its time adds up over the profiles: the period cut, nothing
# lost or counted twice.  From --output, profile by profile.
test_offcpu_blocked_thread_split_by_period() {
    local per n tot max
    "$AT_BUILD/offcpu" 10 1 >/dev/null 2>&1 &
    WPID=$!
    sleep 0.3
    "$AGENT" --pid "$WPID" --offcpu --interval 2 --duration 6 --unwind fp --no-kernel \
        --output "$AT_TMP/out.txt" >"$AT_TMP/agent.log" 2>&1 || die "agent failed: $(tail -3 "$AT_TMP/agent.log")"
    ALOG=$AT_TMP/agent.log
    check_available --offcpu
    # per offcpu profile: the value of the stacks through site_long
    per=$(awk '/^# / { on = /type=offcpu/; if (on) k++; next }
               on && NF { n = split($0, a, " "); if ($0 ~ /site_long/) v[k] += a[n] }
               END { for (i = 1; i <= k; i++) if (v[i]) print v[i] }' "$AT_TMP/out.txt")
    n=$(wc -l <<<"$per")
    tot=$(awk '{ s += $1 } END { print s + 0 }' <<<"$per")
    max=$(awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { print m }' <<<"$per")
    assert_ge "offcpu profiles holding site_long (6 s in 2 s windows)" 3 "$n"
    assert_near "site_long's largest share of one 2 s profile (ns)" 2000000000 "$max" 250000000
    # agent from ~0.3 s to ~6.4 s, site_long from 1 s on: about 5.4 s
    assert_near "site_long's time over all profiles (ns)" 5400000000 "$tot" 600000000
}

# alloc_run SERVICE IV DUR AGENT-ARGS...: alloc.c (1 worker thread) under
# the agent for DUR s, IV s intervals; the shares of both types against its
# counts and bytes, the units, the nested realloc(NULL) calls, the callers.
alloc_run() {
    local svc=$1 iv=$2 dur=$3 truth sh a b c tot q nested k want t
    shift 3
    start_server
    "$AT_BUILD/alloc" $((dur + 3)) 1 --truth >"$AT_TMP/truth.json" 2>&1 &
    WPID=$!
    sleep 0.3
    start_agent --pid "$WPID" --service "$svc" --interval "$iv" --duration "$dur" --no-kernel --verbose "$@"
    wait_agent 40
    require_agent_ok
    check_available --alloc
    wait "$WPID"; WPID=""
    truth=$(cat "$AT_TMP/truth.json")
    for t in alloc_objects:objects_share alloc_space:space_share; do
        sh=$(site_shares "$(typed_query "$svc" "${t%%:*}" folded)" "site_a site_b site_c")
        [ "$sh" != none ] || die "no ${t%%:*} stacks through site_a/b/c; log: $(agent_log_tail)"
        read -r a b c tot <<<"$sh"
        for k in a:$a b:$b c:$c; do
            want=$(jq -r ".${t#*:}.site_${k%%:*} * 100" <<<"$truth")
            assert_near "$svc: ${t%%:*} share of site_${k%%:*} (%) [$(grep -o 'alloc samples=[0-9]*' "$ALOG" | tail -1)]" "$want" "${k#*:}" "$OA_TOL"
        done
    done
    q=$(typed_query "$svc" alloc_objects)
    assert_eq "unit of alloc_objects" count "$(jq -r .unit <<<"$q")"
    q=$(typed_query "$svc" alloc_space)
    assert_eq "unit of alloc_space" bytes "$(jq -r .unit <<<"$q")"
    # site_c's realloc(NULL, n) enters glibc's malloc: counted once
    nested=$(grep -o 'alloc samples=[0-9]* nested=[0-9]*' "$ALOG" | tail -1 | sed 's/.*nested=//')
    assert_ge "realloc(NULL) samples left to malloc's probe (nested)" 1 "$nested"
    # the allocators' callers, each at its site (the return address at
    # the allocator's entry, which the kernel's chain misses)
    k=$(typed_query "$svc" alloc_objects folded)
    assert_contains "site_a's malloc" "$k" "site_a;malloc "
    assert_contains "site_b's calloc" "$k" "site_b;"
}

# Duty cycling: every Nth call (the default), the probes in 30 % of each
# 5 s interval (1.5 s windows; the default 3 % would leave 0.15 s windows,
# too few samples on a loaded 2-core runner for ±5 pp), the estimates
# scaled up.
test_alloc_shares() {
    local on off
    alloc_run at-alloc 5 11 --alloc --alloc-duty 0.3
    on=$(grep -c 'allocation probes on for' "$ALOG")
    off=$(grep -c 'allocation probes off' "$ALOG")
    assert_ge "probe windows opened (one per 5 s interval)" 2 "$on"
    assert_ge "probe windows closed" 2 "$off"
}

# Always on (--alloc-duty 1), every 127th call: the events opened at the
# start and followed into new threads by inherit.
test_alloc_shares_always_on() {
    alloc_run at-alloc-on 2 6 --alloc=127 --alloc-duty 1
    if grep -q 'allocation probes on for' "$ALOG"; then fail "--alloc-duty 1 closed and reopened the probes"; fi
}

# The uprobe PMU (--alloc-probes pmu): where closing the probes at each
# window's end would take more than a quarter of the interval (12 events of
# 2 threads on 2 CPUs, ~90 ms each, in 2 s intervals), they stay
# installed, and the agent says so.  (On a 1-CPU machine: 6 events, 0.45 s,
# under the quarter: no fallback to see.)
test_alloc_duty_falls_back_pmu() {
    [ "$(nproc)" -ge 2 ] || skip "one CPU: 6 PMU events close within a quarter of the interval"
    "$AT_BUILD/alloc" 5 1 >/dev/null 2>&1 &
    WPID=$!
    sleep 0.3
    "$AGENT" --pid "$WPID" --alloc --alloc-probes pmu --interval 2 --duration 3 --no-kernel --unwind fp --verbose \
        --output "$AT_TMP/out.txt" >"$AT_TMP/agent.log" 2>&1 || die "agent failed: $(tail -3 "$AT_TMP/agent.log")"
    ALOG=$AT_TMP/agent.log
    check_available --alloc
    assert_contains "the PMU is used" "$(cat "$ALOG")" "probes: uprobe PMU (--alloc-probes pmu)"
    assert_contains "the fallback is logged" "$(cat "$ALOG")" "they stay installed (--alloc-duty 1)"
    if grep -q 'allocation probes on for' "$ALOG"; then fail "the probes were closed and reopened"; fi
    assert_contains "allocation profiles written" "$(grep '^# ' "$AT_TMP/out.txt")" "type=alloc_objects"
}

# tracefs probes (the default as root): one registration per allocator,
# kept by a disabled event on kthreadd, so a window's 12 events close at
# once and the same 2 s intervals keep their windows (no fallback).  The
# probes are in uprobe_events under the agent's group while it runs, gone
# after; a group left by an agent that died (a pid that exited) is removed
# at the start.
test_alloc_tracefs_probes() {
    local ue dead libc off apid log
    ue=/sys/kernel/tracing/uprobe_events
    [ -w "$ue" ] || ue=/sys/kernel/debug/tracing/uprobe_events
    [ -w "$ue" ] || skip "no writable uprobe_events (tracefs not mounted, or not root)"
    libc=$(awk '$2 ~ /x/ && $6 ~ /libc[.-]/ { print $6; exit }' /proc/self/maps)
    [ -n "$libc" ] || die "no libc in /proc/self/maps"
    off=$(readelf -sW --dyn-syms "$libc" 2>/dev/null | awk '$8 ~ /^malloc(@|$)/ && $4 == "FUNC" { print $2; exit }')
    [ -n "$off" ] || skip "no malloc symbol in $libc (readelf)"
    sh -c 'exit 0' & dead=$!
    wait "$dead"
    echo "p:flamedb_$dead/malloc_0 $libc:0x$off" >>"$ue" || die "cannot write $ue"
    assert_contains "the dead agent's group is planted" "$(cat "$ue")" "flamedb_$dead/"
    "$AT_BUILD/alloc" 8 1 >/dev/null 2>&1 &
    WPID=$!
    sleep 0.3
    log=$AT_TMP/agent.log
    "$AGENT" --pid "$WPID" --alloc --interval 2 --alloc-duty 0.25 --duration 5 --no-kernel --unwind fp --verbose \
        --output "$AT_TMP/out.txt" >"$log" 2>&1 &
    apid=$!
    ALOG=$log
    for _ in $(seq 100); do grep -q 'allocation probes on for' "$log" && break; kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done
    assert_contains "the agent's probes are in uprobe_events while it runs" "$(cat "$ue")" "flamedb_$apid/malloc_"
    wait "$apid" || die "agent failed: $(tail -3 "$log")"
    check_available --alloc
    assert_contains "tracefs is used" "$(cat "$log")" "probes: tracefs"
    if [ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ]; then
        assert_contains "kept by kthreadd" "$(cat "$log")" "kept registered by a disabled event on kthreadd"
    fi
    if grep -q 'they stay installed' "$log"; then fail "tracefs probes fell back to always installed: $(grep 'stay installed' "$log")"; fi
    assert_ge "probe windows opened (2 s intervals)" 2 "$(grep -c 'allocation probes on for' "$log")"
    assert_ge "probe windows closed" 2 "$(grep -c 'allocation probes off' "$log")"
    assert_contains "allocation profiles written" "$(grep '^# ' "$AT_TMP/out.txt")" "type=alloc_objects"
    if grep -q "flamedb_$dead/" "$ue"; then fail "the dead agent's group was not removed: $(grep "flamedb_$dead/" "$ue")"; fi
    if grep -q "flamedb_$apid/" "$ue"; then fail "the agent's probes stayed after its exit: $(grep "flamedb_$apid/" "$ue")"; fi
}

# As a user who may not write tracefs, --alloc-probes tracefs says why and
# the on-CPU profile goes on.
test_alloc_probes_tracefs_refused() {
    local out
    command -v setpriv >/dev/null || die "setpriv (util-linux) is needed"
    [ "$(id -u)" = 0 ] || die "this test drops to user nobody and so must start as root"
    chmod 777 "$AT_TMP"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$AT_BUILD/alloc" 5 1 >/dev/null 2>&1 &
    WPID=$!
    sleep 0.3
    out=$(cd / && timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$AGENT" --pid "$WPID" --alloc --alloc-probes tracefs --no-kernel --unwind fp --interval 1 --duration 2 \
        --output "$AT_TMP/out.txt" 2>&1)
    [ $? = 0 ] || die "agent as nobody with --alloc-probes tracefs failed: $out"
    assert_contains "the reason is logged" "$out" "--alloc: no allocation profiles: --alloc-probes tracefs: no writable uprobe_events"
    assert_contains "on-CPU profiles still written" "$(grep '^# ' "$AT_TMP/out.txt")" "rate=99"
    if grep -q 'type=alloc_objects' "$AT_TMP/out.txt"; then fail "an allocation profile without probes"; fi
}

# The kernel refuses the tracepoint to an unprivileged agent (tracefs is
# root's): the agent says why and goes on sampling on-CPU.
test_offcpu_refused_keeps_cpu() {
    local out
    command -v setpriv >/dev/null || die "setpriv (util-linux) is needed"
    [ "$(id -u)" = 0 ] || die "this test drops to user nobody and so must start as root"
    chmod 777 "$AT_TMP"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$AT_BUILD/offcpu" 6 1 >/dev/null 2>&1 &
    WPID=$!
    sleep 0.3
    out=$(cd / && timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$AGENT" --pid "$WPID" --offcpu --no-kernel --unwind fp --interval 1 --duration 3 \
        --output "$AT_TMP/out.txt" 2>&1)
    [ $? = 0 ] || die "agent as nobody with --offcpu failed: $out"
    assert_contains "the reason is logged" "$out" "--offcpu: no off-CPU profiles:"
    assert_contains "on-CPU profiles still written" "$(grep '^# ' "$AT_TMP/out.txt")" "rate=99"
    if grep -q 'type=offcpu' "$AT_TMP/out.txt"; then fail "an offcpu profile without the tracepoint"; fi
}
