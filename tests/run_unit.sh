#!/usr/bin/env bash
# Runs every cmocka unit test binary given and prints one closing line:
# "unit: N passed, N failed" counting binaries (cmocka prints per-test detail).
# test_store runs twice: with one writer thread and with three (its
# TEST_STORE_WRITERS), every answer the same whatever the writers.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
  if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$(basename "$t")"); fi
  if [ "$(basename "$t")" = test_store ]; then
    if TEST_STORE_WRITERS=3 "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("test_store (3 writers)"); fi
  fi
done
[ $fail -gt 0 ] && echo "failed unit tests: ${failed[*]}"
echo "unit: $pass passed, $fail failed"
[ $fail -eq 0 ]
