#!/usr/bin/env bash
# selftest.sh FLAMEDB — the doc-test harness must catch broken docs.
#
# Runs tests/docs/run.sh on tests/docs/fixtures/selftest.md, whose blocks are
# each preceded by the verdict expected of them (`expect: ok|FAIL|skip`):
# right answers, wrong numbers, a field the doc does not show, a curl URL
# with braces and no -g, HTTP 404, an error answer on purpose, a failing
# command, a skipped block, a ```json answer of a file, text answers.  Checks
# every verdict, that a FAIL shows the command, the answer and the expected
# answer, the closing line and the exit status.
# Prints `doctest-selftest: ok` or what went wrong; exits non-zero then.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FIXTURE=$HERE/fixtures/selftest.md
if [ $# -ne 1 ]; then
    echo "usage: $0 /path/to/flamedb" >&2
    exit 2
fi

out=$(bash "$HERE/run.sh" "$1" "$FIXTURE" 2>&1)
rc=$?
problems=()

# expected verdict per block: the last `expect:` line before its fence
mapfile -t want < <(awk '/^expect: / { v = $2 } /^```sh/ { print NR, v }' "$FIXTURE")
n_ok=0 n_fail=0 n_skip=0
for w in "${want[@]}"; do
    line=${w%% *} verdict=${w#* }
    case $verdict in
    ok) tag="ok  " n_ok=$((n_ok + 1)) ;;
    FAIL) tag="FAIL" n_fail=$((n_fail + 1)) ;;
    skip) tag="skip" n_skip=$((n_skip + 1)) ;;
    *) problems+=("fixture line $line: no expect: line before the block"); continue ;;
    esac
    if ! grep -q "^$tag [^ ]*selftest\.md:$line\( \|$\)" <<<"$out"; then
        problems+=("block at selftest.md:$line: expected '$verdict', got: $(grep "selftest\.md:$line\( \|$\)" <<<"$out" | grep -v '^  ' | head -1)")
    fi
done

# a FAIL shows the failing command, the answer and the doc's answer
wrong=$(awk '/^```sh/ { n++ } n == 2 && /^curl/ { print NR; exit }' "$FIXTURE")
for needle in "selftest.md:$wrong: the answer differs from the doc's" "    command:" "    differences:" \
    "at .total: expected 6, got 5" "    answer:" "    expected (" "curl would glob the braces" \
    "expected an error answer (HTTP >= 400)" "exit status 22 (HTTP 404)"; do
    grep -qF -- "$needle" <<<"$out" || problems+=("the output lacks [$needle]")
done

last=$(tail -1 <<<"$out")
[ "$last" = "doctest: $n_ok passed, $n_fail failed ($n_skip skipped)" ] ||
    problems+=("closing line: expected [doctest: $n_ok passed, $n_fail failed ($n_skip skipped)], got [$last]")
[ $rc -ne 0 ] || problems+=("run.sh exited 0 although blocks failed")

if [ ${#problems[@]} -gt 0 ]; then
    echo "doctest-selftest: the harness did not report the broken fixture as it should:"
    printf '  %s\n' "${problems[@]}"
    echo "  -- run.sh's output:"
    sed 's/^/     /' <<<"$out"
    echo "doctest-selftest: FAIL"
    exit 1
fi
echo "doctest-selftest: ok ($n_ok ok, $n_fail FAIL, $n_skip skip blocks reported as expected)"
