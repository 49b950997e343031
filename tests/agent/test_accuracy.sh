# shellcheck shell=bash
# test_accuracy.sh — the workload's CPU split (50/30/20 iterations across
# work_a, work_b, work_c) as the agent measures it, through the server's
# /api/v1/top, against the split the workload measured itself (--truth:
# each function's thread CPU time; on a shared VM the same loop can run at
# different speeds in the two functions, and a CI run once saw work_b at
# 24 % of the CPU for 30 % of the iterations in two tests in a row); and in
# the build without frame pointers, the full call paths recovered by DWARF
# unwinding, through /api/v1/query?format=folded.

AT_SECONDS=6      # agent --duration
AT_TOL=5          # percentage points

# profile_workload BIN SERVICE UNWIND: runs the workload (2 threads) under
# the agent until the agent's --duration ends, then stops it: its truth
# (the shares of its own CPU time) goes to $AT_TMP/workload.out.
profile_workload() {
    local bin=$1 svc=$2 unwind=$3
    start_server
    start_workload "$bin" $((AT_SECONDS + 10)) 2 --truth
    start_agent --pid "$WPID" --service "$svc" --interval 2 --duration "$AT_SECONDS" \
        --frequency 99 --unwind "$unwind" --no-kernel
    wait_agent 30
    require_agent_ok
    kill -TERM "$WPID" 2>/dev/null
    wait "$WPID" 2>/dev/null
    WPID=""
}

check_shares() {
    local svc=$1 shares a b c truth ta tb tc
    shares=$(top_shares "$svc")
    [ "$shares" != none ] && [ -n "$shares" ] ||
        die "no work_a/work_b/work_c samples for service $svc; top: $(top_json "$svc" | head -c 400); agent log: $(agent_log_tail)"
    truth=$(grep '^{' "$AT_TMP/workload.out" | tail -1 |
        jq -r '.share | "\(.work_a * 100) \(.work_b * 100) \(.work_c * 100)"')
    [ -n "$truth" ] || die "the workload printed no truth: $(head -c 300 "$AT_TMP/workload.out")"
    read -r a b c <<<"$shares"
    read -r ta tb tc <<<"$truth"
    # the split is 50/30/20 in iterations: the CPU it took is near that
    assert_near "$svc: the workload's own work_a share (%)" 50 "$ta" 10
    assert_near "$svc: work_a share (%) against the workload's ${ta%.*}" "$ta" "$a" "$AT_TOL"
    assert_near "$svc: work_b share (%) against the workload's ${tb%.*}" "$tb" "$b" "$AT_TOL"
    assert_near "$svc: work_c share (%) against the workload's ${tc%.*}" "$tc" "$c" "$AT_TOL"
}

# check_paths SERVICE: every leaf reached through its full path, in the
# main thread (main;run_*) and in the other (worker;run_*), and at least 90%
# of each leaf's samples with the complete caller chain.
check_paths() {
    local svc=$1 f p
    f=$(folded "$svc")
    assert_contains "$svc: main thread path to work_a" "$f" "main;run_a;work_a "
    assert_contains "$svc: main thread path to work_b" "$f" "main;run_b;mid_b;work_b "
    assert_contains "$svc: main thread path to work_c" "$f" "main;run_c;work_c "
    assert_contains "$svc: second thread path to work_b" "$f" "worker;run_b;mid_b;work_b "
    for p in "run_a;work_a" "run_b;mid_b;work_b" "run_c;work_c"; do
        assert_ge "$svc: % of ${p##*;} samples under ...;$p" 90 "$(path_fraction "$f" "${p##*;}" "$p")"
    done
}

test_fp_build_shares() {
    profile_workload "$AT_BUILD/workload_fp" at-fp fp
    check_shares at-fp
    check_paths at-fp
}

test_dwarf_build_shares_and_paths() {
    profile_workload "$AT_BUILD/workload_dw" at-dwarf dwarf
    check_shares at-dwarf
    check_paths at-dwarf
}

# auto must notice the binary has no frame pointers and unwind with DWARF
test_dwarf_build_auto_unwind() {
    profile_workload "$AT_BUILD/workload_dw" at-auto auto
    check_shares at-auto
    check_paths at-auto
}

# A library without frame pointers loaded with dlopen after the agent has
# started on the process: the unwinder must learn the new module (maps
# refresh) to walk through it.
test_dwarf_dlopen_library() {
    local f
    start_server
    start_workload "$AT_BUILD/dlmain" "$AT_BUILD/libhot_nofp.so" 12
    start_agent --pid "$WPID" --service at-dlopen --interval 2 --duration 5 \
        --frequency 99 --unwind dwarf --no-kernel
    wait_agent 30
    require_agent_ok
    f=$(folded at-dlopen)
    assert_contains "before the dlopen" "$f" "main;warm_up "
    assert_contains "through the dlopen'ed library" "$f" "main;call_plugin;lib_hot_loop;lib_inner "
    assert_ge "% of lib_inner samples under main;call_plugin;lib_hot_loop" 90 \
        "$(path_fraction "$f" lib_inner "main;call_plugin;lib_hot_loop;lib_inner")"
}
