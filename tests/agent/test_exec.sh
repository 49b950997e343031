# shellcheck shell=bash
# test_exec.sh — a process that execs keeps its pid and changes everything
# else: name, build, mappings, frame pointers or not.  The agent must start
# over with it (issue 15): the profile before the exec under the old
# program's service, after it under the new one's, DWARF-unwound through
# the new program's modules, and no crash (the agent runs with glibc's
# malloc checks: freed memory is overwritten, so a use after free shows).

test_dwarf_unwinding_across_exec() {
    local before after bid
    bid=$(readelf -n "$AT_BUILD/workload_dw" | awk '/Build ID:/ { print substr($3, 1, 12) }')
    start_server
    # execer (no frame pointers) burns 2 s, then becomes workload_dw (no
    # frame pointers either) for 4 s, one thread
    start_workload "$AT_BUILD/execer" 2 "$AT_BUILD/workload_dw" 4 1
    GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 \
        start_agent --pid "$WPID" --interval 2 --duration 6 --frequency 99 --unwind dwarf --no-kernel
    wait_agent 40
    require_agent_ok
    before=$(folded execer)
    [ -n "$before" ] || die "no profile under service execer; agent log: $(agent_log_tail)"
    assert_contains "before the exec: execer's own frames" "$before" "main;execer_burn "
    after=$(folded workload_dw)
    [ -n "$after" ] || die "no profile under service workload_dw (the program after the exec); agent log: $(agent_log_tail)"
    assert_contains "after the exec: the new program's path" "$after" "main;run_b;mid_b;work_b "
    assert_ge "% of work_b samples under main;run_b;mid_b;work_b (DWARF after the exec)" 90 \
        "$(path_fraction "$after" work_b "main;run_b;mid_b;work_b")"
    [[ "$after" == *execer_burn* ]] && fail "execer's frames under workload_dw: $(grep execer_burn <<<"$after" | head -2)"
    assert_eq "build label after the exec: the new executable's" "$bid" \
        "$(curl -sS -G "$BASE/api/v1/series" --data-urlencode 'query={service="workload_dw"}' -d from=now-1h |
            jq -r '.series[0].labels.build')"
}
