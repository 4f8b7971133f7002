#!/usr/bin/env bash
# load_smoke.sh: the short load run for `make test` (tests/run-tests.sh):
# tools/load/load_run.sh for 20 s with a sample every 2 s.
# Usage: tools/load/load_smoke.sh [BUILD_DIR]
cd "$(dirname "$0")/../.." || exit 1
DURATION=${DURATION:-20} SAMPLE=${SAMPLE:-2} exec tools/load/load_run.sh "${1:-build}"
