"""`strata web`: serve the browser worksheet (strata.web) of an archive or a Prometheus server."""
import asyncio
import sys

import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.datasets.paths import default_archive
from strata.prometheus.metrics_server import parse_address
from strata.prometheus.webconfig import WebConfigError, load as load_web_config
from strata.web import worksheets
from strata.web.server import Source, Worksheet, serve


@click.command("web")
@click.option("--listen", default="127.0.0.1:8470", show_default=True, metavar="[HOST]:PORT",
              help="Address to serve on; localhost unless a host is given (port 0: any free one).")
@click.option("--web-config", "web_config", metavar="FILE", type=click.Path(dir_okay=False),
              help="The exporter-toolkit web configuration the metrics endpoint reads (TLS; basic_auth_users: "
                   "needed to read, and what lets a user create, suspend and resume datasets).")
@click.option("--open", "open_name", metavar="NAME", help="Open the worksheet saved under NAME.")
@archive_option
@prometheus_option
def web(listen, web_config, open_name, archive_path, prometheus_url):
    """Serve a live worksheet of heat maps and graphs in the browser.

    Several datasets stacked on one time axis, new seconds as they are
    collected; drag a rectangle on a heat map to break those events down by
    client (op, file...), as `strata breakdown --range` does; the page's
    address holds the whole worksheet.
    """
    try:
        host, port = parse_address(listen, empty_host="127.0.0.1", what="--listen address")
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--listen") from None
    try:
        config = load_web_config(web_config) if web_config else None
    except WebConfigError as e:
        raise click.ClickException(str(e)) from None
    path = None if prometheus_url else (archive_path or default_archive(for_reading=True))
    with open_archive(path, prometheus_url=prometheus_url):
        if open_name:        # the one error a saved name can have, said before serving
            if prometheus_url:
                raise click.UsageError("--open reads worksheets saved in an archive, not in Prometheus")
            try:
                worksheets.load(path, open_name)
            except Exception as e:   # ArchiveError: one line
                raise click.ClickException(str(e)) from None
    scheme = "https" if config and config.tls else "http"

    def ready(bound):
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"strata web: {scheme}://{shown}:{bound}/" + (f" (worksheet {open_name})" if open_name else ""))
        sys.stdout.flush()
    worksheet = Worksheet(Source(path, prometheus_url), config, open_name)
    try:
        asyncio.run(serve(worksheet, host, int(port), config.tls if config else None, ready))
    except OSError as e:
        raise click.ClickException(f"cannot serve on {listen}: {e.strerror or e}") from None
    except KeyboardInterrupt:
        pass
