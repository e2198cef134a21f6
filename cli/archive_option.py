"""The --archive option every strata command that reads or writes datasets shares,
and the one way commands open an archive (or, for reading, a Prometheus server).

    @archive_option
    def cmd(archive_path):
        with open_archive(archive_path) as a: ...

Errors from the datasets layer become one `strata: ...` line and exit 1.
"""
import re
from contextlib import contextmanager

import click

from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError, NoArchive
from strata.datasets.paths import default_archive
from strata.prometheus.reader import PrometheusReader

archive_option = click.option(
    "--archive", "archive_path", metavar="PATH", type=click.Path(dir_okay=False),
    help="Archive file to use, e.g. one written by `strata datasets archive`. Default: $STRATA_ARCHIVE, "
         "else /var/lib/strata/archive.db for root and ~/.local/share/strata/archive.db for other users.")

prometheus_option = click.option(
    "--prometheus", "prometheus_url", metavar="URL",
    help="Read from the Prometheus server at URL (e.g. http://prom:9090) that scrapes "
         "`strata collect --metrics`, instead of an archive.")


@contextmanager
def archive_errors(exit_code: int = 1):
    """Turn ArchiveError into click's one-line error (exit 1, or exit_code)."""
    try:
        yield
    except ArchiveError as e:
        error = click.ClickException(str(e))
        error.exit_code = exit_code
        raise error from None


@contextmanager
def open_archive(path: str | None, readonly: bool = True, prometheus_url: str | None = None,
                 exit_code: int = 1, make: bool = False):
    """The archive at path (or the default one), closed afterwards; or, given
    prometheus_url (read-only), a reader of that Prometheus server. Errors are one line.
    A missing archive is refused unless make (a writer that makes it: create, import); at the
    default path, the refusal says how to make one or name another."""
    if prometheus_url:
        if path:
            raise click.UsageError("give --archive or --prometheus, not both")
        if not readonly:
            raise click.UsageError("--prometheus is read-only")
        if not re.match(r"https?://[^/\s]+", prometheus_url):
            raise click.BadParameter(f"{prometheus_url!r} is not an http(s):// URL", param_hint="--prometheus")
        with archive_errors(exit_code):
            yield PrometheusReader(prometheus_url)
        return
    with archive_errors(exit_code):
        try:
            archive = Archive.open(path or default_archive(for_reading=readonly), readonly=readonly, make=make)
        except NoArchive as e:
            if path:
                raise
            raise ArchiveError(f"{e.path}: no archive here (create a dataset with `strata datasets create`, "
                               "or pass --archive)") from None
        try:
            yield archive
        finally:
            archive.close()
