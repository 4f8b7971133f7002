#!/usr/bin/env bash
# Runs libFuzzer targets for a bounded time each, starting from the seed
# corpus in tests/fuzz/corpus/<name>/ (read only: new inputs go to
# FUZZ_BUILD/corpus/<name>/, crashes to FUZZ_BUILD/artifacts/).
#
#   run-fuzz.sh FUZZ_BUILD SECONDS TARGET...
#
# Exits non-zero if any target found a crash, leak, hang or UB; the input
# that did it is named in the output (keep it under tests/fuzz/regressions/
# and add it to the layer's fuzz_regression_test.cc).
set -uo pipefail
build=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
failed=()
for t in "$@"; do
  bin="$build/bin/${t}_fuzz"
  [ -x "$bin" ] || { echo "missing $bin" >&2; failed+=("$t"); continue; }
  work="$build/corpus/$t"
  art="$build/artifacts"
  mkdir -p "$work" "$art" "$here/corpus/$t"
  echo "=== ${t}_fuzz for ${secs}s"
  log="$build/${t}_fuzz.log"
  # -rss_limit_mb/-malloc_limit_mb: a reader that allocates what a corrupt
  # length says is a bug too. -timeout: one input must not take 10 s.
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$art/${t}-" -print_final_stats=1 "$work" "$here/corpus/$t" >"$log" 2>&1
  rc=$?
  grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" | tr '\n' ' '
  echo
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    grep -E 'ERROR|SUMMARY|Test unit written|invariant' "$log" | head -8
    echo "full log: $log"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
echo "fuzz: $# targets ran ${secs}s each, nothing found"
