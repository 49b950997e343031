# shellcheck shell=bash
# test_symbols.sh — function names for PIE and non-PIE executables, a shared
# library loaded at a random base, a stripped executable whose names are
# only in its .gnu_debuglink debug file, and C++ names demangled (issue 13)
# or, with --no-demangle, as the symbol table has them.  Built with frame
# pointers, profiled with --unwind fp: this file tests symbolization, not
# unwinding.

# profile_fixture BIN SERVICE [AGENT ARGS...]: runs BIN for a while under
# the agent and leaves its folded profile in $FOLDED.
profile_fixture() {
    local bin=$1 svc=$2
    shift 2
    start_server
    start_workload "$bin" 10
    start_agent --pid "$WPID" --service "$svc" --interval 3 --duration 3 \
        --frequency 99 --unwind fp --no-kernel "$@"
    wait_agent 30
    require_agent_ok
    FOLDED=$(folded "$svc")
    [ -n "$FOLDED" ] || die "$svc: no profile stored; agent log: $(agent_log_tail)"
}

test_pie_executable() {
    profile_fixture "$AT_BUILD/spin_pie" sym-pie
    assert_contains "PIE: names" "$FOLDED" "main;spin_outer;spin_leaf "
}

test_non_pie_executable() {
    profile_fixture "$AT_BUILD/spin_nopie" sym-nopie
    assert_contains "non-PIE: names" "$FOLDED" "main;spin_outer;spin_leaf "
}

test_shared_library() {
    profile_fixture "$AT_BUILD/uselib" sym-lib
    assert_contains "shared library: names" "$FOLDED" "main;use_lib;lib_hot_loop;lib_inner "
}

test_stripped_with_debuglink() {
    # the fixture really is stripped: without its debug file, no names
    if readelf -S "$AT_BUILD/spin_stripped" 2>/dev/null | grep -q '\.symtab'; then
        die "fixture spin_stripped still has a .symtab"
    fi
    profile_fixture "$AT_BUILD/spin_stripped" sym-stripped
    assert_contains "stripped + debuglink: names" "$FOLDED" "main;spin_outer;spin_leaf "
}

test_cpp_names_demangled() {
    profile_fixture "$AT_BUILD/spin_cpp" sym-cpp
    assert_contains "C++: demangled names" "$FOLDED" \
        "main;demo::Spinner<int>::run(double) const;demo::Spinner<int>::leaf(double, int) const "
    [[ "$FOLDED" == *_ZNK4demo* ]] && fail "C++: a mangled name is left: $(head -c 300 <<<"$FOLDED")"
    return 0
}

test_cpp_names_no_demangle() {
    profile_fixture "$AT_BUILD/spin_cpp" sym-cpp-raw --no-demangle
    assert_contains "--no-demangle: raw names" "$FOLDED" \
        "main;_ZNK4demo7SpinnerIiE3runEd;_ZNK4demo7SpinnerIiE4leafEdi "
    [[ "$FOLDED" == *demo::* ]] && fail "--no-demangle: a demangled name: $(head -c 300 <<<"$FOLDED")"
    return 0
}
