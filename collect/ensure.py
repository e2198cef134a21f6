"""Bring an archive's datasets to a wanted list (a configuration file's `datasets`).

Wanted datasets are created with the given retention, resumed when suspended,
and given that retention when theirs differs; datasets no longer wanted (listed
in `dropped`) are suspended, their data kept. Datasets in neither list are left
as they are. A running collector picks the changes up through the archive's
change counter.
"""
from strata.datasets.archive import Archive
from strata.datasets.retention import Retention


def ensure(archive: Archive, wanted, retention: Retention, dropped=()) -> list:
    """Apply the lists; returns one line per change made."""
    done, have = [], {i.name: i for i in archive.datasets()}
    for name in wanted:
        info = have.get(name)
        if info is None:
            archive.create(name, retention)
            done.append(f"created {name} (keeps {retention})")
            continue
        if info.state != "active":
            archive.set_state([name], "active")
            done.append(f"resumed {name}")
        if info.retention != retention:
            archive.set_retention(name, retention)
            done.append(f"{name} keeps {retention}")
    resting = [n for n in dropped if n not in wanted and n in have and have[n].state == "active"]
    if resting:
        archive.set_state(resting, "suspended")
        done += [f"suspended {n} (no longer in the configuration; data kept)" for n in resting]
    return done
