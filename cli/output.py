"""Where what `strata show`, `heatmap` and `breakdown` render goes, and in which
format: --format, --json, --csv and -o's extension agree or the command stops with
one line; text (terminal, JSON, CSV) goes to --output or stdout, a figure
(html/png/svg) to --output or to a file named after the dataset. Every file written
is said in one line on stderr ("wrote FILE"), whatever its format: by wrote(), which
`strata datasets archive` uses too."""
import re
from pathlib import Path

import click

from strata.cli.writable import check_writable

EXTENSIONS = {".png": "png", ".svg": "svg", ".html": "html", ".htm": "html", ".json": "json", ".csv": "csv"}
FIGURES = ("html", "png", "svg")


def choose_format(fmt: str | None, as_json: bool, as_csv: bool, output: str | None) -> str:
    """The one format the flags ask for: --format, else --json or --csv, else -o's
    extension (.txt or none: the terminal's text; another is refused), else the terminal.
    Flags that disagree (--json --csv, --json --format html, -o x.png --format html)
    are a usage error. An -o that cannot be written is one line before any work."""
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    flag = "json" if as_json else "csv" if as_csv else None
    if flag and fmt not in (None, flag):
        raise click.UsageError(f"give --{flag} or --format {fmt}, not both")
    asked = flag or fmt
    suffix = Path(output).suffix.lower() if output else ""
    implied = EXTENSIONS.get(suffix)
    if not asked and suffix not in ("", ".txt") and not implied:
        raise click.UsageError(f"-o {output}: {suffix} is not a format strata writes; name the file "
                               f"{' '.join(sorted(set(EXTENSIONS) - {'.htm'}))} or .txt (the terminal's text), "
                               f"or give --format")
    if asked and implied and asked != implied:
        article = "an" if implied in ("html", "svg") else "a"
        raise click.UsageError(f"-o {output} names {article} {implied.upper()} file but --format {asked} "
                               f"asks for {asked.upper()}: drop one, or name the file .{asked}")
    chosen = asked or implied or "term"
    if output:
        check_writable(output)
    return chosen


def check_archive_name(output: str) -> None:
    """An archive file (`datasets archive -o`, `verify --salvage`) is SQLite: a name
    that says another format (x.json, x.csv, x.html...) is a usage error."""
    suffix = Path(output).suffix.lower()
    if suffix in EXTENSIONS or suffix == ".txt":
        raise click.UsageError(f"{output}: an archive is an SQLite file, not {suffix}; name it .db or .archive")


def emit_text(text: str, output: str | None, color: bool | None = None) -> None:
    if not output:
        click.echo(text, color=color)
        return
    try:
        Path(output).write_text(text + "\n")
    except OSError as e:
        raise click.ClickException(f"cannot write {output}: {e.strerror}") from None
    wrote(output)


def write_figure(fig, output: str | None, stem: str, fmt: str, self_contained: bool = False) -> None:
    """fig as FMT into output, or STEM.FMT (STEM made a safe file name); says where.
    HTML loads plotly.js from a copy beside it unless self_contained."""
    from strata.heatmaps import export   # plotly: only when a figure is written
    path = output or re.sub(r"[^A-Za-z0-9_.=-]+", "_", stem).strip("_") + f".{fmt}"
    try:
        export.write(fig, path, fmt, self_contained=self_contained)
    except export.ExportError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"cannot write {e.filename or path}: {e.strerror}") from None
    wrote(path)


def wrote(path, what: str = "") -> None:
    """The line that says a file was written ("wrote FILE", "wrote WHAT to FILE"): on
    stderr, so stdout stays the data's."""
    click.echo(f"wrote {what + ' to ' if what else ''}{path}", err=True)
