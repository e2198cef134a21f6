#!/bin/sh
# strata launcher (installed as PREFIX/bin/strata): runs the strata package from its
# private virtual environment in PREFIX/lib/strata, and finds strata-collect,
# strata-engine and strata-load next to itself. Relocatable: paths follow this file.
here=$(dirname "$(readlink -f "$0")")
venv="$here/../lib/strata"
export STRATA_BIN_DIR="${STRATA_BIN_DIR:-$here}"
exec "$venv/bin/python" "$venv/bin/strata" "$@"
