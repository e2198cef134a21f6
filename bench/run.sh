#!/usr/bin/env bash
# `make bench`: runs every benchmark under bench/ (never part of `make test`).
# Each prints its own figures, as ratios against a peer measured in the same run.
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
