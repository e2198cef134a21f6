"""One `strata heatmap` (and `breakdown`) run in this process, counted: the dataset name is parsed once
(datasets/names.parse) and the datasets table read once (every SQL statement the archive's
connection runs is traced), whatever the name resolves to (held, derived, one key)."""
import re

import pytest
from click.testing import CliRunner

from heatmaps_util import T0, build_archive, histogram
from strata.cli.main import cli
from strata.datasets import names
from strata.datasets.archive import Archive

DATASETS_ROW = re.compile(r"\bFROM\s+datasets\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    def latencies(t):
        return {"10.0.0.1": histogram([2_000, 150_000]), "10.0.0.2": histogram([3_000_000])}
    return str(build_archive(tmp_path_factory.mktemp("read_once") / "a.db",
                             {"nfs.latency[client]": latencies}, seconds=120))


@pytest.mark.parametrize("command", [("heatmap", "nfs.latency[client]"), ("heatmap", "nfs.latency"),
                                     ("heatmap", "nfs.latency[client=10.0.0.1]"),
                                     ("breakdown", "nfs.latency", "--by", "client")])
@pytest.mark.parametrize("fmt", ["json", "term"])
def test_a_view_parses_its_name_once_and_reads_the_datasets_row_once(archive, monkeypatch, command, fmt):
    parses, statements = [], []
    parse = names.parse

    def counting_parse(text, *args, **kw):
        parses.append(text)
        return parse(text, *args, **kw)

    opened = Archive.__init__

    def traced_open(self, *args, **kw):
        opened(self, *args, **kw)
        self.conn.set_trace_callback(statements.append)

    monkeypatch.setattr(names, "parse", counting_parse)
    monkeypatch.setattr(Archive, "__init__", traced_open)
    r = CliRunner().invoke(cli, [*command, "--archive", archive, "--since", str(T0),
                                 "--until", str(T0 + 120), "--format", fmt],
                           env={"COLUMNS": "100", "LINES": "30"})
    assert r.exit_code == 0, r.output
    assert parses == [command[1]]
    reads = [s for s in statements if DATASETS_ROW.search(s)]
    assert len(reads) == 1, reads
    assert any(s.lstrip().upper().startswith("SELECT T, DATA FROM RECORDS") for s in statements)
