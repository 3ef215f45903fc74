"""`kgcult views` and `kgcult build`: list and materialize the datasets declared under
``queries/views/`` (a thin layer over :mod:`kgcult.views`)."""
from __future__ import annotations

import json

import click

from kgcult import views
from kgcult.cli.main import info
from kgcult.errors import KgcultError


@click.command("views")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def views_command(fmt):
    """List the views (datasets) that `kgcult build` can materialize.

    \b
    Example:
      kgcult views
      kgcult views --format json
    """
    listing = views.views()
    if fmt == "json":
        click.echo(json.dumps(listing, ensure_ascii=False, indent=2))
        return
    for v in listing:
        click.echo(f"{v['name']}\t{v['description']}")
        for name, p in v["parameters"].items():
            default = p["default"] if p["default"] != "" else "(empty)"
            click.echo(f"    --param {name}=...  [{p['type']}, default {default}]  {p['description']}")


@click.command("build")
@click.argument("view", required=False)
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A view parameter (repeatable); lists are comma-separated, e.g. languages=en,zh.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=views.DEFAULT_OUT, show_default=True,
              help="Output directory; each view is written to OUT/<view>/.")
@click.option("--csv", "csv_out", is_flag=True, help="Also write every JSONL output as CSV.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "hf"]), default="jsonl", show_default=True,
              help="hf: also write a Hugging Face dataset card (README.md) declaring every JSONL output, "
                   "so datasets.load_dataset(DIR) reads the directory.")
@click.option("--all", "all_views", is_flag=True, help="Build every view with its default parameters.")
@click.option("--print", "print_output", metavar="FILE",
              help="Print this output of the view (e.g. counts.jsonl) to stdout after building.")
@click.pass_obj
def build_command(obj, view, params, out, csv_out, fmt, all_views, print_output):
    """Materialize a view: sorted JSONL (+ CSV with --csv) and MANIFEST.json (snapshot
    content hash, query sha256, parameters, row counts, output sha256).

    Prints one line per view on stdout: name, rows, sha256 of the main output, directory.

    \b
    Examples:
      kgcult build fmlama
      kgcult build fmlama --param languages=en,zh --param countries=Q142,Q17 --csv
      kgcult build fmlama --print counts.jsonl
      kgcult build dlama --param cultures=arab,west --param languages=en,ar
      kgcult build --all --out datasets
      kgcult build fmlama --format hf     # then datasets.load_dataset("build/views/fmlama")
    """
    if all_views and view:
        raise KgcultError("give either a VIEW or --all, not both")
    if not all_views and not view:
        raise KgcultError("name a view to build (see `kgcult views`) or use --all")
    if all_views and params:
        raise KgcultError("--param applies to one view; --all builds every view with its defaults")
    store = obj.reader(closure=True)
    if all_views:
        results = views.build_all(store, out=out, csv_out=csv_out, card=fmt == "hf")
    else:
        results = [views.build(store, view, list(params), out=out, csv_out=csv_out, card=fmt == "hf")]
    for r in results:
        m = r.manifest
        info(f"{r.name}: {m['rows']} rows -> {r.path} ({len(m['outputs'])} files, "
             f"snapshot {str(m['snapshot_content_sha256'])[:12]})")
        click.echo(f"{r.name}\t{m['rows']}\t{m['sha256']}\t{r.path}")
    if print_output:
        if len(results) != 1:
            raise KgcultError("--print needs exactly one view")
        files = results[0].files
        if print_output not in files:
            raise KgcultError(f"view {results[0].name} has no output {print_output!r} (outputs: {', '.join(sorted(files))})")
        click.echo(files[print_output].decode("utf-8"), nl=False)
