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
# shellcheck source=../suite.sh
source "$HERE/../suite.sh"
suite_run cluster "$HERE" CT
