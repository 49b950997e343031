#!/usr/bin/env bash
# run.sh CHTOOL — the cluster tests (issue 10): cluster/ against real
# ClickHouse servers and ZooKeeper on 127.0.0.1, driven by CHTOOL (the
# tool tests/cluster/chtool.c, built by `make cluster-test`).
#
# Runs every tests/cluster/test_*.sh: each file is sourced with lib.sh in
# a subshell, and each of its test_* functions runs in a subshell of that.
# A test passes when it recorded no failure and exited 0.  Failing tests are
# printed with their messages; the last line is always
#   cluster: N passed, M failed
# and the exit status is non-zero when M > 0.
#
# Optional: CT_FILTER=regex runs only the tests whose "file:function" name
# matches; CT_KEEP=1 keeps the temporary directory (configs, logs) of a
# failed test.  Each test starts its own servers: nothing is shared.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 /path/to/chtool" >&2
    exit 2
fi
case $1 in
/*) CHTOOL=$1 ;;
*) CHTOOL=$PWD/$1 ;;
esac
export CHTOOL
if [ ! -x "$CHTOOL" ]; then
    echo "run.sh: $CHTOOL is not an executable" >&2
    echo "cluster: 0 passed, 1 failed"
    exit 1
fi
for tool in curl jq java python3 /usr/sbin/clickhouse-server; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is required (make deps installs it)" >&2; echo "cluster: 0 passed, 1 failed"; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-ct-results.XXXXXX")
trap 'rm -rf "$RESULTS"' EXIT

pass=0
failures=0
started=${EPOCHREALTIME:-0}
for file in "$HERE"/test_*.sh; do
    [ -e "$file" ] || continue
    fname=$(basename "$file" .sh)
    if ! err=$(bash -n "$file" 2>&1); then
        echo "FAIL $fname:<syntax>"
        echo "  $err"
        echo "$fname:<syntax>" >>"$RESULTS/failed"
        continue
    fi
    (
        # shellcheck source=lib.sh
        source "$HERE/lib.sh"
        # shellcheck disable=SC1090
        source "$file"
        tests=$(declare -F | awk '$3 ~ /^test_/ { print $3 }')
        if [ -z "$tests" ]; then
            echo "FAIL $fname:<no tests>"
            echo "$fname:<no tests>" >>"$RESULTS/failed"
        fi
        for t in $tests; do
            name="$fname:$t"
            if [ -n "${CT_FILTER:-}" ] && ! [[ "$name" =~ $CT_FILTER ]]; then continue; fi
            fails="$RESULTS/$fname.$t.fails"
            : >"$fails"
            t0=${EPOCHREALTIME:-0}
            (
                CT_FAILS=$fails
                trap ct_cleanup EXIT
                "$t"
            ) </dev/null 2>"$fails.stderr"
            rc=$?
            secs=$(awk -v a="$t0" -v b="${EPOCHREALTIME:-0}" 'BEGIN { printf "%.1fs", b - a }')
            if [ $rc -ne 0 ] && ! [ -s "$fails" ]; then
                echo "  test exited with status $rc" >>"$fails"
            fi
            if [ -s "$fails" ]; then
                echo "FAIL $name ($secs)"
                cat "$fails"
                if [ -s "$fails.stderr" ]; then
                    echo "  -- stderr of the test:"
                    tail -15 "$fails.stderr" | sed 's/^/     /'
                fi
                echo "$name" >>"$RESULTS/failed"
            else
                echo "ok   $name ($secs)"
                echo "$name" >>"$RESULTS/passed"
            fi
        done
    )
done

[ -e "$RESULTS/passed" ] && pass=$(wc -l <"$RESULTS/passed")
[ -e "$RESULTS/failed" ] && failures=$(wc -l <"$RESULTS/failed")
if [ "$failures" -gt 0 ]; then
    echo
    echo "failed cluster tests:"
    sed 's/^/  /' "$RESULTS/failed"
fi
echo "cluster: $pass passed, $failures failed ($(awk -v a="$started" -v b="${EPOCHREALTIME:-0}" 'BEGIN { printf "%.0f", b - a }') s)"
[ "$failures" -eq 0 ]
