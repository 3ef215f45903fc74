"""The ``kgcult`` command line: a thin click layer over library functions of the same names.

Machine output goes to stdout; messages and errors to stderr; errors exit non-zero.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__, hierarchy, inspect, results, snapshot, vocab
from .errors import KgcultError
from .store import open_store, resolve_location


class Context:
    def __init__(self, location: str | None):
        self.location = resolve_location(location)
        self._store = None

    def store(self, read_only: bool = False):
        """Open the store on first use (commands that need none never touch it)."""
        if self._store is None:
            self._store = open_store(self.location, read_only=read_only)
        return self._store

    def close(self):
        if self._store is not None:
            self._store.close()
            self._store = None


def info(msg: str) -> None:
    click.echo(msg, err=True)


class KgcultGroup(click.Group):
    """Turns KgcultError into ``error: ...`` on stderr and exit status 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KgcultError as e:
            message, code = str(e), e.exit_code
        # Exit outside the except block: the error's traceback (frames holding the open
        # store) is dropped, so an in-process caller can reopen the store at once.
        click.echo(f"error: {message}", err=True)
        ctx.exit(code)


@click.group(cls=KgcultGroup)
@click.option("--store", "store_location", metavar="PATH", envvar="KGCULT_STORE",
              help="Store directory (default .kgcult/store, or $KGCULT_STORE), or "
                   "sparql+http(s)://host/path for a remote SPARQL endpoint (read commands).")
@click.version_option(__version__, prog_name="kgcult")
@click.pass_context
def main(ctx, store_location):
    """kgcult: a local Wikidata mirror for research on cultural knowledge in LMs."""
    ctx.obj = Context(store_location)
    ctx.call_on_close(ctx.obj.close)


# -- load -----------------------------------------------------------------------------

@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--graph", metavar="IRI", help="Named graph for triple files (default: "
              "https://w3id.org/kgcult/graph/<file stem>); a bare name is put under that prefix.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def load(obj: Context, files, graph, progress):
    """Bulk-load RDF files (nt, nq, ttl, trig; plain or .gz/.bz2/.zst).

    All or nothing: a malformed file is reported with file and line and the store keeps
    exactly what it had before.

    \b
    Example:
      kgcult load ../shared/standin/wikidata-standin.nt.gz --graph standin
    """
    store = obj.store()
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    callback = None
    if show:
        from tqdm import tqdm

        total = sum(Path(f).stat().st_size for f in files if Path(f).is_file())
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="load", file=sys.stderr)
        callback = bar.update
    try:
        reports = store.load(list(files), graph=graph, progress=callback)
    finally:
        if bar is not None:
            bar.close()
    for r in reports:
        rate = r.triples / r.seconds if r.seconds else 0
        info(f"{r.path}: {r.triples} triples into {r.graph or '(graphs named in the file)'} "
             f"in {r.seconds:.1f} s ({rate:,.0f} triples/s)")
    info("the hierarchy closure is now stale: run `kgcult closure` (commands that need it rebuild it)")


# -- snapshot -------------------------------------------------------------------------

@main.group("snapshot")
def snapshot_group():
    """Versioned snapshots: sorted, compressed N-Quads plus MANIFEST.json."""


@snapshot_group.command("export")
@click.argument("directory", type=click.Path(file_okay=False))
@click.pass_obj
def snapshot_export(obj: Context, directory):
    """Write a snapshot of the store's data and metadata graphs to DIRECTORY.

    \b
    Example:
      kgcult snapshot export dumps/2026-11-22
    """
    manifest = snapshot.export(obj.store(), directory)
    info(f"{directory}: {manifest['triples']} triples in "
         f"{sum(1 for g in manifest['graphs'] if not g['metadata'])} graphs, "
         f"content sha256 {manifest['content_sha256']}")
    click.echo(manifest["content_sha256"])


@snapshot_group.command("import")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--replace", is_flag=True, help="Replace graphs the store already holds.")
@click.pass_obj
def snapshot_import(obj: Context, directory, replace):
    """Verify every hash of a snapshot, then load it.

    \b
    Example:
      kgcult snapshot import dumps/seed
    """
    manifest = snapshot.import_(obj.store(), directory, replace=replace)
    info(f"imported {manifest['triples']} triples from {directory} "
         f"(content sha256 {manifest['content_sha256']}); the closure is stale")
    click.echo(manifest["content_sha256"])


@snapshot_group.command("verify")
@click.argument("directory", type=click.Path(file_okay=False))
def snapshot_verify(directory):
    """Check a snapshot's hashes and counts without loading it."""
    manifest = snapshot.verify(directory)
    click.echo(f"ok {manifest['content_sha256']} {manifest['triples']} triples")


# -- closure --------------------------------------------------------------------------

@main.command()
@click.option("--specs", type=click.Path(dir_okay=False, exists=True),
              help="Closure specs (default ontology/closures.ttl).")
@click.pass_obj
def closure(obj: Context, specs):
    """(Re)build the derived hierarchy graphs (P279, P31/P279*, P361, P131, ...).

    \b
    Example:
      kgcult closure
    """
    store = obj.store()
    specs_ = hierarchy.load_specs(specs) if specs else None

    def report(r):
        msg = f"{r.spec}: {r.edges_in} edges -> {r.triples_out} triples in {r.graph} ({r.seconds:.1f} s)"
        if r.cycles:
            shown = "; ".join(" -> ".join(vocab.qid_of(n) or n for n in c[:6]) for c in r.cycles[:5])
            msg += f"\n  {len(r.cycles)} cycle(s) tolerated: {shown}"
        info(msg)

    hierarchy.build(store, specs_, progress=report)


# -- sparql ---------------------------------------------------------------------------

@main.command()
@click.argument("query", required=False)
@click.option("-f", "--file", "query_file", type=click.File("r", encoding="utf-8"),
              help="Read the query from a file ('-' for stdin).")
@click.option("--format", "fmt", type=click.Choice(results.FORMATS), default="table", show_default=True)
@click.option("--graph", metavar="IRI", help="Query only this named graph (default: union of all graphs).")
@click.pass_obj
def sparql(obj: Context, query, query_file, fmt, graph):
    """Run a SPARQL query over the union of all graphs.

    Common prefixes (wd, wdt, rdfs, skos, schema, wikibase, kgc, ...) are predeclared.
    CONSTRUCT and DESCRIBE print N-Triples.

    \b
    Examples:
      kgcult sparql 'SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }'
      kgcult sparql -f queries/checks/dishes-per-country.rq --format csv
    """
    if query and query_file:
        raise KgcultError("give the query either as an argument or with -f, not both")
    if query_file:
        query = query_file.read()
    if not query:
        raise KgcultError("no query: pass it as an argument or with -f FILE (or -f - for stdin)")
    store = obj.store(read_only=False)
    if graph:
        graph = vocab.graph_iri(graph)
    res = store.query(query, graph=graph)
    results.write(res, fmt, sys.stdout)


# -- show / stats ---------------------------------------------------------------------

@main.command()
@click.argument("qid")
@click.option("--lang", default="en", show_default=True, help="Language of the labels shown.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def show(obj: Context, qid, lang, fmt):
    """An entity card: labels, claims with object labels, ancestors from the closure.

    \b
    Example:
      kgcult show Q746549 --lang ja
    """
    store = obj.store()
    hierarchy.ensure_closure(store, log=info)
    card = inspect.show(store, qid, lang=lang)
    if fmt == "json":
        click.echo(json.dumps(card, ensure_ascii=False, indent=2))
    else:
        click.echo(inspect.format_card(card, lang), nl=False)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def stats(obj: Context, fmt):
    """Triples per graph, entities per root class, rdfs:label counts per language.

    \b
    Example:
      kgcult stats --format json
    """
    s = inspect.stats(obj.store())
    if fmt == "json":
        click.echo(json.dumps(s, ensure_ascii=False, indent=2))
    else:
        click.echo(inspect.format_stats(s), nl=False)


# -- commands of the other modules (each module adds its commands to `main`) -----------
from .cli_mirror import ingest_command, mirror_command  # noqa: E402
main.add_command(mirror_command)
main.add_command(ingest_command)
from .cli_views import build_command, views_command  # noqa: E402

main.add_command(views_command)
main.add_command(build_command)
from .cli_link import link_group, makieval_group  # noqa: E402
main.add_command(link_group)
main.add_command(makieval_group)
from .cli_probe import probe_group, spectral_cmd  # noqa: E402
main.add_command(probe_group)
main.add_command(spectral_cmd)
from .cli_serve import serve as _serve_command  # noqa: E402

main.add_command(_serve_command)
from .cli_synth import synth_cmd, taxonomy_cmd  # noqa: E402
main.add_command(taxonomy_cmd)
main.add_command(synth_cmd)


if __name__ == "__main__":  # pragma: no cover
    main()
