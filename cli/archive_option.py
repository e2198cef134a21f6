"""The --archive option every strata command that reads or writes datasets shares.

    @archive_option
    def cmd(archive_path): 
        with open_archive(archive_path) as a: ...

Errors from the datasets layer become one `strata: ...` line and exit 1.
"""
from contextlib import contextmanager

import click

from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.datasets.paths import default_archive

archive_option = click.option(
    "--archive", "archive_path", metavar="PATH", type=click.Path(dir_okay=False),
    help="Archive file to use, e.g. one written by `strata datasets archive`. Default: $STRATA_ARCHIVE, "
         "else /var/lib/strata/archive.db for root and ~/.local/share/strata/archive.db for other users.")


@contextmanager
def archive_errors():
    """Turn ArchiveError into click's one-line error (exit 1)."""
    try:
        yield
    except ArchiveError as e:
        raise click.ClickException(str(e)) from None


@contextmanager
def open_archive(path: str | None, readonly: bool = True):
    """The archive at path (or the default one), closed afterwards; errors are one line."""
    with archive_errors():
        archive = Archive.open(path or default_archive(for_reading=readonly), readonly=readonly)
        try:
            yield archive
        finally:
            archive.close()
