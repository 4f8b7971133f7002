#!/usr/bin/env bash
# kvbench_smoke.sh: a quick end-to-end check of kvbench (and of the DB under
# it) for `make test`. Usage: tools/bench/kvbench_smoke.sh [BUILD_DIR]
# (default build; the binary is BUILD_DIR/bin/kvbench).
#
# 1. kvbench --benchmarks=fillrandom,readrandom,stats --num=2000 --histogram=1
#    on a fresh temporary directory: every db_bench-layout line must be there
#    (header, "fillrandom   :" and "readrandom   :" result lines, the
#    histogram lines, "(F of 2000 found)" with F > 0), plus our "Write
#    amplification:" and "Stall time:" lines and the stats properties.
#    fillrandom draws keys with replacement and readrandom uses the next
#    seeds, so here F is about 63% of 2000, not all of them (as in db_bench).
# 2. kvbench --benchmarks=readrandom --use_existing_db=1 with the same seed in
#    a new process draws exactly the keys that fillrandom wrote: it must find
#    2000 of 2000 after the close and reopen.
# 3. readseq over the reopened DB must see as many distinct keys as it holds
#    (at least F, at most 2000).
# 4. Bad flags: an unknown flag and a non-numeric value exit 1 and name the
#    flag.
# Prints "kvbench smoke: OK" and exits 0, or says which check failed and
# exits 1.
set -uo pipefail

build=${1:-build}
bin=$build/bin/kvbench
[ -x "$bin" ] || { echo "kvbench smoke: $bin not found" >&2; exit 1; }
tmp=$(mktemp -d /tmp/kvbench-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/db
failed=0
fail() {
  echo "kvbench smoke: FAILED: $*" >&2
  failed=1
}
expect() {  # file regex description
  grep -Eq -- "$2" "$1" || fail "$3: no line matching /$2/ in $1:
$(cat "$1")"
}

common=(--num=2000 --value_size=1000 --write_buffer_size=262144 --seed=42 --db="$db")

out=$tmp/run1.txt
if ! "$bin" --benchmarks=fillrandom,readrandom,stats --histogram=1 "${common[@]}" >"$out" 2>"$tmp/run1.err"; then
  fail "run 1 exited $?: $(cat "$tmp/run1.err")"
fi
expect "$out" '^Keys: +16 bytes each' "header Keys"
expect "$out" '^Values: +1000 bytes each' "header Values"
expect "$out" '^Entries: +2000$' "header Entries"
expect "$out" '^DB path: \[' "DB path line"
expect "$out" '^fillrandom +: +[0-9.]+ micros/op [0-9]+ ops/sec [0-9.]+ seconds 2000 operations; +[0-9.]+ MB/s$' \
  "fillrandom result line"
expect "$out" '^readrandom +: +[0-9.]+ micros/op [0-9]+ ops/sec [0-9.]+ seconds 2000 operations; .*\([0-9]+ of 2000 found\)$' \
  "readrandom result line"
expect "$out" '^Microseconds per write:$' "write histogram"
expect "$out" '^Microseconds per read:$' "read histogram"
expect "$out" '^Count: 2000 Average: [0-9.]+  StdDev: [0-9.]+$' "histogram Count line"
expect "$out" '^Percentiles: P50: [0-9.]+ P75: [0-9.]+ P99: [0-9.]+ P99.9: [0-9.]+ P99.99: [0-9.]+$' \
  "histogram Percentiles line"
expect "$out" '^Write amplification: ' "write amplification line"
expect "$out" '^Stall time: ' "stall time line"
grep -q '(property matrixkv.stats not supported)' "$out" && fail "matrixkv.stats is not supported"
grep -q '(property matrixkv.levels not supported)' "$out" && fail "matrixkv.levels is not supported"
found1=$(sed -nE 's/.*\(([0-9]+) of 2000 found\).*/\1/p' "$out" | head -1)
[ "${found1:-0}" -gt 0 ] || fail "readrandom after fillrandom found ${found1:-nothing} of 2000"

out2=$tmp/run2.txt
if ! "$bin" --benchmarks=readrandom,readseq --use_existing_db=1 "${common[@]}" >"$out2" 2>"$tmp/run2.err"; then
  fail "run 2 (reopen) exited $?: $(cat "$tmp/run2.err")"
fi
expect "$out2" '\(2000 of 2000 found\)' "readrandom with fillrandom's seed after reopen must find every key"
distinct=$(awk '$1 == "readseq" && $2 == ":" { for (i = 3; i < NF; i++) if ($(i + 1) == "operations;") print $i }' "$out2")
if [ -z "$distinct" ] || [ "$distinct" -lt "${found1:-1}" ] || [ "$distinct" -gt 2000 ]; then
  fail "readseq saw ${distinct:-no} keys; expected between $found1 and 2000"
fi

"$bin" --no_such_flag=1 >/dev/null 2>"$tmp/bad1" && fail "an unknown flag was accepted"
grep -q 'no_such_flag' "$tmp/bad1" || fail "unknown-flag message does not name the flag: $(cat "$tmp/bad1")"
"$bin" --num=abc --db="$db" >/dev/null 2>"$tmp/bad2"
[ $? -eq 1 ] || fail "--num=abc did not exit 1"
grep -q -- '--num' "$tmp/bad2" || fail "bad-value message does not name --num: $(cat "$tmp/bad2")"

if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "kvbench smoke: OK (fillrandom+readrandom found $found1 of 2000, reopen found 2000 of 2000, $distinct distinct keys)"
