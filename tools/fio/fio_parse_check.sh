#!/usr/bin/env bash
# fio_parse_check.sh: the fio job files of tools/fio/ are valid, for
# `make test` (tests/run-tests.sh). Checks that each workload named below has
# its job file, that every *.fio passes `fio --parse-only` with FIO_DIR set,
# and that each one is refused without FIO_DIR (so none writes into the
# current directory by mistake). Prints "fio job files: OK (N files)" and
# exits 0, or names the file that failed and exits 1.
# Usage: tools/fio/fio_parse_check.sh [BUILD_DIR] (BUILD_DIR is not used).
set -uo pipefail
cd "$(dirname "$0")" || exit 1
command -v fio >/dev/null || { echo "fio job files: fio is not installed (make deps installs it)" >&2; exit 1; }
failed=0
for w in small_files metadata rand4k seq1m mixed7030; do
  [ -f "$w.fio" ] || { echo "fio job files: $w.fio is missing" >&2; failed=1; }
done
n=0
dir=$(mktemp -d /tmp/fio-parse.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for f in *.fio; do
  n=$((n + 1))
  if ! out=$(FIO_DIR=$dir fio --parse-only "$f" 2>&1); then
    echo "fio job files: $f does not parse: $out" >&2
    failed=1
  fi
  if (unset FIO_DIR; fio --parse-only "$f" >/dev/null 2>&1); then
    echo "fio job files: $f parses without FIO_DIR (its directory must come from FIO_DIR)" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "fio job files: OK ($n files)"
