"""heatmaps/ and datasets/ errors as click errors: one line, exit 1 (what was asked
cannot be shown) or exit 2 (the options are wrong)."""
from contextlib import contextmanager

import click

from strata.datasets.errors import ArchiveError
from strata.heatmaps.errors import ViewError, ViewUsageError


@contextmanager
def user_errors():
    """Inside: a ViewUsageError exits 2, a ViewError or an ArchiveError exits 1, each one line."""
    try:
        yield
    except ViewUsageError as e:
        raise click.UsageError(str(e)) from None
    except (ViewError, ArchiveError) as e:
        raise click.ClickException(str(e)) from None
