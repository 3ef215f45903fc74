"""``kgcult mirror`` and ``kgcult ingest``: thin click layers over
:func:`kgcult.acquire.endpoint.mirror.mirror` and :func:`kgcult.acquire.dump.ingest.ingest`."""
from __future__ import annotations

import click

from kgcult.acquire import subgraphs
from kgcult.acquire.dump.ingest import ingest
from kgcult.acquire.endpoint.mirror import mirror
from kgcult.acquire.endpoint.plan import DEFAULT_MAX_MEMBERS
from kgcult.acquire.endpoint.client import WDQS, MirrorConfig
from kgcult.errors import KgcultError

STALE = "the hierarchy closure is now stale: run `kgcult closure` (commands that need it rebuild it)"


def _specs(specs_path, languages, roots, depth) -> dict[str, subgraphs.SubgraphSpec]:
    specs = subgraphs.load_specs(specs_path)
    langs = None
    if languages:
        langs = [x for part in languages for x in part.split(",") if x.strip()]
    root_map: dict[str, list[str]] = {}
    for r in roots or ():
        if "=" not in r:
            raise KgcultError(f"--root {r!r}: expected SUBGRAPH=QID[,QID...]")
        name, _, ids = r.partition("=")
        root_map.setdefault(name.strip(), []).extend(x.strip() for x in ids.split(",") if x.strip())
    return subgraphs.override(specs, languages=langs, roots=root_map or None, depth=depth)


_spec_options = [
    click.option("--specs", "specs_path", type=click.Path(dir_okay=False),
                 help="Subgraph specs (Turtle; default ontology/subgraphs.ttl)."),
    click.option("--languages", "--lang", "languages", multiple=True, metavar="L,L,...",
                 help="Label languages for the labels subgraph (default: the spec's: en zh ko ar he ru "
                      "es fr de ja hi it fa th tr)."),
    click.option("--root", "roots", multiple=True, metavar="SUBGRAPH=QID[,QID]",
                 help="Replace a subgraph's roots (repeatable)."),
    click.option("--depth", type=int, default=None, help="Override every member/follow depth bound."),
]


def spec_options(f):
    for opt in reversed(_spec_options):
        f = opt(f)
    return f


@click.command("mirror")
@click.argument("subgraph", nargs=-1)
@click.option("--endpoint", default=None, metavar="URL", show_default=False,
              help="WDQS-compatible SPARQL endpoint (default https://query.wikidata.org/sparql).")
@spec_options
@click.option("--refresh", is_flag=True, help="Re-pull subgraphs already mirrored and swap them in atomically.")
@click.option("--contact", envvar="KGCULT_CONTACT", default=None, metavar="EMAIL|URL",
              help="Your contact, sent in kgcult's User-Agent (required on public endpoints such as WDQS: "
                   "Wikimedia's User-Agent policy). Env KGCULT_CONTACT.")
@click.option("--user-agent", envvar="KGCULT_USER_AGENT", default=None,
              help="A whole User-Agent instead (`tool/version (contact) lib/version`). Env KGCULT_USER_AGENT.")
@click.option("--concurrency", type=int, default=None,
              help="Parallel requests (default: 1 on public endpoints such as WDQS, 2 elsewhere).")
@click.option("--timeout", type=float, default=90.0, show_default=True, help="Seconds per request.")
@click.option("--batch-size", type=int, default=250, show_default=True, help="Entity ids per CONSTRUCT.")
@click.option("--class-batch-size", type=int, default=250, show_default=True, help="Classes per enumeration query.")
@click.option("--page-size", type=int, default=10000, show_default=True,
              help="Most rows one enumeration query may return (each is sized by a count first).")
@click.option("--max-members", type=int, default=DEFAULT_MAX_MEMBERS, show_default=True,
              help="Refuse, before fetching, a subgraph whose counted first level (or one class) has more "
                   "members: take it from a dump with `kgcult ingest` instead.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Count each subgraph's first level at the endpoint, print the plan and stop (nothing is fetched).")
@click.option("--max-attempts", type=int, default=8, show_default=True, help="Tries per query.")
@click.option("--retry-budget", type=int, default=200, show_default=True, help="Retries allowed in the whole run.")
@click.option("--backoff", type=float, default=1.0, show_default=True,
              help="First backoff in seconds (doubles per retry, with jitter).")
@click.option("--max-backoff", type=float, default=120.0, show_default=True)
@click.option("--max-retry-after", type=float, default=600.0, show_default=True,
              help="Cap on a 429/503 Retry-After (seconds).")
@click.option("--format", "construct_format", type=click.Choice(["rdfxml", "ntriples", "turtle"]),
              default="rdfxml", show_default=True,
              help="CONSTRUCT result format (rdfxml detects truncation anywhere in a body).")
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Checkpoint file (default <store>.mirror-checkpoint.sqlite).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def mirror_command(obj, subgraph, endpoint, specs_path, languages, roots, depth, refresh, contact, user_agent,
                   concurrency, timeout, batch_size, class_batch_size, page_size, max_attempts,
                   retry_budget, backoff, max_backoff, max_retry_after, construct_format, checkpoint,
                   progress, max_members, plan_only) -> None:
    """Mirror Wikidata subgraphs (all, or those named) from a SPARQL endpoint.

    Each subgraph goes to its own named graph (https://w3id.org/kgcult/graph/<name>).
    Interrupted runs resume from the checkpoint: run the same command again.

    \b
    Examples:
      kgcult mirror --contact me@example.org
      kgcult mirror --user-agent 'my-lab-mirror/1.0 (me@example.org) kgcult/1.0'
      kgcult mirror dishes labels --endpoint http://127.0.0.1:7878/query --lang en,ja
      kgcult mirror countries --refresh
    """
    specs = _specs(specs_path, languages, roots, depth)
    cfg = MirrorConfig(
        endpoint=WDQS if endpoint is None else endpoint, user_agent=user_agent, contact=contact, timeout=timeout,
        concurrency=concurrency, batch_size=batch_size, class_batch_size=class_batch_size,
        page_size=page_size, max_attempts=max_attempts, retry_budget=retry_budget, backoff=backoff,
        max_backoff=max_backoff, max_retry_after=max_retry_after, construct_format=construct_format,
        refresh=refresh, checkpoint=checkpoint,
    )
    estimates: list = []
    try:
        reports = mirror(obj.store(), list(subgraph), config=cfg, specs=specs, progress=progress,
                         max_members=max_members, plan_only=plan_only, plan_out=estimates)
    finally:
        if plan_only:
            _print_plan(estimates)
    if not plan_only:
        _report(reports, "mirrored")


def _print_plan(estimates) -> None:
    """One line per subgraph: name, first-level members (or 'seeded'), partitions, verdict."""
    for e in estimates:
        n = "seeded" if e.first_level is None else str(e.first_level)
        click.echo(f"{e.name}\t{n}\t{e.partitions}\t{'refused' if e.refused else 'ok'}")


@click.command("ingest")
@click.argument("dump", type=click.Path(dir_okay=False))
@click.argument("subgraph", nargs=-1)
@spec_options
@click.option("--format", "fmt", type=click.Choice(["auto", "json", "ntriples"]), default="auto",
              show_default=True, help="Dump format (auto: by file name).")
@click.option("--refresh", is_flag=True, help="Replace subgraphs already in the store.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Worker processes parsing the dump (default: the usable cores).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local: worker processes on this machine; spark: Spark jobs (pip install 'kgcult[spark]').")
@click.option("--master", default=None, metavar="URL",
              help="Spark master for --engine spark (default local[*]; e.g. spark://host:7077, yarn).")
@click.option("--output", type=click.Path(file_okay=False), default=None,
              help="--engine spark: keep the output partitions (OUTPUT/subgraph=NAME/part-*, N-Triples) here.")
@click.option("--sitelinks", "sitelinks", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Sitelink counts for an N-Triples dump (the truthy dump has none): QID<TAB>count lines, "
                   "or the full RDF dump's wikibase:sitelinks lines.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def ingest_command(obj, dump, subgraph, specs_path, languages, roots, depth, fmt, refresh, jobs, engine, master,
                   output, sitelinks, progress):
    """Filter a Wikidata JSON dump (.json/.json.gz/.json.bz2) or truthy N-Triples dump
    (.nt/.nt.gz/.nt.bz2) into the subgraphs: the same graphs and RDF as `kgcult mirror`.

    \b
    Examples:
      kgcult ingest latest-all.json.bz2
      kgcult ingest latest-truthy.nt.gz countries labels --lang en,ar
      kgcult ingest latest-truthy.nt.gz --sitelinks sitelinks.tsv.gz
      kgcult ingest latest-all.json.bz2 --engine spark --master 'local[*]'

    The dump is read once: a parallel decompressor is used when installed (pigz or
    rapidgzip for .gz, lbzip2 or indexed_bzip2 for .bz2), worker processes parse it (msgspec and orjson with
    kgcult[dump]: only the claims and languages the subgraphs use are decoded).
    What a dump cannot give is said on stderr and in the provenance: the truthy dump has
    no sitelink counts (add them with --sitelinks).
    """
    specs = _specs(specs_path, languages, roots, depth)
    if engine == "local" and (master or output):
        raise KgcultError("--master and --output go with --engine spark")
    _report(ingest(obj.store(), dump, list(subgraph), specs=specs, fmt=fmt, refresh=refresh, progress=progress,
                   jobs=jobs, engine=engine, master=master, output=output, sitelinks=sitelinks), "ingested")


def _report(reports, done: str) -> None:
    """One line per subgraph on stdout; the closure note on stderr when a graph changed."""
    for r in reports:
        click.echo(f"{r.name}\t{'skipped' if r.skipped else done}\t{r.triples}\t{r.graph}")
    if any(not r.skipped for r in reports):
        click.echo(STALE, err=True)
