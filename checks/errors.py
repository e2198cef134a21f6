"""What stops a check: CheckError carries one line for the user (exit status 2);
FAILURES are the lab's and the archive's own one-line errors, which stop it the same way."""
from strata.datasets.errors import ArchiveError
from strata.lab.binaries import MissingBinary
from strata.lab.collect import CollectError
from strata.lab.engine import EngineError
from strata.lab.load import LoadError


class CheckError(RuntimeError):
    """A check cannot run or finish; the message is one line."""


FAILURES = (CheckError, MissingBinary, EngineError, LoadError, CollectError, ArchiveError, OSError)
