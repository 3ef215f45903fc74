"""Store commands: ``load``, ``snapshot export|import|verify``, ``closure``."""
from __future__ import annotations

import os
import sys

import click

from kgcult import resources
from kgcult import log as kglog
from kgcult.errors import KgcultError
from kgcult.store import hierarchy
from kgcult.store import snapshot
from kgcult.store import loading
from kgcult.store.loading import LoadInterrupted
from kgcult.cli.main import Context, info


# -- load -----------------------------------------------------------------------------

@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--graph", metavar="IRI", help="Named graph for triple files (default: "
              "https://w3id.org/kgcult/graph/<file stem>); a bare name is put under that prefix.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def load(obj: Context, files, graph, progress):
    """Bulk-load RDF files (nt, nq, ttl, trig; plain or .gz/.bz2/.zst).

    All or nothing across every file: a malformed file is reported with file and line and
    the store keeps exactly what it had before; a load killed or interrupted (Ctrl-C) is
    rolled back by the next writable open. Progress counts triples.

    \b
    Example:
      kgcult load ../shared/standin/wikidata-standin.nt.gz --graph standin
    """
    if graph is not None and not graph.strip():
        raise KgcultError("--graph '': an empty graph name; name the graph (e.g. --graph dishes)")
    loading.check_inputs(files, graph)  # before the store is opened: a bad first load creates nothing
    store = obj.store()
    disable = None if progress is None else not progress
    unit = loading.progress_unit(files)
    try:
        with kglog.progress(total=None, unit=unit, unit_scale=True, desc="load", disable=disable) as bar:
            reports = store.load(list(files), graph=graph, progress=None if bar.disable else bar)
    except LoadInterrupted as e:
        click.echo(str(e), err=True)
        if e.worker_running:  # Oxigraph is finishing a batch in a thread: exit as a kill would
            sys.stderr.flush()
            os._exit(130)
        raise SystemExit(130) from None
    except KeyboardInterrupt:  # before the load began (while checking the files)
        click.echo("interrupted: nothing was loaded", err=True)
        raise SystemExit(130) from None
    for r in reports:
        rate = r.triples / r.seconds if r.seconds else 0
        info(f"{r.path}: {r.triples} triple{'s' if r.triples != 1 else ''} into "
             f"{r.graph or '(graphs named in the file)'} in {r.seconds:.1f} s ({rate:,.0f} triples/s)")
    info("the hierarchy closure is now stale: run `kgcult closure` (commands that need it rebuild it)")


# -- snapshot -------------------------------------------------------------------------

@click.group("snapshot")
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
    manifest = snapshot.export(obj.reader(), directory)
    info(f"{directory}: {manifest['triples']} triples in "
         f"{sum(1 for g in manifest['graphs'] if not g['metadata'])} graphs, "
         f"content sha256 {manifest['content_sha256']}")
    click.echo(manifest["content_sha256"])


@snapshot_group.command("import")
@click.argument("directory", type=click.Path(file_okay=False), required=False)
@click.option("--seed", is_flag=True, help="Import the seed snapshot shipped with kgcult (dumps/seed).")
@click.option("--replace", is_flag=True, help="Replace graphs the store already holds.")
@click.pass_obj
def snapshot_import(obj: Context, directory, seed, replace):
    """Verify every hash of a snapshot, then load it.

    \b
    Examples:
      kgcult snapshot import dumps/seed
      kgcult snapshot import --seed        # the seed inside the installed package
    """
    if bool(directory) == seed:
        raise KgcultError("give a snapshot DIRECTORY or --seed (one of them)")
    directory = directory or str(resources.seed())
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

@click.command()
@click.option("--specs", type=click.Path(dir_okay=False, exists=True),
              help="Closure specs (default ontology/closures.ttl).")
@click.option("--force", is_flag=True,
              help="Rewrite every graph, also those whose input did not change since they were built.")
@click.option("--export", "export_to", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the closure's triples to FILE (N-Triples; gzip for .gz), for an engine's bulk "
                   "loader (docs/serve.md).")
@click.pass_obj
def closure(obj: Context, specs, force, export_to):
    """(Re)build the derived hierarchy graphs (P279, P31/P279*, P361, P131, ...).

    A graph whose input (its spec and the edges it follows) is unchanged since it was
    last built is kept as it is.

    \b
    Example:
      kgcult closure
      kgcult closure --force
      kgcult closure --export closure.nt.gz   # then load it into Virtuoso or QLever
    """
    store = obj.store(create=False)
    chosen = hierarchy.load_specs(specs) if specs else None
    hierarchy.build(store, chosen, force=force)
    if export_to:
        n = hierarchy.export(store, export_to, chosen)
        info(f"closure: {n:,} triples -> {export_to}")
