"""Runs strata-collect for the archive's active datasets and archives what it emits.

Protocol (collectors/FORMAT.md, version 1): control lines on the daemon's
stdin (`add ID STATISTIC BREAKDOWN [FIELD=VALUE ...]`, `remove ID`, `quit`),
JSON lines on its stdout (ack / error replies, one data record per dataset per
second, status). Every batch of lines read is one archive transaction, so a
kill -9 loses at most the second in flight. Dataset changes made by other
commands are seen through the archive's change counter, polled every second;
retention is enforced every minute. stop() (SIGTERM) quits the daemon cleanly;
reload() (SIGHUP) runs the `on_reload` callback between two batches, without
stopping the daemon, then applies the dataset changes it made at once.
Given an openmetrics.Exposition, every second collected is added to it as well; every
second stored is pushed, as its transaction commits, to the subscribers of the collector's
live feed (collect/livefeed.py: `strata web` on this archive).
Rollups are written once per period (datasets/ingest.py): when a period ends, every
`flush_every` seconds (FLUSH_EVERY), for a dataset suspended or destroyed, and at stop;
what a crash leaves pending is rebuilt from the stored seconds by the next start.

Lifecycle commands beside the collector lose nothing and confuse nothing. Dataset ids
are never reused (datasets/schema.py). Every write transaction first reads, under its
own write lock, which datasets are active now: a record of a dataset destroyed or
suspended since the collector last looked is not stored, only counted per dataset (the
status file's `dropped`); so is a record reaching back to a suspend-and-resume the
collector did not see (the dataset's state_since moved), and a level a prune has cut
(its horizon) is not written again. A suspend, resume or destroy is said once, as one
line for all the datasets it changed (`suspended 21 datasets: ...`). A dataset the collector
removes and adds again gets a new daemon id (`ID.GENERATION`), so the daemon's lines
still in the pipe from before the removal are told apart and dropped. A stored second is
a whole second of an active dataset: the daemon's first record after an `add` covers only
the part of its interval after the add, and is not stored (the dataset's data starts at
its next second).

Faults of the archive never stop collection. While a batch cannot be written
(disk full, I/O error, read-only file system, the file or its folder removed),
its records are held in memory (collect/outage_hold.py), one stderr line and the
status file (collect/status.py) say what is wrong, and every batch retries;
the first batch that commits stores what was held as one record per dataset
spanning the outage. An archive file removed, or replaced by another file, is
made again at its path (folder included) holding the datasets being collected,
under the same ids; not while its file system is gone (unmounted): then the
records are held until it is back. A record whose second follows a gap in the daemon's
seconds (the daemon stalled: SIGSTOP, starved of CPU, or its output blocked)
holds the gap's events too: it is stored as spanning the gap. The daemon's interval
record says how long each interval lasted on CLOCK_MONOTONIC and by how much the wall
clock stepped (datasets/ARCHIVE.md, "Wall-clock steps"): after a step forward the
record is placed on the seconds it lasted (the labels skipped hold none), after a step
back it spans the seconds it lasted from its label on (cause `clock`); each step is said.
"""
import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import replace

from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError, BadRecord
from strata.posix.parentdeath import die_with_parent

from .livefeed import LiveFeed
from .outage_hold import Held
from .status import StatusFile, daemon_summary

MAX_LINE = 16 << 20
ERRORS_KEPT = 5     # problems the status file keeps (the last ones said)
STEP_MS = 500       # a wall-clock advance this far from the monotonic one is a step
FLUSH_EVERY = 60    # seconds between writes of the open ten-minute and hour records (and minutes)


def control_line(info, key: str) -> str:
    """The `add` line for a dataset, under the daemon id key."""
    filters = " ".join(f"{k}={v}" for k, v in sorted(info.filters.items()))
    return f"add {key} {info.statistic} {info.breakdown or '-'}" + (f" {filters}" if filters else "")


def daemon_key(ds: int, generation: int) -> str:
    """The daemon's id for the generation-th adding of dataset ds by this collector."""
    return str(ds) if generation == 0 else f"{ds}.{generation}"


def parse_key(text) -> tuple:
    """(dataset id, generation) of a daemon id; (None, None) if it is not one."""
    ds, _, gen = str(text).partition(".")
    if not ds.isdigit() or not (gen == "" or gen.isdigit()):
        return None, None
    return int(ds), int(gen or 0)


def _device_of(path):
    """The device of the nearest existing folder above path (where it would be made again)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return os.stat(folder).st_dev


class Collector:
    def __init__(self, archive: Archive, command: list, log=None, poll: float = 1.0, prune_every: float = 60,
                 exposition=None, on_reload=None, lock=None, flush_every: float | None = FLUSH_EVERY):
        self.flush_every = flush_every
        self.archive, self.command, self.exposition, self.lock = archive, command, exposition, lock
        self.on_reload, self.reloading = on_reload, False
        self.log = log or (lambda msg: print(f"strata collect: {msg}", file=sys.stderr, flush=True))
        self.poll, self.prune_every = poll, prune_every
        self.ingest = None if archive.readonly else archive.ingestor(flush_every)   # None: not yet writable
        self.kinds = {}          # dataset id -> kind, for datasets added to the daemon
        self.infos = {}          # dataset id -> DatasetInfo
        self.failed = set()      # ids the daemon refused (retried after the next dataset change)
        self.generation = {}     # dataset id -> times re-added (its daemon key: daemon_key())
        self.dropped = {}        # dataset name -> records dropped: destroyed or suspended meanwhile
        self.known = set()       # ids of every dataset the archive held when the collector looked
        self.resumed_unseen = []  # names suspended and resumed between two looks, said after the batch
        self.idle = False        # no active dataset (said once, until there is one again)
        self.warned = set()
        self.stopping = False
        self.proc = None
        self.partial = b""       # the daemon's line read so far (no newline yet): finished by the next read
        self.records = 0
        self.last = {}           # dataset id -> the last second the daemon reported
        self.newest = None       # the latest second of any record handled (the live feed's since)
        self.feed = None         # the live feed (LiveFeed), while run() serves one
        self.tick = None         # (t, mono_ms, step_ms) of the daemon's last interval record
        self.held = Held()       # records not yet written: the archive failed
        self.fault = None        # what is wrong with the archive, while it is
        self.identity = archive.identity()
        self.status = StatusFile(archive.path)
        self.errors = []         # the last ERRORS_KEPT distinct problems said, for the status file
        self.daemon = {}         # status.daemon_summary of the daemon's last status record

    def stop(self, *_):
        self.stopping = True

    def reload(self, *_):
        self.reloading = True

    # -- talking to the daemon ---------------------------------------------------------------

    def _send(self, line: str):
        if self.proc is None:
            return
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the daemon is gone: the read loop sees its end

    def sync(self):
        """Add what became active, remove what was suspended or destroyed."""
        every = self.archive.datasets()
        want = {d.id: d for d in every if d.state == "active"}
        collected = len(self.kinds)
        held = {d.id for d in every}
        gone = [i for i in self.kinds if i not in want]
        came = [i for i in want if i not in self.kinds and i not in self.failed and
                (i in self.infos or i in self.known)]
        self._say_changes([self.infos[i].name for i in gone if i in held], "suspended",
                          "no longer collected, what is stored is kept (`strata datasets resume` collects again)")
        self._say_changes([self.infos[i].name for i in gone if i not in held], "destroyed",
                          "no longer collected")
        self._say_changes([want[i].name for i in came], "resumed", "collected again from the next second")
        self.known = held
        for ds in gone:
            self._send(f"remove {daemon_key(ds, self.generation.get(ds, 0))}")
            del self.kinds[ds]
            self.last.pop(ds, None)
            self.generation[ds] = self.generation.get(ds, 0) + 1   # its next add: a new daemon id
        for ds, info in want.items():
            if ds not in self.kinds and ds not in self.failed:
                self.kinds[ds], self.infos[ds] = info.kind, info
                self._send(control_line(info, daemon_key(ds, self.generation.get(ds, 0))))
        self.failed &= set(want)
        if not want and not self.idle and not gone:   # a suspend or destroy of the last: said above
            suspended = len(every)
            self.log("no active dataset in the archive" + (f" ({suspended} suspended)" if suspended else "") +
                     ": collecting nothing until one is created or resumed (`strata datasets create NAME`)")
        self.idle = not want
        if len(self.kinds) != collected:
            self._write_status()

    def _say_changes(self, names, act, what):
        """One line for a lifecycle act on datasets (names), however many it changed."""
        if names:
            which = ", ".join(names) if len(names) <= 3 else f"{len(names)} datasets"
            self.log(f"{act} {which}: {what}")

    def _warn_once(self, key, msg):
        if key not in self.warned:
            self.warned.add(key)
            self._error(msg)

    def _error(self, msg):
        """Say a problem that is not the archive's (stderr), and keep it in the status file."""
        self.log(msg)
        self.errors = (self.errors + [msg])[-ERRORS_KEPT:]
        self._write_status()

    def _write_status(self):
        self.status.write("holding" if self.fault else "writing", self.fault or "",
                          self.held.start() if self.fault else None, len(self.kinds), self.errors,
                          self.dropped, self.daemon)

    def handle(self, lines: list):
        """Archive one batch of daemon output lines (one transaction), or hold it."""
        records = []
        for raw in lines:
            try:
                msg = json.loads(raw)
                if not isinstance(msg, dict):
                    raise BadRecord("not a JSON object")
                kind = msg.get("type")
                if kind == "data":
                    ds, gen = parse_key(msg.get("id"))
                    if ds not in self.kinds or gen != self.generation.get(ds, 0):
                        self._drop(ds)   # sent before the daemon read its `remove`
                        continue
                    if msg.get("partial"):          # counted from the middle of its interval
                        continue
                    if msg.get("kind") != self.kinds[ds]:
                        raise BadRecord(f"kind {msg.get('kind')!r} for a {self.kinds[ds]} dataset")
                    t = msg.get("t")
                    last = self.last.get(ds)
                    start, seconds, cause = self._placement(t, last)
                    if isinstance(t, int) and (last is None or t > last):
                        self.last[ds] = t
                        self.newest = t if self.newest is None else max(self.newest, t)
                    records.append((ds, start, seconds, cause, msg.get("data"), raw))
                elif kind == "interval":
                    self._interval(msg)
                elif kind == "error":
                    ds, gen = parse_key(msg.get("id", ""))
                    if ds in self.infos and (ds not in self.kinds or gen != self.generation.get(ds, 0)):
                        continue    # of a dataset removed since (suspended, destroyed): moot
                    name = self.infos[ds].name if ds in self.infos else msg.get("id")
                    if ds in self.kinds:
                        del self.kinds[ds]
                        self.failed.add(ds)
                    self._error(f"{name}: {msg.get('message', 'refused')}")
                elif kind == "status":
                    for err in msg.get("errors") or []:
                        self._warn_once(("status", str(err)), f"collector: {err}")
                    summary = daemon_summary(msg)
                    if summary != self.daemon:
                        self.daemon = summary
                        self._write_status()
            except (ValueError, KeyError, TypeError) as e:
                self._bad(e, raw)
        if records or self.held:
            self._archive(records)
        self._say_changes(self.resumed_unseen, "resumed",
                          "suspended and resumed before the collector looked; collected again from the resume")
        self.resumed_unseen = []

    def _interval(self, msg):
        """The daemon's interval record: remembered for its data records; a step is said."""
        t, mono, step = msg.get("t"), msg.get("mono_ms"), msg.get("step_ms")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (t, mono, step)) or mono < 0:
            raise BadRecord("an interval record needs integer t, mono_ms (>= 0) and step_ms")
        self.tick = (t, mono, step)
        if abs(step) >= STEP_MS:
            when = time.strftime("%H:%M:%S", time.localtime(t))
            self.log(f"the wall clock stepped {'forward' if step > 0 else 'back'} {abs(step) / 1000:.1f} s "
                     f"(the interval labelled {when} lasted {mono / 1000:.1f} s): " +
                     ("the seconds it skipped hold no record" if step > 0 else
                      f"its record spans the {max(1, round(mono / 1000))} s it lasted (cause clock)"))

    def _placement(self, t, last) -> tuple:
        """(first second, seconds, cause) of the record labelled t, the dataset's previous
        being labelled last: a gap in the labels is a stall the record spans, unless the
        wall clock stepped (the interval record): forward, the record holds only the seconds
        it lasted; back, it spans the seconds it lasted from its label on."""
        if not isinstance(t, int) or isinstance(t, bool):
            return t, 1, "stall"          # refused by the ingest
        start = last + 1 if last is not None and t > last + 1 else t
        seconds, cause = t + 1 - start, "stall"
        tick = self.tick if self.tick and self.tick[0] == t else None
        if tick and abs(tick[2]) >= STEP_MS:
            lasted = max(1, round(tick[1] / 1000))
            if tick[2] > 0:
                start = max(start, t + 1 - lasted)
                seconds = t + 1 - start
            elif lasted > seconds:
                seconds, cause = lasted, "clock"
        return start, seconds, cause

    def _bad(self, e, raw):
        self._warn_once(("bad", type(e).__name__, str(e)[:80]),
                        f"ignoring a malformed collector line ({e}): {raw[:120]!r}")

    def _archive(self, records):
        """Write the records (and whatever is held) in one transaction; hold them if that fails."""
        committed = []
        try:
            self._same_file()
            with self.archive.guard(), self.ingest.transaction():
                active = self._active()
                self.ingest.close(set(self.ingest.latest) - set(active))   # suspended or destroyed
                if self.held:
                    self.held.store(self.ingest, {ds: span for ds, span in self.held.spans.items()
                                                  if self._stored(active, ds, span.start)})
                for ds, start, seconds, cause, data, raw in records:
                    if not self._stored(active, ds, start):
                        continue
                    try:
                        self.ingest.add(ds, start, self.kinds[ds], data, seconds, cause, active[ds][1])
                        self.records += 1
                        committed.append((ds, start, seconds, cause, self.kinds[ds], data, raw))
                    except (BadRecord, TypeError) as e:
                        self._bad(e, raw)
        except ArchiveError as e:
            committed = []                       # none stored: held, and added to the exposition there
            self._hold(records, e)
        else:
            if self.fault:
                self._recovered()
            if self.feed:
                self.feed.push([(ds, start, seconds, cause, kind, raw)
                                for ds, start, seconds, cause, kind, _, raw in committed])
        if self.exposition:
            for ds, start, seconds, *_, data, _ in committed:
                self.exposition.add(self.infos[ds], data, start, seconds)
            self.exposition.keep(self.kinds)     # suspended, destroyed or refused: not served

    def _active(self) -> dict:
        """{id: (state_since, {step: horizon})} of the datasets active now, read inside the write
        transaction (no other command can change them before it commits); the datasets it
        collects follow them at once."""
        active = {ds: (since, {1: h1, 60: h60, 3600: h3600}) for ds, since, h1, h60, h3600 in
                  self.archive.conn.execute("SELECT id, state_since, horizon_second, horizon_minute, "
                                            "horizon_hour FROM datasets WHERE state = 'active'")}
        if set(active) - self.failed != set(self.kinds):
            self.sync()
        return active

    def _stored(self, active, ds, start) -> bool:
        """Whether a record of dataset ds from second start may be stored: the dataset is active
        and has been since before start (a suspend and resume the collector did not see moved
        its state_since: what it collected up to then held suspended time). Counted if not."""
        if ds not in active:
            self._drop(ds)
            return False
        info = self.infos.get(ds)
        since = active[ds][0]
        if info is not None and since != info.state_since:
            if start <= since:
                if (ds, since) not in self.warned:
                    self.warned.add((ds, since))
                    self.resumed_unseen.append(info.name)
                self._drop(ds)
                return False
            self.infos[ds] = replace(info, state_since=since)
        return True

    def _drop(self, ds):
        """Count a record of dataset ds not stored (destroyed or suspended meanwhile: what a
        suspend means, said once by sync())."""
        info = self.infos.get(ds)
        if info is None:
            return     # not a dataset this collector added: a malformed id
        self.dropped[info.name] = self.dropped.get(info.name, 0) + 1
        self._write_status()

    def _hold(self, records, error):
        for ds, start, seconds, cause, data, raw in records:
            try:
                self.held.add(ds, start, start + seconds, self.kinds[ds], data)
            except (BadRecord, TypeError) as e:
                self._bad(e, raw)
            else:
                if self.exposition:
                    self.exposition.add(self.infos[ds], data, start, seconds)
        if str(error) != self.fault:
            self.fault = str(error)
            self.log(f"{error}; collection goes on, the events held in memory until the archive "
                     "can be written (retried every second)")
            self._write_status()

    def _recovered(self):
        start = self.held.start()
        seconds = self.held.seconds()
        self.held.clear()
        self.fault = None
        if self.feed:            # the held seconds were stored as spans the feed did not carry
            self.feed.reset()
        when = time.strftime("%H:%M:%S", time.localtime(start)) if start is not None else "?"
        self.log(f"the archive is written again: the {seconds} s from {when} stored as one record "
                 "per dataset spanning them")
        self._write_status()

    def _flush(self):
        """Write the open rollup periods (at stop); left pending, for the next start, if that fails."""
        if self.ingest is None or self.fault or not self.ingest.open:
            return
        try:
            with self.archive.guard(), self.ingest.transaction():
                self.ingest.flush()
        except ArchiveError as e:
            self.log(f"{e}; the open minute, ten-minute and hour records are written at the next start")

    def unwritable(self, error):
        """The archive could not be opened for writing at start (Archive.open_for_collecting)."""
        self._hold([], error)

    def _same_file(self):
        """Open the archive for writing if it is not yet (it could not be at start), or again
        if its file was removed or replaced (made again at its path)."""
        now = self.archive.identity()
        if self.ingest is not None and now == self.identity and now is not None:
            return
        if now is None and self.identity is not None and _device_of(self.archive.path) != self.identity[0]:
            if self.ingest is not None:   # let go of it: a lazily unmounted file system can be freed
                self.ingest = None
                self.archive.close()
                if self.lock:
                    self.lock.release()
            raise ArchiveError(f"{self.archive.path}: its file system is gone (unmounted?); "
                               "waiting for it to be back")
        infos = [self.infos[ds] for ds in self.kinds]
        self.archive.reopen(infos)
        if self.ingest is not None or now != self.identity:
            self.log(f"{self.archive.path} was removed or replaced: made again with the "
                     f"{len(infos)} dataset(s) being collected")
        self.identity = self.archive.identity()
        self.ingest = self.archive.ingestor(self.flush_every)
        if self.feed:            # another file: its subscribers read it again
            self.feed.reset()
        if self.lock:
            self.lock.renew()

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> int:
        """Collect until stop() or the daemon ends; returns the exit status."""
        try:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         preexec_fn=die_with_parent)
        except OSError as e:
            self.log(f"cannot start {self.command[0]}: {e.strerror}")
            return 1
        status = 0
        self.feed = LiveFeed.open(self.archive.path, self.log)
        self.status.live = self.feed.path if self.feed else None
        if not self.fault:
            self._write_status()
        try:
            changes = self.archive.changes()
            self.sync()
            status = self._loop(changes)
        except ArchiveError as e:
            self.log(f"{e}; collection stopped")
            status = 1
        finally:
            self._shutdown()
            if self.feed:
                self.feed.close()
            self.status.remove()
        return status

    def _feed_where(self) -> tuple:
        """(the archive file's (device, inode), the first second every record from which is yet
        to be stored) for a subscriber of the live feed: after the newest second handled, or,
        before any, the current second (a record is handled after its second ends)."""
        since = self.newest + 1 if self.newest is not None else int(time.time())
        return (None if self.fault else self.identity), since

    def _loop(self, changes) -> int:
        sel = selectors.DefaultSelector()
        out = self.proc.stdout.fileno()
        os.set_blocking(out, False)
        sel.register(out, selectors.EVENT_READ)
        if self.feed:
            self.feed.attach(sel, self._feed_where)
        next_poll, next_prune = time.monotonic() + self.poll, time.monotonic()
        while not self.stopping:
            for key, events in sel.select(timeout=0.25):
                if key.data is not None:          # the live feed's socket or a subscriber
                    key.data.ready(key, events)
                    continue
                chunk = os.read(out, 1 << 16)
                if not chunk:
                    code = self.proc.wait()
                    self.log(f"{self.command[0]} exited with status {code}")
                    return 1
                *lines, self.partial = (self.partial + chunk).split(b"\n")
                if len(self.partial) > MAX_LINE:
                    self._warn_once("long", "dropping an over-long collector line")
                    self.partial = b""
                lines = [ln.decode(errors="replace") for ln in lines if ln.strip()]
                if lines:
                    self.handle(lines)
            if self.reloading and self.on_reload:
                self.reloading = False
                self.on_reload()
                try:
                    changes = self.archive.changes()
                    self.failed.clear()
                    self.sync()
                except ArchiveError as e:
                    self.log(f"reload: {e}; dataset changes are looked for again later")
            now = time.monotonic()
            if now >= next_poll and not self.fault:
                next_poll = now + self.poll
                try:
                    current = self.archive.changes()
                    if current != changes:
                        changes = current
                        self.failed.clear()
                        self.sync()
                except ArchiveError as e:
                    self._warn_once(("poll", str(e)), f"{e}; dataset changes are looked for again later")
            if now >= next_prune and not self.fault:
                next_prune = now + self.prune_every
                try:
                    self.archive.enforce_retention()
                except ArchiveError as e:
                    self._warn_once(("prune", str(e)), f"{e}; retention is enforced again later")
        return 0

    def _shutdown(self):
        """quit the daemon, archive its last lines and the open rollup periods, and make sure it is gone."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._send("quit")
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            deadline, rest = time.monotonic() + 3, b""
            try:
                os.set_blocking(self.proc.stdout.fileno(), True)
                while time.monotonic() < deadline and self.proc.poll() is None:
                    time.sleep(0.05)
                rest = self.proc.stdout.read() if self.proc.poll() is not None else b""
            except OSError:
                pass
            lines = [ln.decode(errors="replace") for ln in (self.partial + rest).split(b"\n") if ln.strip()]
            if lines or self.held:
                self.handle(lines)
            if self.held:
                self.log(f"stopping with {self.held.seconds()} s of events the archive could not take; "
                         "they are lost")
        self._flush()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
