"""enginewindows.py — what the engine's probes cost in all (bench/collect_engine.sh runs it):
the whole CPU time the datasets add per operation, in short windows of one steady load.

One strata-load runs at a fixed rate against one engine for a segment of CYCLES cycles;
each cycle switches the datasets of every configuration on in a window of its own, between
windows with none ("N c1 N c2 N ..."; the order of the configurations is shuffled each
cycle). A window starts SETTLE seconds after the collector acked its adds and lasts WINDOW
seconds. Each window reads, from /proc (schedstat: on-CPU time of every thread), the CPU
time of the engine, of its collector and of the load; the operations the engine answered
(its stats socket); and the run count and time of the collector's nfs programs (the
kernel's BPF statistics, from the programs' fdinfo). A configuration's cost per operation
is its figure less that of the windows without datasets of the same cycles (least squares,
an intercept per cycle: that cancels the machine's drift, tens of percent over a minute on
a loaded host), with a 95 % bootstrap interval over cycles; raw, and adjusted with the load
generator's CPU per op held equal (it follows the machine's state as the engine's does).
Windows where the load ran under half its rate (a stalled host) are left out, and counted.
Whole cost = engine + collector (everything the probe adds: the uprobe trap,
BPF, its helpers, the engine's work for the probe, the collector's reads); the load's own
CPU is shown apart. With two sides (a before build) the segments alternate sides, the
first side swapped each segment.

Paired (collect_engine.sh without a before build): two engines of this tree, each with its collector and its own steady
load, both at once. In each window one engine has a configuration's datasets and the other
none; each configuration is on each engine once per cycle, in a shuffled order. A window's
difference between the engines (per op) holds the machine's state only as far as it hits
one engine and not the other, and the swap cancels any lasting difference between them:
cost = half the difference between the two orientations of a cycle (least squares with an
intercept per cycle, the loads' difference per op held equal when adjusted).

Planted cost: configuration "plant" is "one" plus more counters of the counting keys, on the
same probe (strata:nfs_keys). They add only BPF work per hit (the trap and the engine's
work are the same), which the kernel times exactly, so the engine's CPU must rise by the
BPF time they add; the output says whether the interval of the measured rise holds it.

usage: enginewindows.py OUT SPEC_JSON | report OUT SPEC_JSON   (the spec: collect_engine.sh)"""
import glob
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np


def cpu_ns(pid):
    """(on-CPU ns, times switched onto a CPU) of every thread of pid so far (schedstat;
    threads that ended are lost: the engine's, the collector's and the load's threads live
    as long as their process)."""
    ns = runs = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            v = open(f).read().split()
            ns, runs = ns + int(v[0]), runs + int(v[2])
        except (OSError, IndexError, ValueError):
            pass
    return ns, runs


def engine_ops(sock_path):
    """(NFS operations the engine answered so far, ns its threads spent in the hits of its
    nfs probes so far: its clock across each, the trap, the kernel's dispatch and BPF; its
    stats socket)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock_path)
    s.sendall(b"stats\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    stats = json.loads(data)
    return sum(stats["nfs"].values()), stats.get("probes", {}).get("nfs_ops_ns", 0)  # 0: a BEFORE_ENGINE without it


def prog_ids(pid, pattern):
    """Ids of the BPF programs of process pid whose name matches pattern."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True, check=True).stdout
    return {p["id"] for p in json.loads(out) if re.fullmatch(pattern, p.get("name", ""))} & fd_progs(pid).keys()


def fd_progs(pid):
    """{prog id: (run count, run ns)} of the BPF programs process pid holds (fdinfo)."""
    progs = {}
    for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            text = open(f).read()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s*(\d+)", text, re.M)
        if m and text.find("prog_type:") >= 0:  # a program (a link's fdinfo names its program too)
            cnt = re.search(r"^run_cnt:\s*(\d+)", text, re.M)
            ns = re.search(r"^run_time_ns:\s*(\d+)", text, re.M)
            progs[int(m.group(1))] = (int(cnt.group(1)) if cnt else 0, int(ns.group(1)) if ns else 0)
    return progs


def raise_semaphore(pid, probe, by):
    """Adds by to the USDT semaphore of the engine's probe strata:PROBE in its memory, as the
    kernel does when a uprobe with that semaphore attaches (the address from the binary's
    stapsdt note, moved by where the binary is mapped)."""
    exe = os.readlink(f"/proc/{pid}/exe")
    notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True, check=True).stdout
    m = re.search(rf"Provider: strata\n\s*Name: {probe}\n\s*Location: \S+, Base: \S+, Semaphore: (0x[0-9a-f]+)", notes)
    base = next(int(line.split("-")[0], 16) for line in open(f"/proc/{pid}/maps")
                if line.split()[-1] == exe and int(line.split()[2], 16) == 0)
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
        mem.seek(base + int(m.group(1), 16))
        count = int.from_bytes(mem.read(2), "little")
        mem.seek(base + int(m.group(1), 16))
        mem.write((count + by).to_bytes(2, "little"))


class Side:
    """One engine with its collector (commands through a fifo, replies in a file)."""

    def __init__(self, d):
        self.name, self.engine, self.collector = d["name"], d["engine_pid"], d["collector_pid"]
        self.nfs_port, self.mount_port, self.sock = d["nfs_port"], d["mount_port"], d["stats_socket"]
        self.ctl = open(d["ctl"], "w", buffering=1)
        self.replies = d["replies"]
        self.ids = set()
        self.on = []  # ids of the datasets switched on
        self.raised = []  # probes whose semaphore this bench raised

    def replies_count(self):
        with open(self.replies) as f:
            return sum(1 for line in f if '"type":"ack"' in line or '"type":"error"' in line)

    def command(self, lines):
        """Writes command lines and waits for their replies (an error stops the bench)."""
        if not lines:
            return
        n = self.replies_count()
        self.ctl.write("".join(f"{l}\n" for l in lines))
        deadline = time.monotonic() + 30
        while self.replies_count() < n + len(lines):
            if time.monotonic() > deadline:
                sys.exit(f"enginewindows: the collector of {self.name} did not answer {lines}")
            time.sleep(0.01)
        with open(self.replies) as f:
            errors = [l for l in f if '"type":"error"' in l]
        if errors:
            sys.exit(f"enginewindows: strata-collect failed: {errors[-1].strip()}")

    def switch(self, adds):
        """Switches to the configuration's lines: the collector's adds, and "semaphore PROBE"
        (the probe's semaphore raised from outside: the engine's work for the probe alone,
        with no uprobe, so no trap and no BPF)."""
        sems = [a.split()[1] for a in adds if a.startswith("semaphore ")]
        adds = [a for a in adds if not a.startswith("semaphore ")]
        for probe in self.raised:
            raise_semaphore(self.engine, probe, -1)
        self.command([f"remove {i}" for i in self.on] + adds)
        self.on = [a.split()[1] for a in adds]
        for probe in sems:
            raise_semaphore(self.engine, probe, +1)
        self.raised = sems
        if adds and not self.ids:
            self.ids = prog_ids(self.collector, "nfs_(keys|ops)")

    def bpf(self):
        """(batches the engine's probes fired, ns of BPF in them): each of the nfs programs
        runs once a batch while attached, and both of them when both are."""
        progs = fd_progs(self.collector)
        return (max((progs.get(i, (0, 0))[0] for i in self.ids), default=0),
                sum(progs.get(i, (0, 0))[1] for i in self.ids))

    def reading(self):
        """(monotonic s, engine ops, engine ns, engine switches, collector ns, load ns,
        BPF runs, BPF ns, the engine's ns in probe hits)."""
        ops0, hit0 = engine_ops(self.sock)
        (e, es), (c, _), (l, _) = cpu_ns(self.engine), cpu_ns(self.collector), cpu_ns(self.load.pid)
        runs, ns = self.bpf()
        ops1, hit1 = engine_ops(self.sock)
        return time.monotonic(), (ops0 + ops1) / 2, e, es, c, l, runs, ns, (hit0 + hit1) / 2


def start_load(side, args):
    """strata-load's steady randread against side's engine, for as long as the segment runs."""
    return subprocess.Popen(
        ["build/bin/strata-load", "--server", "127.0.0.1", "--nfsport", str(side.nfs_port), "--mountport",
         str(side.mount_port), "--export", args["export"], "--profile", "randread", "--io-size", "8k",
         "--clients", "4", "--threads", "8", "--duration", "3600", *args["load_args"]],
        stdout=subprocess.DEVNULL)


def segment(side, plan, args, out, seg, rng):
    """One steady load on side's engine through CYCLES cycles of windows."""
    side.load = start_load(side, args)
    time.sleep(args["warm"])  # mounted, running at its rate
    kinds = list(plan)
    for cyc in range(args["cycles"]):
        rng.shuffle(kinds)
        order = []
        for k in kinds:
            order += ["none", k]
        if cyc == args["cycles"] - 1:
            order.append("none")
        for cfg in order:
            side.switch(plan.get(cfg, []))
            time.sleep(args["settle"])
            a = side.reading()
            time.sleep(args["window"])
            b = side.reading()
            out.write(" ".join(map(str, [side.name, seg, cyc, cfg, *(round(y - x, 6) for x, y in zip(a, b))])) + "\n")
            out.flush()
    side.switch([])
    side.load.send_signal(signal.SIGINT)
    side.load.wait()


def paired_segment(sides, plan, args, out, seg, rng):
    """Both engines under a steady load each, at once, through CYCLES cycles of windows; in
    each window one side has a configuration's datasets and the other none."""
    for side in sides:
        side.load = start_load(side, args)
    time.sleep(args["warm"])
    windows = [(k, s) for k in plan for s in range(len(sides))]
    for cyc in range(args["cycles"]):
        rng.shuffle(windows)
        for w, (k, on) in enumerate(windows):
            for i, side in enumerate(sides):
                side.switch(plan[k] if i == on else [])
            time.sleep(args["settle"])
            a = [side.reading() for side in sides]
            time.sleep(args["window"])
            b = [side.reading() for side in sides]
            for i, side in enumerate(sides):
                cfg = k if i == on else "none"
                out.write(" ".join(map(str, [side.name, seg, cyc, cfg, w, k, *(round(y - x, 6) for x, y in zip(a[i], b[i]))])) + "\n")
            out.flush()
    for side in sides:
        side.switch([])
        side.load.send_signal(signal.SIGINT)
        side.load.wait()


class Windows:
    """The windows of one side, per operation: y[k] the figures, cfg the configuration,
    cyc the cycle (segment, cycle) each belongs to."""

    def __init__(self, rows):
        ops = np.array([float(r[5]) / float(r[4]) for r in rows])
        self.stalled = [r for r, o in zip(rows, ops) if o < np.median(ops) / 2]
        rows = [r for r, o in zip(rows, ops) if o >= np.median(ops) / 2]  # the load stalled: a busy host's pause
        self.cfg = [r[3] for r in rows]
        cycles = sorted({(int(r[1]), int(r[2])) for r in rows})
        self.cyc = np.array([cycles.index((int(r[1]), int(r[2]))) for r in rows])
        v = np.array([[float(x) for x in r[4:]] for r in rows])
        secs, ops, eng, switches, coll, load, runs, bpf, hit = v.T
        self.ops_per_s = ops / secs
        self.y = dict(whole=(eng + coll) / ops, engine=eng / ops, collector=coll / ops, load=load / ops,
                      bpf=bpf / ops, hit=hit / ops, switches=switches / ops, hits=runs / ops)

    def fit(self, kinds, key, covariates=(), cycles=None):
        """Each configuration's figure less the windows without datasets of the same cycles
        (least squares, an intercept per cycle), the covariates held equal; over the
        cycles given (a bootstrap's draw), else all."""
        cycles = np.arange(self.cyc.max() + 1) if cycles is None else cycles
        rows = np.concatenate([np.flatnonzero(self.cyc == c) for c in cycles])
        group = np.repeat(np.arange(len(cycles)), [np.count_nonzero(self.cyc == c) for c in cycles])
        cfg = np.array(self.cfg)[rows]
        X = np.column_stack([(cfg == k).astype(float) for k in kinds] + [self.y[c][rows] for c in covariates])
        y = self.y[key][rows]

        def demean(a):
            sums = np.zeros((len(cycles),) + a.shape[1:])
            np.add.at(sums, group, a)
            return a - (sums / np.bincount(group, minlength=len(cycles)).reshape((-1,) + (1,) * (a.ndim - 1)))[group]

        beta = np.linalg.lstsq(demean(X), demean(y), rcond=None)[0]
        return dict(zip(kinds, beta[:len(kinds)]))

    def estimate(self, kinds, key, covariates=(), rng=None, draws=1000):
        """{config: (estimate, low, high)}: the 95 % percentile-bootstrap interval over cycles."""
        est = self.fit(kinds, key, covariates)
        n = self.cyc.max() + 1
        boot = [self.fit(kinds, key, covariates, rng.integers(0, n, n)) for _ in range(draws)]
        return {k: (est[k], *np.percentile([b[k] for b in boot], [2.5, 97.5])) for k in kinds}

    def mean(self, cfg, key):
        return float(np.mean([v for c, v in zip(self.cfg, self.y[key]) if c == cfg]))


LABELS = {"one": ("nfs.ops[op]", 0.5), "sem": ("engine's part", None), "semops": ("engine's part, whole ops", None),
          "four": ("4 datasets", 2.0), "keyless": ("4 keyless", None), "plant": ("planted", None)}
COVARIATES = ("load",)  # the load generator's CPU per op: it moves with the machine's state as the engine's does, not with the probe


def print_planted(planted, fit, n, variants, rng):
    """Whether the engine's rise from "one" to "plant" holds the BPF time the kernel timed
    (planted, ns/op): fit(variant, cycles or None) -> {configuration: cost}, n cycles, each
    variant (how the fit is made, its name) with a 95 % bootstrap interval over cycles."""
    for variant, name in variants:
        est = fit(variant, None)
        boot = []
        for _ in range(1000):
            b = fit(variant, rng.integers(0, n, n))
            boot.append(b["plant"] - b["one"])
        lo, hi = np.percentile(boot, [2.5, 97.5])
        got = est["plant"] - est["one"]
        print(f"  planted cost: the kernel timed {planted:.1f} ns/op more BPF with 6 more counters of keys beside "
              f"nfs.ops[op]; the engine's CPU rose {name} {got:+.0f} [{lo:+.0f}, {hi:+.0f}] ns/op: "
              f"{'recovered (within the interval)' if lo <= planted <= hi else 'NOT recovered'}")


def per_hit(hits_per_op):
    return f"{1 / hits_per_op:.0f} ops per probe hit" if hits_per_op else "no probe hits"


def show(x, fmt="+.0f", unit=""):
    m, lo, hi = x
    return f"{m:{fmt}}{unit} [{lo:{fmt}}, {hi:{fmt}}]"


def report(path, spec):
    rows = [l.split() for l in open(path)]
    rng = np.random.default_rng(1)
    kinds = [k for k in spec["configs"] if k != "none"]
    cores, rate, capacity = spec["cores"], spec["rate"], spec["capacity"]
    machine = cores * 1e9 / capacity  # the machine's CPU per op at full speed, ns
    sides = [d["name"] for d in spec["sides"]]
    w = {s: Windows([r for r in rows if r[0] == s]) for s in sides}
    print(f"engine randread 8k at {rate} ops/s, 4 clients x 8 threads; {spec['segments']} segment(s) per side of "
          f"{spec['cycles']} cycles, a window of {spec['window']} s per configuration and cycle between windows without "
          f"datasets; {cores} CPUs, full speed {capacity} ops/s = {machine:.0f} ns of CPU per op. Per op, each "
          f"configuration less the windows without datasets of its cycles [95 % bootstrap interval over cycles]; "
          f"whole = engine + collector (schedstat); adjusted: the load's CPU per op held "
          f"equal (least squares; it follows the machine's state as the engine's CPU does)")
    res = {}
    for s in sides:
        W = w[s]
        res[s] = {key: W.estimate(kinds, key, (), rng) for key in ("whole", "engine", "collector", "load", "switches")}
        res[s]["adj"] = W.estimate(kinds, "whole", COVARIATES, rng)
        res[s]["adj_engine"] = W.estimate(kinds, "engine", COVARIATES, rng)
        print(f"{s}: {len(W.cfg)} windows ({len(W.stalled)} more left out, where the load ran under half its rate); no datasets {np.mean(W.ops_per_s):.0f} ops/s, "
              f"engine CPU {W.mean('none', 'engine'):.0f} ns/op, load CPU {W.mean('none', 'load'):.0f} ns/op")
        for k in kinds:
            label, goal = LABELS[k]
            r = res[s]
            share = tuple(100 * x / machine for x in r["adj"][k])
            print(f"  {label:12s} whole {show(r['whole'][k])} ns/op, adjusted {show(r['adj'][k])} ns/op = "
                  f"{show(share, '+.2f', ' %')} of the machine{f' (goal <= {goal} %)' if goal else ''}; "
                  f"engine {show(r['engine'][k])}, adjusted {show(r['adj_engine'][k])}; of it hits "
                  f"{W.mean(k, 'hit'):.1f} ns/op (the engine's clock), of them BPF {W.mean(k, 'bpf'):.1f} (kernel); collector {show(r['collector'][k])}; load {show(r['load'][k])}; "
                  f"engine switches {show(r['switches'][k], '+.4f')} per op; "
                  f"{per_hit(W.mean(k, 'hits'))}")
        if "plant" in kinds and "one" in kinds:
            planted = W.mean("plant", "bpf") - W.mean("one", "bpf")
            print_planted(planted, lambda cov, cycles: W.fit(["one", "plant"], "engine", cov, cycles),
                          W.cyc.max() + 1, (((), "measured"), (COVARIATES, "adjusted")), rng)
    if len(sides) == 2:
        print("after against before:")
        a, b = w[sides[0]], w[sides[1]]
        na, nb = a.cyc.max() + 1, b.cyc.max() + 1
        for k in [k for k in kinds if k != "plant"]:
            d, r = [], []
            for _ in range(1000):
                fa = a.fit([k], "whole", COVARIATES, rng.integers(0, na, na))[k]
                fb = b.fit([k], "whole", COVARIATES, rng.integers(0, nb, nb))[k]
                d.append(fa - fb)
            est = res[sides[0]]["adj"][k][0] - res[sides[1]]["adj"][k][0]
            ba, bb = (np.array([v for c, v in zip(x.cfg, x.y["bpf"]) if c == k]) for x in (a, b))
            ratios = [rng.choice(ba, len(ba)).mean() / rng.choice(bb, len(bb)).mean() for _ in range(1000)]
            print(f"  {LABELS[k][0]:12s} whole after - before (adjusted) {est:+.0f} "
                  f"[{np.percentile(d, 2.5):+.0f}, {np.percentile(d, 97.5):+.0f}] ns/op; BPF after/before "
                  f"{ba.mean() / bb.mean():.3f} [{np.percentile(ratios, 2.5):.3f}, {np.percentile(ratios, 97.5):.3f}]")


class Pairs:
    """The windows of a paired run, one row per window: which configuration and which side
    had it (sign +1: the first side), and the first side's figure less the second's, per op."""

    def __init__(self, rows, names):
        by = {}
        for r in rows:
            by.setdefault((int(r[1]), int(r[2]), int(r[4])), {})[r[0]] = r
        keep, self.stalled = [], 0
        per = {}
        for key, pair in sorted(by.items()):
            if len(pair) != 2:
                continue
            fig = {}
            for name, r in pair.items():
                secs, ops, eng, switches, coll, load, runs, bpf, hit = (float(x) for x in r[6:])
                fig[name] = dict(rate=ops / secs, whole=(eng + coll) / ops, engine=eng / ops, collector=coll / ops,
                                 load=load / ops, bpf=bpf / ops, hit=hit / ops, hits=runs / ops, cfg=r[3], k=r[5])
            keep.append((key, fig))
        rates = np.array([f[n]["rate"] for _, f in keep for n in names])
        floor = np.median(rates) / 2
        rows = [(key, f) for key, f in keep if all(f[n]["rate"] >= floor for n in names)]
        self.stalled = len(keep) - len(rows)
        cycles = sorted({key[:2] for key, _ in rows})
        self.cyc = np.array([cycles.index(key[:2]) for key, _ in rows])
        self.rows_of = [np.flatnonzero(self.cyc == c) for c in range(len(cycles))]  # each cycle's rows
        self.within = {}  # (kinds, key, adjusted): the fit's columns and difference less their cycle means
        self.k = [f[names[0]]["k"] for _, f in rows]
        self.sign = np.array([1.0 if f[names[0]]["cfg"] != "none" else -1.0 for _, f in rows])
        self.d = {m: np.array([f[names[0]][m] - f[names[1]][m] for _, f in rows])
                  for m in ("whole", "engine", "collector", "load")}
        self.bpf = {k: float(np.mean([f[n]["bpf"] for _, f in rows for n in names if f[n]["cfg"] == k]))
                    for k in set(self.k)}
        self.hits, self.hit = ({k: float(np.mean([f[n][m] for _, f in rows for n in names if f[n]["cfg"] == k]))
                                for k in set(self.k)} for m in ("hits", "hit"))
        self.rate = float(np.mean(rates))

    def fit(self, kinds, key, adjusted, cycles=None):
        """{configuration: cost per op} by least squares: the difference = sign x cost, plus an
        intercept per cycle (the engines' lasting difference), plus the loads' difference when
        adjusted; over the cycles given (a bootstrap's draw, a cycle drawn twice counted twice),
        else all. Also the residuals' sd. The intercepts are taken out by subtracting each
        cycle's means (the same fit, Frisch-Waugh-Lovell), so a fit costs rows x columns, not
        rows x cycles."""
        X, y = self._within(tuple(kinds), key, adjusted)
        rows = np.concatenate([self.rows_of[c] for c in cycles]) if cycles is not None else np.arange(len(y))
        beta = np.linalg.lstsq(X[rows], y[rows], rcond=None)[0]
        return dict(zip(kinds, beta[:len(kinds)])), float(np.std(y[rows] - X[rows] @ beta))

    def _within(self, kinds, key, adjusted):
        """The fit's columns and the difference, less their means within each cycle (cached)."""
        memo = self.within
        if (kinds, key, adjusted) not in memo:
            k = np.array(self.k)
            X = np.column_stack([self.sign * (k == c) for c in kinds] + ([self.d["load"]] if adjusted else []))
            y = self.d[key].astype(float)
            counts = np.bincount(self.cyc)
            X = X - (np.stack([np.bincount(self.cyc, X[:, j]) for j in range(X.shape[1])], 1) / counts[:, None])[self.cyc]
            y = y - (np.bincount(self.cyc, y) / counts)[self.cyc]
            memo[kinds, key, adjusted] = X, y
        return memo[kinds, key, adjusted]

    def estimate(self, kinds, key, adjusted, rng, draws=1000):
        est, sd = self.fit(kinds, key, adjusted)
        n = self.cyc.max() + 1
        boot = [self.fit(kinds, key, adjusted, rng.integers(0, n, n))[0] for _ in range(draws)]
        return {k: (est[k], *np.percentile([b[k] for b in boot], [2.5, 97.5])) for k in kinds}, sd


def report_paired(path, spec):
    rows = [l.split() for l in open(path)]
    rng = np.random.default_rng(1)
    kinds = [k for k in spec["configs"] if k != "none"]
    cores, rate, capacity = spec["cores"], spec["rate"], spec["capacity"]
    machine = cores * 1e9 / capacity
    names = [d["name"] for d in spec["sides"]]
    P = Pairs(rows, names)
    print(f"paired: two engines, each under randread 8k at {rate} ops/s (4 clients x 8 threads) at once; "
          f"{spec['segments']} segment(s) of {spec['cycles']} cycles, a window of {spec['window']} s per configuration, "
          f"side and cycle, the other side without datasets; {cores} CPUs, full speed {capacity} ops/s = {machine:.0f} ns "
          f"of CPU per op. Per op: half the difference between a cycle's two orientations [95 % bootstrap interval "
          f"over cycles]; whole = engine + collector (schedstat); adjusted: the loads' difference per op held equal")
    print(f"{len(P.sign)} windows ({P.stalled} more left out, where a load ran under half its rate); "
          f"{P.rate:.0f} ops/s per engine")
    res = {}
    for key, adjusted in (("whole", False), ("whole", True), ("engine", True), ("collector", False)):
        res[key, adjusted] = P.estimate(kinds, key, adjusted, rng)
    for k in kinds:
        label, goal = LABELS[k]
        adj = res["whole", True][0][k]
        share = tuple(100 * x / machine for x in adj)
        print(f"  {label:12s} whole {show(res['whole', False][0][k])} ns/op, adjusted {show(adj)} ns/op = "
              f"{show(share, '+.2f', ' %')} of the machine{f' (goal <= {goal} %)' if goal else ''}; engine adjusted "
              f"{show(res['engine', True][0][k])}; of it hits {P.hit[k]:.1f} ns/op (the engine's clock), of them BPF "
              f"{P.bpf[k]:.1f} (kernel); collector "
              f"{show(res['collector', False][0][k])}; {per_hit(P.hits[k])}")
    print(f"  noise: the residual sd of a window's difference, {res['whole', False][1]:.0f} ns/op raw, "
          f"{res['whole', True][1]:.0f} adjusted")
    if "plant" in kinds and "one" in kinds:
        planted = P.bpf["plant"] - P.bpf["one"]
        print_planted(planted, lambda adjusted, cycles: P.fit(["one", "plant"], "engine", adjusted, cycles)[0],
                      P.cyc.max() + 1, ((False, "measured"), (True, "adjusted")), rng)


def main():
    if sys.argv[1] == "report":
        spec = json.loads(sys.argv[3])
        (report_paired if spec.get("paired") else report)(sys.argv[2], spec)
        return
    out_path, spec = sys.argv[1], json.loads(sys.argv[2])
    sides = [Side(d) for d in spec["sides"]]
    plan = {k: [l for l in v.split("\n") if l] for k, v in spec["configs"].items() if k != "none"}
    rng = random.Random(spec.get("seed", 1))
    with open(out_path, "w") as out:
        for seg in range(spec["segments"]):
            if spec.get("paired"):
                paired_segment(sides, plan, spec, out, seg, rng)
                continue
            for side in (sides if seg % 2 == 0 else sides[::-1]):
                segment(side, plan, spec, out, seg, rng)


if __name__ == "__main__":
    main()
