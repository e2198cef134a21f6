#!/bin/bash
# The script part of the shipped CI jobs (strata-check-ab.yml for GitHub Actions,
# strata-check-ab.gitlab-ci.yml for GitLab CI): judges the engine built in BASE
# (A) against the one built in HEAD (B) with `strata check ab`, and leaves in OUT
# the JUnit report, a Markdown summary, an HTML heat map of each side's read
# latency and both sides' archives. Exits 1 when B is worse (or the check could
# not run), 0 otherwise; an inconclusive check (exit 3: the runner was too noisy
# to rule out a change of the threshold's size) is a warning, or a failure with
# STRATA_FAIL_ON_INCONCLUSIVE=1.
#   usage: check-ab.sh BASE HEAD OUT   (run as root: BPF probes)
set -u
base=$1 head=$2 out=$3
profile=${STRATA_PROFILE:-$head/bench/profiles/smoke.toml}
strata=$head/.venv/bin/strata
mkdir -p "$out"
"$strata" check ab --profile "$profile" --a "$base/build" --b "$head/build" \
    --junit "$out/strata-check.xml" --markdown "$out/summary.md" -o "$out/duet" ${STRATA_CHECK_ARGS:-}
rc=$?
for side in A B; do
    # one pair of engines: duet-A.archive; fresh pairs: duet-A-1.archive ... (the first pair's map)
    for archive in "$out/duet/duet-$side.archive" "$out/duet/duet-$side-1.archive"; do
        [ -f "$archive" ] &&
            "$strata" heatmap 'nfs.latency[op=read]' --archive "$archive" \
                --percentiles 50,99 -o "$out/latency-$side.html"
    done
done
case $rc in
    0) echo "strata check ab: B is not worse than A" ;;
    1) echo "strata check ab: B is worse than A (summary: $out/summary.md)"; exit 1 ;;
    3) echo "strata check ab: inconclusive (see the line above)"
       [ "${STRATA_FAIL_ON_INCONCLUSIVE:-0}" = 1 ] && exit 1 ;;
    *) echo "strata check ab: could not run (exit $rc)"; exit 1 ;;
esac
exit 0
