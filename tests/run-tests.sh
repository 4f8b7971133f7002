#!/usr/bin/env bash
# Runs every test binary in BUILD/bin (test_*) and prints one closing line,
# "tests: N passed, M failed", counting Catch2 test cases across binaries.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
passed=0
failed=0
bad_bins=()
for t in "$build"/bin/test_*; do
  [ -x "$t" ] || continue
  echo "=== $(basename "$t")"
  out=$(mktemp)
  "$t" --use-colour no 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  # Catch2 2.x summary: "All tests passed (A assertions in N test cases)" or
  # "test cases: N | P passed | F failed".
  if line=$(grep -E '^All tests passed' "$out" | tail -1) && [ -n "$line" ]; then
    n=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<<"$line")
    passed=$((passed + n))
  elif line=$(grep -E '^test cases:' "$out" | tail -1) && [ -n "$line" ]; then
    p=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$line")
    f=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
  fi
  if [ "$rc" -ne 0 ]; then
    bad_bins+=("$(basename "$t") (exit $rc)")
    grep -qE '^test cases:.*failed' "$out" || failed=$((failed + 1))
  fi
  rm -f "$out"
done
# Script checks of whole programs: each counts as one test.
for script in tools/bench/kvbench_smoke.sh tools/load/load_smoke.sh tools/torture/torture_smoke.sh; do
  echo "=== $script"
  if "./$script" "$build"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    bad_bins+=("$script")
  fi
done
[ ${#bad_bins[@]} -gt 0 ] && echo "failing binaries: ${bad_bins[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
