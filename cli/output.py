"""Where what `strata heatmap` and `strata breakdown` render goes: text (terminal,
JSON) to --output or stdout, a figure (html/png/svg) to --output or to a file
named after the dataset."""
import re
from pathlib import Path

import click


def emit_text(text: str, output: str | None, color: bool | None = None) -> None:
    if not output:
        click.echo(text, color=color)
        return
    try:
        Path(output).write_text(text + "\n")
    except OSError as e:
        raise click.ClickException(f"cannot write {output}: {e.strerror}") from None


def write_figure(fig, output: str | None, stem: str, fmt: str) -> None:
    """fig as FMT into output, or STEM.FMT (STEM made a safe file name); says where."""
    from strata.heatmaps import export   # plotly: only when a figure is written
    path = output or re.sub(r"[^A-Za-z0-9_.=-]+", "_", stem).strip("_") + f".{fmt}"
    try:
        export.write(fig, path, fmt)
    except (export.ExportError, OSError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"wrote {path}")
