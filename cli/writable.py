"""Whether a file the command will write can be written: checked before any work, so a
long run (`strata check ab`) does not end in a traceback. A module of its own: commands
that only write reports need not import the renderers (cli/output.py) to check a path."""
import os
from pathlib import Path

import click


def check_writable(output: str) -> None:
    """One line, before any work, when OUTPUT cannot be written (no such directory...)."""
    folder = Path(output).parent
    if not folder.is_dir():
        raise click.ClickException(f"cannot write {output}: there is no directory {folder}")
    if Path(output).is_dir():
        raise click.ClickException(f"cannot write {output}: it is a directory")
    if not os.access(folder, os.W_OK):
        raise click.ClickException(f"cannot write {output}: {folder} is not writable")
