# assert.sh — failures and assertions of the shell suites (tests/integration,
# tests/cluster; sourced by their lib.sh).  A failure is a line appended to
# $SUITE_FAILS (suite.sh sets it for each test; stderr outside a suite), so
# it survives subshells ($(...), background loops); die also ends the test.

fail() {
    printf '  %s\n' "$*" >>"${SUITE_FAILS:-/dev/stderr}"
}

# Records a failure and ends the test (the EXIT trap cleans up).
die() {
    fail "$@"
    exit 1
}

assert_eq() {
    local desc=$1 want=$2 got=$3
    if [ "$want" != "$got" ]; then
        fail "$desc: expected [$want], got [$got]"
        return 1
    fi
}

# assert_near desc want got [tolerance]: numbers within tolerance (default 1e-12).
assert_near() {
    local desc=$1 want=$2 got=$3 tol=${4:-1e-12}
    if ! [[ "$got" =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] ||
        ! awk -v a="$want" -v b="$got" -v t="$tol" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; then
        fail "$desc: expected $want (within $tol), got [$got]"
        return 1
    fi
}

assert_contains() {
    local desc=$1 hay=$2 needle=$3
    if [[ "$hay" != *"$needle"* ]]; then
        fail "$desc: expected to contain [$needle], got [$hay]"
        return 1
    fi
}

assert_not_contains() {
    local desc=$1 hay=$2 needle=$3
    if [[ "$hay" == *"$needle"* ]]; then
        fail "$desc: expected not to contain [$needle], got [$hay]"
        return 1
    fi
}

# assert_ge desc min actual (integers)
assert_ge() {
    local desc=$1 min=$2 got=$3
    if ! [[ "$got" =~ ^-?[0-9]+$ ]] || [ "$got" -lt "$min" ]; then
        fail "$desc: expected >= $min, got [$got]"
        return 1
    fi
}

assert_le() {
    local desc=$1 max=$2 got=$3
    if ! [[ "$got" =~ ^-?[0-9]+$ ]] || [ "$got" -gt "$max" ]; then
        fail "$desc: expected <= $max, got [$got]"
        return 1
    fi
}
