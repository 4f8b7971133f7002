#!/usr/bin/env bash
# fs_churn_scan_smoke.sh: fs_churn_scan.sh --quick with one MatrixFS binary
# and tmpfs, and fs_rm_cost.sh at small sizes, for `make test`. Usage:
# tools/bench/fs_churn_scan_smoke.sh [BUILD_DIR] (default build). Checks:
#   - both scripts exit 0;
#   - fs_churn_scan.sh: every step of both rounds has a wall time on both
#     targets, and MatrixFS's steps a CPU time and the container's rows; every
#     round has the daemon's RssAnon; the report has its tables;
#   - fs_rm_cost.sh: the engine records per file are 3 for empty files and
#     one more per 4 KiB block (D and I tombstones, the parent's I, one F
#     tombstone per block).
# Prints "fs_churn_scan smoke: OK" and exits 0, or says what failed and exits
# 1; the full output stays in a log file it names. Needs root. Times are not
# checked (STYLE.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
case $build in /*) ;; *) build="$PWD/$build" ;; esac
tmp=$(mktemp -d /tmp/fs-churn-scan-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/out.log
fail() {
  echo "fs_churn_scan smoke: FAILED: $*" >&2
  cat "$log" >&2
  exit 1
}
tools/bench/fs_churn_scan.sh --quick --bin mx="$build/bin/matrixfs" --only tmpfs --work "$tmp/scan" \
  >"$log" 2>&1 || fail "fs_churn_scan.sh exited $?"
for r in 1 2; do
  for t in mx tmpfs; do
    for s in tar_xf readdir du_s stat read rm_rf; do
      awk -F'\t' -v r=$r -v t=$t -v s=$s '$1 == r && $2 == t && $3 == s && $4 ~ /^[0-9.]+$/ &&
        (t != "mx" || ($5 ~ /^[0-9.]+$/ && $6 ~ /^[0-9]+$/)) {f = 1} END {exit !f}' "$tmp/scan/steps.tsv" ||
        fail "no time (or CPU time, rows) for $s of round $r on $t in $tmp/scan/steps.tsv"
    done
  done
  awk -F'\t' -v r=$r '$1 == r && $2 == "mx" && $3 ~ /^[0-9.]+$/ {f = 1} END {exit !f}' "$tmp/scan/rounds.tsv" ||
    fail "no RssAnon for round $r in $tmp/scan/rounds.tsv"
done
grep -q '^| rm_rf |' "$log" || fail "no rm_rf row in the report"
grep -q '^| mx rm_rf |' "$log" || fail "no per-round rm_rf row in the report"

tools/bench/fs_rm_cost.sh --build "$build" --sizes 0,8192 --files 150 --rounds 1 --work "$tmp/rm" \
  >>"$log" 2>&1 || fail "fs_rm_cost.sh exited $?"
for want in "0 3" "8192 5"; do
  set -- $want
  awk -F'\t' -v s="$1" -v k="$2" '$2 == s && int($6 / $3) == k {f = 1} END {exit !f}' "$tmp/rm/rm.tsv" ||
    fail "fs_rm_cost.sh: not $2 engine records per file of $1 bytes in $tmp/rm/rm.tsv"
done
echo "fs_churn_scan smoke: OK"
