"""strata.collect — the collector's supervisor: runs strata-collect for an archive's active
datasets and writes what it reports (datasets/ is the archive it writes), with its lock,
status file, outage hold and the datasets a configuration keeps."""
