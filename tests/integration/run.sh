#!/usr/bin/env bash
# run.sh BIN — flamedb's HTTP integration tests against the binary BIN.
#
# Runs every tests/integration/test_*.sh: each file is sourced with lib.sh in
# a subshell, and each of its test_* functions runs in a subshell of that.
# A test passes when it recorded no failure and exited 0.  Failing tests are
# printed with their messages; the last line is always
#   integration: N passed, M failed
# and the exit status is non-zero when M > 0.
#
# Optional: IT_FILTER=regex runs only the tests whose "file:function" name
# matches.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 /path/to/flamedb" >&2
    exit 2
fi
case $1 in
/*) FLAMEDB=$1 ;;
*) FLAMEDB=$PWD/$1 ;;
esac
export FLAMEDB
if [ ! -x "$FLAMEDB" ]; then
    echo "run.sh: $FLAMEDB is not an executable" >&2
    echo "integration: 0 passed, 1 failed"
    exit 1
fi
for tool in curl jq gzip; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is required" >&2; echo "integration: 0 passed, 1 failed"; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../suite.sh
source "$HERE/../suite.sh"
suite_run integration "$HERE" IT
