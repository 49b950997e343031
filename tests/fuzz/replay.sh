#!/usr/bin/env bash
# replay.sh DIR NAME... — `make fuzz-replay`: runs every input of
# tests/fuzz/corpus/NAME and tests/fuzz/crashes/NAME once through DIR/NAME
# (a harness linked with replay.c under ASan/UBSan).  Allocations over
# 1 GiB are errors: the amplification bugs of issue 12 stay fixed.  On a
# failure each input is run alone to name the one at fault.
set -u
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-max_allocation_size_mb=1024:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
inputs=0 failed=()
for name in "$@"; do
  files=()
  for f in "$here/corpus/$name"/* "$here/crashes/$name"/*; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -eq 0 ] && continue
  inputs=$((inputs + ${#files[@]}))
  if ! "$dir/$name" "${files[@]}" >"$dir/$name.log" 2>&1; then
    for f in "${files[@]}"; do
      if ! "$dir/$name" "$f" >"$dir/$name.log" 2>&1; then
        failed+=("$name: ${f#"$here"/}")
        tail -n 30 "$dir/$name.log"
        break
      fi
    done
    [ ${#failed[@]} -gt 0 ] && [ "${failed[-1]%%:*}" = "$name" ] || failed+=("$name: (all inputs together)")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz-replay: FAILED %s\n' "${failed[@]}"
  exit 1
fi
echo "fuzz-replay: $inputs inputs through $# harnesses, no crash"
