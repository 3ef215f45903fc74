"""Inspection commands: ``sparql``, ``show``, ``stats``."""
from __future__ import annotations

import difflib
import json
import sys

import click
from pyoxigraph import NamedNode

from kgcult import files, ids, inspection
from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.sparql import results
from kgcult.store import hierarchy
from kgcult.cli.checks import label_lang
from kgcult.cli.main import Context, info


# -- sparql ---------------------------------------------------------------------------

@click.command()
@click.argument("query", required=False)
@click.option("-f", "--file", "query_file", type=click.File("rb"),
              help="Read the query from a file ('-' for stdin).")
@click.option("--format", "fmt", type=click.Choice(results.FORMATS), default="table", show_default=True)
@click.option("--graph", metavar="IRI", help="Query only this named graph (default: every graph's triples, each once).")
@click.pass_obj
def sparql(obj: Context, query, query_file, fmt, graph):
    """Run a SPARQL query over every graph's triples, each once (as on WDQS).

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
        query = files.text_of(query_file.read(), getattr(query_file, "name", "<stdin>"))
    if not query:
        raise KgcultError("no query: pass it as an argument or with -f FILE (or -f - for stdin)")
    store = obj.reader()
    if graph:
        graph = _known_graph(store, graph)
    res = store.query(query, graph=graph)
    results.write(res, fmt, sys.stdout)


def _known_graph(store, name: str) -> str:
    """The IRI of ``--graph NAME`` when the store holds that graph; otherwise an error that
    lists the store's graphs (a misspelt name would count 0 with exit 0)."""
    iri = vocab.graph_iri(name)
    if next(iter(store.quads_for_pattern(g=NamedNode(iri))), None) is not None:
        return iri
    graphs = sorted(g for g in store.graph_counts() if g)  # the error path only: it counts
    short = [g[len(vocab.GRAPH):] if g.startswith(vocab.GRAPH) else g for g in graphs]
    hint = difflib.get_close_matches(name, short, n=1)
    raise KgcultError(
        f"--graph {name}: the store has no graph {iri}"
        + (f" (did you mean {hint[0]}?)" if hint else "")
        + "; its graphs: " + (", ".join(short) if short else "none (the store is empty)"))


# -- show / stats ---------------------------------------------------------------------

@click.command()
@click.argument("entity", metavar="QID|PID|IRI|NAME")
@click.option("--lang", default="en", show_default=True, help="Language of the labels shown (and of a NAME).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def show(obj: Context, entity, lang, fmt):
    """An entity card: labels, claims with object labels, ancestors from the closure.
    A property (P495) shows its label and how the store uses it; a name (sushi) shows the
    entity with that label or alias, or lists them when several have it.

    \b
    Examples:
      kgcult show Q746549 --lang ja
      kgcult show http://www.wikidata.org/entity/Q17
      kgcult show sushi
      kgcult show 寿司 --lang ja
      kgcult show P495
    """
    store = obj.reader(closure=True, require=False)
    lang = label_lang(store, lang)
    qid = inspection.resolve(store, entity, lang)
    if qid != entity:
        info(f"{entity}: {qid}")
    if ids.parse(qid, "QP", field="entity").startswith("P"):
        pcard = inspection.property_card(store, ids.parse(qid, "P", field="entity"), lang)
        click.echo(json.dumps(pcard, ensure_ascii=False, indent=2) if fmt == "json"
                   else inspection.format_property_card(pcard), nl=fmt != "text")
        return
    hierarchy.ensure_closure(store)
    card = inspection.show(store, qid, lang=lang)
    if fmt == "json":
        click.echo(json.dumps(card, ensure_ascii=False, indent=2))
    else:
        click.echo(inspection.format_card(card, lang), nl=False)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def stats(obj: Context, fmt):
    """Triples per graph, entities per root class, rdfs:label counts per language.

    \b
    Example:
      kgcult stats --format json
    """
    s = inspection.stats(obj.reader())
    if fmt == "json":
        click.echo(json.dumps(s, ensure_ascii=False, indent=2))
    else:
        click.echo(inspection.format_stats(s), nl=False)
