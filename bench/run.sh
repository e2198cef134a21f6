#!/usr/bin/env bash
# `make bench`: runs every benchmark under bench/ (their full runs are never part of `make test`).
# Each prints its own figures, as ratios against a peer measured in the same run.
# BENCH_SMOKE=1: every benchmark's smoke mode, seconds each, every step run, its figures
# meaningless; `make test` runs each so (tests/test_bench_smoke.py): a benchmark that cannot
# run fails the tests.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for b in bench/*_*.sh bench/*_*.py; do
  [ -e "$b" ] || continue
  echo "=== $b"
  case "$b" in
    *.sh) bash "$b" || status=1 ;;
    *.py) .venv/bin/python "$b" || status=1 ;;
  esac
done
exit $status
