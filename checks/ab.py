"""`strata check ab`: two engines (or servers) under one profile's load, judged B
against A, in one of two modes:

- duet (the default): both serve at the same time and every request goes to
  both back to back; in several fresh pairs of engine processes one after
  another, judged across the pairs (checks/duet_pairs.py), or with --pairs 1 in
  one pair, judged on its short simultaneous blocks (checks/duet.py).
- rounds (checks/rounds.py): alternating short rounds (A B B A A B ...), one
  archive per round, judged on the pairs of adjacent rounds. For builds that
  cannot run side by side.

Either way the check's own p50 interval is its noise floor (checks/noise.py): a
key is "same" only when that interval rules out a threshold-sized change, else
"inconclusive" (exit 3) with one line saying why and what to do.

Both engines run side by side for the whole check, each on its own fresh pool
with its own collector (pointed at its pid), started in a random order
(checks/sides.py). AbSettings gathers what the profile's [ab] table and the
command's flags say, checked before anything starts; run_ab runs the check.

A side may instead be a server that is not the engine (--a-server CMD,
checks/servers.py). Then both sides are measured through the wire layer
(TC on lo, each collector following only its own side's ports), and the
profile's nfs.* datasets are read as their wire.* equivalents.
"""
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from strata.checks import duet, duet_pairs, profile, rounds, servers
from strata.checks.baselines import parse_percent
from strata.checks.errors import CheckError
from strata.checks.noise import advice, apply_floor
from strata.checks.report import Verdict, overall
from strata.checks.sides import make_sides
from strata.lab.logs import say
from strata.lab.teardown import Teardown


@dataclass
class AbSettings:
    """One A/B check: the profile, both sides, and the design's numbers (the profile's
    [ab] table overridden by the flags given)."""
    prof: profile.Profile
    sides: dict                        # "A"/"B" -> (path, rev, server command); one of them set
    design: dict                       # mode, seconds, block_seconds, rounds, round_seconds, ...
    threshold: float
    delays: dict = field(default_factory=dict)   # tier -> duration, injected into B
    server_export: str | None = None
    repo: str = "."
    output: str | None = None

    @property
    def duet(self) -> bool:
        return self.design["mode"] == "duet"

    @classmethod
    def build(cls, profile_path: str, sides: dict, flags: dict, b_delays=(), server_export=None, repo=".",
              output=None) -> "AbSettings":
        """From the profile file and the command's flags (None: not given); CheckError
        (one line) for anything that cannot run."""
        try:
            prof = profile.load(profile_path)
        except profile.ProfileError as e:
            raise CheckError(str(e)) from None
        design = {**prof.ab, **{k: v for k, v in flags.items() if v is not None}}
        s = cls(prof, sides, design, parse_percent(design["threshold"]), parse_delays(b_delays), server_export,
                repo, output)
        s._validate()
        return s

    def _validate(self):
        d, prof = self.design, self.prof
        if not self.duet and d["rounds"] % 2:
            raise CheckError(f"--rounds must be even (pairs of A and B rounds), not {d['rounds']}")
        if self.duet and d["block_seconds"] * 6 > d["seconds"]:
            raise CheckError(f"--seconds {d['seconds']} holds fewer than 6 blocks of {d['block_seconds']}s")
        if self.duet and 1 < d["pairs"] < 3:
            raise CheckError(f"--pairs {d['pairs']}: give 1 (one pair of engine processes, its blocks the unit) "
                             f"or 3 or more (fresh pairs, judged across them)")
        if self.duet and d["pairs"] > 1 and d["seconds"] // d["block_seconds"] < 2 * d["pairs"]:
            raise CheckError(f"--seconds {d['seconds']} holds fewer than 2 blocks of {d['block_seconds']}s for each "
                             f"of {d['pairs']} process pairs")
        if self.duet and prof.load.get("profile") != "randread":
            raise CheckError(f"duet mode sends each READ to both sides: it needs a randread load, not "
                             f"{prof.load.get('profile')!r} (use --mode rounds)")
        if prof.server is not None:
            raise CheckError("check ab starts both engines itself: give a profile with [engine], not [server]")
        for side, spec in self.sides.items():
            if sum(map(bool, spec)) != 1:
                s = side.lower()
                raise CheckError(f"give side {side} as --{s} PATH, --{s}-rev REV or --{s}-server CMD (one of them)")
        if self.delays and self.sides["B"][2]:
            raise CheckError("--b-inject-delay needs B to be an engine, not --b-server")
        if self.sides["A"][2] or self.sides["B"][2]:
            try:
                prof.datasets = servers.wire_datasets(prof.datasets)
            except servers.ServerError as e:
                raise CheckError(str(e)) from None
        if os.geteuid() != 0:
            raise CheckError("needs root (BPF probes); run it with sudo")


def parse_delays(specs) -> dict:
    """['nfs:10us', ...] -> {'nfs': '10us'}; CheckError on a bad one."""
    out = {}
    for spec in specs:
        tier, sep, dur = spec.partition(":")
        if not sep or tier not in profile.DELAY_TIERS or not dur:
            raise CheckError(f"--b-inject-delay {spec!r}: give TIER:DURATION, TIER one of "
                             f"{', '.join(sorted(profile.DELAY_TIERS))} (e.g. nfs:20us)")
        out[tier] = dur
    return out


def run_ab(s: AbSettings) -> Verdict:
    """Runs the check end to end and judges B against A; CheckError (or one of
    errors.FAILURES) when it cannot."""
    scratch = Path(tempfile.mkdtemp(prefix="strata-check-ab-"))
    outdir = Path(s.output) if s.output else scratch / ("duet" if s.duet else "rounds")
    try:
        try:
            outdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CheckError(f"cannot make {outdir}: {e.strerror}") from None
        sides = make_sides(s.sides, s.server_export, s.repo, s.delays, scratch)
        if s.duet and any(side.server and not side.server.uses_mountport for side in sides.values()):
            raise CheckError("duet mode connects to both servers itself: put {mountport} in each --a/--b-server "
                             "command or template (or use --mode rounds)")
        mode = (duet_pairs if s.design["pairs"] > 1 else duet) if s.duet else rounds
        try:
            with Teardown() as undo:
                results, series, extra = mode.run(s.prof, sides, s.design, s.threshold, undo, outdir,
                                                  bool(s.output))
        except servers.ServerError as e:
            raise CheckError(str(e)) from None
        floor = apply_floor(results, s.threshold)
        if overall(results) == "inconclusive":
            say("check ab", advice(floor, s.threshold, s.design["mode"]))
        extra = {**extra, "noise_floor": floor, "threshold": s.threshold, "confidence": s.design["confidence"],
                 "correction": s.design["correction"], "b_inject_delay": s.delays}
        return Verdict(results, series, sides["A"].label, sides["B"].label,
                       "blocks" if s.duet else "rounds", extra)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
