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
# 4. Bad flags: an unknown flag and a non-numeric value exit 2 and name the
#    flag.
# 5. The mixed workloads, two threads each, on a fillseq'd DB (every key
#    present) with a small NVM pool: readrandomwriterandom (50%),
#    updaterandom, seekrandom with 10 nexts, readwhilewriting and
#    seekrandomwhilewriting, with their db_bench result lines and exact
#    counts ("( reads:200 writes:200 total:400 found:200)", "(400 of 400
#    found)": the writers only overwrite existing keys), the update and seek
#    histograms, our "Background writer:" line and the write-effect lines.
# 6. fillrandom with 3 writer threads and --writes=700: 2100 operations.
# 7. The YCSB presets, one thread, on a fillseq'd DB with the pool: each
#    preset's line with exact counts; ycsbd and ycsbe insert 10 new keys
#    each, so a readseq in a new process sees 2020 keys (the inserts
#    survived the close and reopen).
# Prints "kvbench smoke: OK" and exits 0, or says which check failed and
# exits 1.
set -uo pipefail

build=${1:-build}
bin=$build/bin/kvbench
[ -x "$bin" ] || { echo "kvbench smoke: $bin not found" >&2; exit 1; }
tmp=$(mktemp -d /tmp/kvbench-smoke.XXXXXX)
# The pools go on /dev/shm: on a disk file every PM commit is an msync.
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=$tmp
pools=$(mktemp -d "$shm/kvbench-smoke.XXXXXX")
trap 'rm -rf "$tmp" "$pools"' EXIT
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

base=(--num=2000 --value_size=1000 --write_buffer_size=262144 --seed=42)
common=("${base[@]}" --db="$db")

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
[ $? -eq 2 ] || fail "--num=abc did not exit 2"
grep -q -- '--num' "$tmp/bad2" || fail "bad-value message does not name --num: $(cat "$tmp/bad2")"

# 5. Mixed workloads.
mixed=("${base[@]}" --nvm_size=33554432)
out5=$tmp/run5.txt
if ! "$bin" --benchmarks=fillseq,readrandomwriterandom,updaterandom,seekrandom,readwhilewriting,seekrandomwhilewriting \
    --db="$tmp/db5" --nvm_path="$pools/pool5" --threads=2 --reads=400 --readwritepercent=50 --seek_nexts=10 --histogram=1 "${mixed[@]}" \
    >"$out5" 2>"$tmp/run5.err"; then
  fail "run 5 (mixed workloads) exited $?: $(cat "$tmp/run5.err")"
fi
ops='+[0-9.]+ micros/op [0-9]+ ops/sec [0-9.]+ seconds'
expect "$out5" "^fillseq +: $ops 4000 operations; +[0-9.]+ MB/s\$" "fillseq with 2 threads"
expect "$out5" "^readrandomwriterandom : $ops 800 operations; \\( reads:200 writes:200 total:400 found:200\\)\$" \
  "readrandomwriterandom result line"
expect "$out5" "^updaterandom : $ops 800 operations; +[0-9.]+ MB/s \\( updates:400 found:400\\)\$" \
  "updaterandom result line"
expect "$out5" '^Microseconds per update:$' "update histogram"
expect "$out5" "^seekrandom +: $ops 800 operations; +[0-9.]+ MB/s \\(400 of 400 found\\)\$" "seekrandom result line"
expect "$out5" '^Microseconds per seek:$' "seek histogram"
expect "$out5" "^readwhilewriting : $ops 800 operations; +[0-9.]+ MB/s \\(400 of 400 found\\)\$" \
  "readwhilewriting result line (the writer's operations are not in it)"
expect "$out5" "^seekrandomwhilewriting : $ops 800 operations; +[0-9.]+ MB/s \\(400 of 400 found\\)\$" \
  "seekrandomwhilewriting result line"
writers=$(grep -Ec '^Background writer: [0-9]+ writes in [0-9.]+ seconds, [0-9]+ writes/sec, [0-9.]+ MB/s$' "$out5")
[ "$writers" -eq 2 ] || fail "expected 2 'Background writer:' lines in $out5, found $writers"
effects=$(grep -c '^Write amplification: ' "$out5")
[ "$effects" -eq 5 ] || fail "expected 5 'Write amplification:' lines (every benchmark that writes), found $effects"

# 6. Several writers.
out6=$tmp/run6.txt
if ! "$bin" --benchmarks=fillrandom --db="$tmp/db6" --threads=3 --writes=700 "${base[@]}" \
    >"$out6" 2>"$tmp/run6.err"; then
  fail "run 6 (3 writers) exited $?: $(cat "$tmp/run6.err")"
fi
expect "$out6" "^fillrandom +: $ops 2100 operations; +[0-9.]+ MB/s\$" "fillrandom with 3 threads of 700 writes"

# 7. YCSB presets, then the inserts after a reopen.
out7=$tmp/run7.txt
if ! "$bin" --benchmarks=fillseq,ycsba,ycsbb,ycsbc,ycsbd,ycsbe,ycsbf --db="$tmp/db7" --reads=200 --seek_nexts=5 \
    --nvm_path="$pools/pool7" "${mixed[@]}" >"$out7" 2>"$tmp/run7.err"; then
  fail "run 7 (YCSB) exited $?: $(cat "$tmp/run7.err")"
fi
expect "$out7" "^ycsba +: $ops 200 operations; \\( reads:100 writes:100 total:200 found:100\\)\$" "ycsba result line"
expect "$out7" "^ycsbb +: $ops 200 operations; \\( reads:190 writes:10 total:200 found:190\\)\$" "ycsbb result line"
expect "$out7" "^ycsbc +: $ops 200 operations; +[0-9.]+ MB/s \\(200 of 200 found\\)\$" "ycsbc result line"
expect "$out7" "^ycsbd +: $ops 200 operations; +[0-9.]+ MB/s \\( reads:190 inserts:10 found:190\\)\$" "ycsbd result line"
expect "$out7" "^ycsbe +: $ops 200 operations; +[0-9.]+ MB/s \\( scans:190 inserts:10 found:190\\)\$" "ycsbe result line"
expect "$out7" "^ycsbf +: $ops 200 operations; +[0-9.]+ MB/s \\( updates:200 found:200\\)\$" "ycsbf result line"
out8=$tmp/run8.txt
if ! "$bin" --benchmarks=readseq --use_existing_db=1 --db="$tmp/db7" --reads=1000000 \
    --nvm_path="$pools/pool7" "${mixed[@]}" >"$out8" 2>"$tmp/run8.err"; then
  fail "run 8 (readseq after YCSB) exited $?: $(cat "$tmp/run8.err")"
fi
expect "$out8" "^readseq +: $ops 2020 operations;" "readseq after ycsbd and ycsbe must see 2000 + 20 inserted keys"

if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "kvbench smoke: OK (fillrandom+readrandom found $found1 of 2000, reopen found 2000 of 2000, $distinct distinct keys;"
echo "mixed workloads, 3 writers, YCSB A-F and their 20 inserts after a reopen)"
