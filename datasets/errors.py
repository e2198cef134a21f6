"""Errors of the datasets layer: each carries one line fit for the user."""


class ArchiveError(Exception):
    """Anything wrong with an archive or a request to it (missing, foreign, corrupt, unknown dataset)."""


class NoArchive(ArchiveError):
    """There is no archive at the path (and it was not to be made)."""

    def __init__(self, path: str):
        super().__init__(f"{path}: no such archive")
        self.path = path


class ArchiveFull(ArchiveError):
    """The file system holding the archive is full; the failed write was rolled back."""


class BadRecord(ValueError):
    """A collector record that does not follow collectors/FORMAT.md."""
