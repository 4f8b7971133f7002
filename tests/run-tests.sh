#!/usr/bin/env bash
# Runs every test suite (each BUILD/bin/test_* Catch2 binary, then the script
# checks of whole programs) and prints one line per suite and a closing
#   tests: N passed, M failed
# line, counting Catch2 test cases across binaries and one test per script.
#
#   tests/run-tests.sh BUILD [BUILD-COMMAND...]
#
# With a BUILD-COMMAND (make test passes its sub-make) that runs first, as
# the "build" line. Everything a suite prints goes to BUILD/test-logs/
# SUITE.log; the terminal shows it only when the suite fails (its failing
# test cases, or the log's tail, and where the full log is). So the errors
# that the fault-injection tests provoke on purpose stay in the logs.
#
# Environment: TEST_ARGS, extra Catch2 arguments for every binary (e.g.
# TEST_ARGS='~[uring]'); TEST_TIMEOUT, seconds a suite may take (1800).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
logs=$build/test-logs
mkdir -p "$logs"
timeout_s=${TEST_TIMEOUT:-1800}
read -ra catch_args <<<"${TEST_ARGS:-}"

passed=0
failed=0
bad=()
t_all=$SECONDS

# line STATUS SUITE DETAIL SECONDS: the one line a suite gets.
line() { printf '%-7s %-34s %-34s %4d s\n' "$1" "$2" "$3" "$4"; }
# On a terminal, what is running until its line replaces it.
running() { if [ -t 1 ]; then printf '%-7s %-34s %s\r' ... "$1" "${2:-}"; fi; }

# The failing test cases of a Catch2 console log: each case's name (the
# header between two dashed lines) and its FAILED blocks, at most 60 lines.
catch_failures() {
  awk '
    /^-+$/ && length($0) > 70 { if (hdr) { hdr = 0 } else { hdr = 1; name = "" }; next }
    hdr { sub(/^ +/, ""); name = name (name == "" ? "" : " / ") $0; next }
    /FAILED:$/ { if (name != shown) { print "  " name; shown = name }; grab = 1 }
    grab { print "    " $0; if ($0 == "") grab = 0 }
  ' "$1" | head -60
}

# report_failure LOG: what the terminal shows of a failing suite.
report_failure() {
  local log=$1 shown
  shown=$(catch_failures "$log")
  if [ -n "$shown" ]; then
    echo "$shown"
  else
    tail -n 25 "$log" | sed 's/^/    /'
  fi
  echo "    full log: $log"
}

if [ $# -gt 0 ]; then
  t0=$SECONDS
  running build "(log: $logs/build.log)"
  if "$@" >"$logs/build.log" 2>&1; then
    line ok build "$logs/build.log" $((SECONDS - t0))
  else
    line FAILED build "" $((SECONDS - t0))
    grep -E 'error|Error' "$logs/build.log" | head -30 | sed 's/^/    /'
    echo "    full log: $logs/build.log"
    echo "tests: not run (the build failed)"
    exit 1
  fi
fi

for t in "$build"/bin/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  log=$logs/$name.log
  t0=$SECONDS
  running "$name"
  timeout --foreground -k 30 "$timeout_s" "$t" --use-colour no "${catch_args[@]}" >"$log" 2>&1
  rc=$?
  # Catch2 2.x summary: "All tests passed (A assertions in N test cases)" or
  # "test cases: N | P passed | F failed".
  p=0 f=0 n=
  if l=$(grep -E '^All tests passed' "$log" | tail -1) && [ -n "$l" ]; then
    n=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<<"$l")
    p=$n
  elif l=$(grep -E '^test cases:' "$log" | tail -1) && [ -n "$l" ]; then
    n=$(sed -nE 's/^test cases: *([0-9]+).*/\1/p' <<<"$l")
    p=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$l")
    f=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$l")
    p=${p:-0} f=${f:-0}
  fi
  # A crash or a timeout ends the binary before its summary: one failure.
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" -eq 0 ]; then
    line ok "$name" "${n:-0} test cases" $((SECONDS - t0))
  else
    why="exit $rc"
    [ "$rc" -eq 124 ] && why="timed out after $timeout_s s"
    line FAILED "$name" "$f of ${n:-?} test cases failed ($why)" $((SECONDS - t0))
    report_failure "$log"
    bad+=("$name")
  fi
done

# Script checks of whole programs: each counts as one test.
for script in tools/bench/kvbench_smoke.sh tools/bench/fs_workloads_smoke.sh tools/bench/fs_churn_scan_smoke.sh \
              tools/bench/fs_build_mix_smoke.sh \
              tools/load/load_smoke.sh tools/torture/torture_smoke.sh tools/fio/fio_parse_check.sh; do
  [ -x "$script" ] || continue
  name=$(basename "$script" .sh)
  log=$logs/$name.log
  t0=$SECONDS
  running "$name"
  timeout --foreground -k 30 "$timeout_s" "./$script" "$build" >"$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    line ok "$name" "1 test" $((SECONDS - t0))
  else
    failed=$((failed + 1))
    line FAILED "$name" "exit $rc" $((SECONDS - t0))
    report_failure "$log"
    bad+=("$name")
  fi
done

[ ${#bad[@]} -gt 0 ] && echo "failing suites: ${bad[*]}"
echo "tests: $passed passed, $failed failed ($(( (SECONDS - t_all) / 60 )) min $(( (SECONDS - t_all) % 60 )) s; logs in $logs/)"
[ "$failed" -eq 0 ] && [ ${#bad[@]} -eq 0 ]
