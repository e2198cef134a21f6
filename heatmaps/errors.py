"""The errors heatmaps/ raises for its users: one line each, no click.

ViewError: what was asked cannot be shown (no such dataset, no data for a key);
the CLI prints it and exits 1. ViewUsageError: the options contradict or a value
is malformed; the CLI prints it as a usage error and exits 2.
"""


class ViewError(Exception):
    """What was asked cannot be shown; the message is one line for the user."""


class ViewUsageError(ViewError):
    """Options that contradict each other, or a value that does not parse."""
