# suite.sh — the loop the shell test suites share: tests/integration,
# tests/agent and tests/cluster each source it from their run.sh.
#
# suite_run NAME DIR P runs every DIR/test_*.sh: each file is sourced with
# DIR/lib.sh in a subshell, and each of its test_* functions runs in a
# subshell of that, stdin closed, its stderr kept aside.  With P the
# suite's prefix (IT, AT, CT):
#   ${P}_FILTER   a regex: only the tests whose "file:function" matches
#   ${P}_FAILS    set for the test (and SUITE_FAILS, tests/assert.sh's):
#                 the file its failures go to; FILE.skip says why it skipped
#   ${p}_setup    (lower case, optional) run in the test's subshell first
#   ${p}_cleanup  (lower case) the test's EXIT trap
# A test passes when it recorded no failure and exited 0.  Failing tests
# are printed with their messages and stderr's tail; the last line is
#   NAME: N passed, M failed
# and suite_run's status is non-zero when M > 0 (or when no test ran).
suite_run() {
    local suite=$1 dir=$2 P=$3 p results file fname err tests t name fails t0 rc secs pass=0 failures=0
    p=$(tr '[:upper:]' '[:lower:]' <<<"$P")
    results=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-$p-results.XXXXXX")
    local filter_var="${P}_FILTER"
    local filter=${!filter_var:-}
    for file in "$dir"/test_*.sh; do
        [ -e "$file" ] || continue
        fname=$(basename "$file" .sh)
        if ! err=$(bash -n "$file" 2>&1); then
            echo "FAIL $fname:<syntax>"
            echo "  $err"
            echo "$fname:<syntax>" >>"$results/failed"
            continue
        fi
        (
            # shellcheck disable=SC1090,SC1091
            source "$dir/lib.sh"
            # shellcheck disable=SC1090
            source "$file"
            tests=$(declare -F | awk '$3 ~ /^test_/ { print $3 }')
            if [ -z "$tests" ]; then
                echo "FAIL $fname:<no tests>"
                echo "$fname:<no tests>" >>"$results/failed"
            fi
            for t in $tests; do
                name="$fname:$t"
                if [ -n "$filter" ] && ! [[ "$name" =~ $filter ]]; then continue; fi
                fails="$results/$fname.$t.fails"
                : >"$fails"
                t0=${EPOCHREALTIME:-0}
                (
                    printf -v "${P}_FAILS" '%s' "$fails"
                    SUITE_FAILS=$fails
                    if declare -F "${p}_setup" >/dev/null; then "${p}_setup"; fi
                    # shellcheck disable=SC2064
                    trap "${p}_cleanup" EXIT
                    "$t"
                ) </dev/null 2>"$fails.stderr"
                rc=$?
                secs=$(awk -v a="$t0" -v b="${EPOCHREALTIME:-0}" 'BEGIN { printf "%.1fs", b - a }')
                if [ $rc -ne 0 ] && ! [ -s "$fails" ]; then
                    echo "  test exited with status $rc" >>"$fails"
                fi
                if [ -s "$fails.skip" ] && ! [ -s "$fails" ]; then
                    echo "SKIP $name ($secs): $(cat "$fails.skip")"
                    echo "$name" >>"$results/skipped"
                elif [ -s "$fails" ]; then
                    echo "FAIL $name ($secs)"
                    cat "$fails"
                    if [ -s "$fails.stderr" ]; then
                        echo "  -- stderr of the test:"
                        tail -15 "$fails.stderr" | sed 's/^/     /'
                    fi
                    echo "$name" >>"$results/failed"
                else
                    echo "ok   $name ($secs)"
                    echo "$name" >>"$results/passed"
                fi
            done
        )
    done
    [ -e "$results/skipped" ] &&
        echo "$suite: $(wc -l <"$results/skipped") skipped (see the SKIP lines: this machine lacks what they need)"
    [ -e "$results/passed" ] && pass=$(wc -l <"$results/passed")
    [ -e "$results/failed" ] && failures=$(wc -l <"$results/failed")
    if [ "$failures" -gt 0 ]; then
        echo
        echo "failed $suite tests:"
        sed 's/^/  /' "$results/failed"
    fi
    if [ $((pass + failures)) -eq 0 ]; then
        echo "run.sh: no test ran" >&2
        failures=1
    fi
    rm -rf "$results"
    echo "$suite: $pass passed, $failures failed"
    [ "$failures" -eq 0 ]
}
