#!/usr/bin/env bash
# fs_workloads_smoke.sh: fs_workloads.sh --quick on MatrixFS (default mount)
# and tmpfs, for `make test`. Usage: tools/bench/fs_workloads_smoke.sh [BUILD_DIR]
# (default build). Checks, from its report and raw file:
#   - it exits 0: every step (tar, du, find|stat, rm, git, ccache, 2 and 4
#     clients) succeeded on both targets;
#   - every step has a time on both targets;
#   - MatrixFS's tar_xf cost at least one FUSE request per tarball entry (the
#     request counting from .matrixfs/stats works);
#   - with ccache installed, the warm rebuild hit the cache for every file.
# Prints "fs_workloads smoke: OK" and exits 0, or says what failed and exits 1;
# the full output stays in a log file it names. Needs root. Times are not
# checked (STYLE.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
tmp=$(mktemp -d /tmp/fs-workloads-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/out.log
fail() {
  echo "fs_workloads smoke: FAILED: $*" >&2
  cat "$log" >&2
  exit 1
}
tools/bench/fs_workloads.sh --quick --only matrixfs,tmpfs --modes default --build "$build" \
  --tsv "$tmp/raw.tsv" >"$log" 2>&1 || fail "fs_workloads.sh exited $?"

steps="tar_xf du_s find_stat rm_rf git_clone git_status_cold git_status_warm git_checkout
       tar_xf_2c find_stat_2c rm_rf_2c tar_xf_4c find_stat_4c rm_rf_4c"
command -v ccache >/dev/null && steps+=" ccache_cold ccache_warm"
for s in $steps; do
  for t in matrixfs tmpfs; do
    awk -F'\t' -v s="$s" -v t="$t" '$2 == s && $3 == t && $4 ~ /^[0-9.]+$/ {f = 1} END {exit !f}' "$tmp/raw.tsv" ||
      fail "no time for $s on $t in $tmp/raw.tsv"
  done
done
entries=$(sed -nE 's/^tree: .*, ([0-9]+) entries,.*/\1/p' "$log")
[ -n "$entries" ] || fail "no 'tree:' line in the report"
req=$(awk -F'\t' '$2 == "tar_xf" && $3 == "matrixfs" {print $5 + 0}' "$tmp/raw.tsv")
[ "${req:-0}" -ge "$entries" ] || fail "tar_xf on matrixfs counted ${req:-0} FUSE requests for $entries entries"
if command -v ccache >/dev/null; then
  grep -Eq 'ccache_warm matrixfs hit 100% \(([1-9][0-9]*)/\1\)' "$log" || fail "the warm ccache rebuild missed the cache"
fi
echo "fs_workloads smoke: OK"
