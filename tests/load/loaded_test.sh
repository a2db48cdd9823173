#!/bin/sh
# make test, N times in a row (default 3), in a fresh clone of HEAD, with two
# CPU-burning processes beside it the whole time: the README's test command
# as a loaded fresh machine runs it. Stops at the first failing run.
#
#   sh tests/load/loaded_test.sh [N]
#
# The clone is made in a new folder under ${TMPDIR:-/tmp} and removed when
# every run passed (kept, with its build/, when one failed). Each run's
# output is in that folder's run-K.log; the last lines are printed.
set -eu
n=${1:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kmserve-loaded.XXXXXX")
git clone -q "$src" "$work/main"

hogs=""
stop_hogs() { for p in $hogs; do kill "$p" 2>/dev/null || true; done; }
trap stop_hogs EXIT INT TERM
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  hogs="$hogs $!"
done

k=1
while [ "$k" -le "$n" ]; do
  echo "== run $k of $n (two CPU hogs:$hogs) in $work/main"
  start=$(date +%s)
  if make -C "$work/main" test > "$work/run-$k.log" 2>&1; then
    echo "run $k passed in $(( $(date +%s) - start )) s"
    grep -E '^[0-9]+ passed, [0-9]+ failed|^[0-9]+%: Checks' "$work/run-$k.log" | \
      awk '/failed/ { split($0, a, " "); p += a[1]; f += a[3] } END { printf "  runners: %d passed, %d failed\n", p, f }'
  else
    echo "run $k FAILED after $(( $(date +%s) - start )) s; log: $work/run-$k.log"
    grep -nE 'FAIL|failed|Error' "$work/run-$k.log" | grep -v ' 0 failed' | tail -40
    echo "$((k - 1)) passed, 1 failed"
    exit 1
  fi
  k=$((k + 1))
done
rm -rf "$work"
echo "$n passed, 0 failed"
