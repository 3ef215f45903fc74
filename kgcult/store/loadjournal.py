"""One journal entry per load command, so that ``kgcult load a.nt b.nt ...`` is all or
nothing across its files, killed or failed at any point.

Oxigraph's bulk loader commits on its own (in batches, for a big file), so a command's
data cannot share a transaction with its record. Instead, before the first file:

1. one transaction writes the command's record (``meta/load/<key>``, ``kgc:status
   "in-progress"``) naming what undoes it: the graphs the command creates
   (``kgc:loadCreates``: empty before it, so rolling back drops them), the staging graph
   of each file that goes into a graph holding data before (``kgc:loadStage "<staging>
   <target>"``: such a file is loaded beside its graph, not into it), and the store's state
   as it was (``kgc:savedState``: closure freshness, content hashes, data version, the
   default graph's flag), marks the closure stale and gives the data a new version;
2. the files are loaded (a created graph directly, into its named graph then into the
   default graph; a staged file into its staging graph, outside the default graph);
3. one transaction commits: the files' provenance records (one ``kgc:Load`` each), and
   either the record's removal (nothing staged) or ``kgc:status "committing"``; then each
   staging graph is copied into its target and into the default graph and dropped, and
   the record removed.

The next writable open (:func:`repair`) rolls an ``in-progress`` command back (drops its
staging and created graphs the set-keeping way, puts the saved state back: the store is
exactly as before the command) and rolls a ``committing`` one forward (the copies are
idempotent). Until then readers see the command's graphs as partial
(:func:`graphs_in_progress`, :mod:`kgcult.store.health`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Iterable

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode, Quad

from kgcult import vocab
from kgcult.store import journal, setgraph
from kgcult.store.journal import IN_PROGRESS, META, STATE, run

log = logging.getLogger(__name__)

PREFIX = f"{vocab.GRAPH}meta/load/"
STAGING = vocab.STAGING_GRAPH + "load/"
COMMITTING = "committing"
FIELDS = ("loadCreates", "loadStage", "savedState", "loadFiles")  # journal fields (never provenance)
_K = vocab.kgc


@dataclass
class Command:
    node: NamedNode
    status: str = IN_PROGRESS
    creates: list[str] = field(default_factory=list)
    stages: list[tuple[str, str]] = field(default_factory=list)  # (staging graph, target)
    saved: list[Quad] = field(default_factory=list)
    files: str = ""

    def graphs(self) -> list[str]:
        """The graphs readers should take as partial while the command is unfinished."""
        return sorted({*self.creates, *(t for _, t in self.stages)})


def new_key() -> str:
    return hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:16]


def staging_graph(key: str, index: int) -> str:
    return f"{STAGING}{key}/{index}"


def begin(store: ox.Store, key: str, *, files: Iterable[str], creates: Iterable[str],
          stages: Iterable[tuple[str, str]]) -> Command:
    """Journal a load command about to start, in one transaction (see the module doc)."""
    cmd = Command(NamedNode(PREFIX + key), IN_PROGRESS, sorted(set(creates)), list(stages),
                  journal.saved_state(store), ", ".join(files))
    quads = [Quad(cmd.node, _K("status"), Literal(IN_PROGRESS), META),
             Quad(cmd.node, _K("loadFiles"), Literal(cmd.files), META),
             Quad(cmd.node, _K("savedState"), Literal(json.dumps([str(q) for q in cmd.saved])), META)]
    quads += [Quad(cmd.node, _K("loadCreates"), NamedNode(g), META) for g in cmd.creates]
    quads += [Quad(cmd.node, _K("loadStage"), Literal(f"{s} {t}"), META) for s, t in cmd.stages]
    run(store, journal.stale_ops() + [journal.insert_data(quads)])
    return cmd


def commit(store: ox.Store, cmd: Command, records: Iterable[Quad]) -> None:
    """Commit the command: its provenance ``records`` in, the record out (or, with staged
    files, marked committing and finished by :func:`roll_forward`)."""
    forget = f"DELETE WHERE {{ GRAPH {META} {{ {cmd.node} ?p ?o }} }}"
    if not cmd.stages:
        run(store, [forget, journal.insert_data(records)])
        return
    run(store, [f"DELETE WHERE {{ GRAPH {META} {{ {cmd.node} {_K('status')} ?o }} }}",
                journal.insert_data([*records, Quad(cmd.node, _K("status"), Literal(COMMITTING), META)])])
    cmd.status = COMMITTING
    roll_forward(store, cmd)


def roll_forward(store: ox.Store, cmd: Command) -> None:
    """Copy each staging graph still there into its target and the default graph, drop it,
    then forget the record; idempotent if killed at any point."""
    for stage, target in cmd.stages:
        s = NamedNode(stage)
        if not store.contains_named_graph(s):
            continue  # done before a kill
        t, visible = NamedNode(target), setgraph.visible(target)
        store.bulk_extend(_both(store.quads_for_pattern(None, None, None, s), t, visible))
        store.flush()
        setgraph.drop(store, stage)
    run(store, [f"DELETE WHERE {{ GRAPH {META} {{ {cmd.node} ?p ?o }} }}"])


def _both(quads, target: NamedNode, visible: bool):
    for q in quads:
        yield Quad(q.subject, q.predicate, q.object, target)
        if visible:
            yield Quad(q.subject, q.predicate, q.object, setgraph.DEFAULT)


def rollback(store: ox.Store, cmd: Command) -> None:
    """Undo an uncommitted command: drop its staging graphs and the graphs it created (a
    batch per transaction, each triple leaving the default graph unless another graph
    holds it), then forget the record and put the saved state back; idempotent."""
    for stage, _ in cmd.stages:
        setgraph.drop(store, stage)
    for graph in cmd.creates:
        setgraph.drop(store, graph)
    run(store, [f"DELETE WHERE {{ GRAPH {META} {{ {cmd.node} ?p ?o }} }}"]
        + journal.delete_fields(STATE, journal.SAVED_STATES) + [journal.insert_data(cmd.saved)])


def status(store: ox.Store, node: NamedNode) -> str | None:
    """A command's status in the store: in-progress, committing, or None (committed)."""
    for q in store.quads_for_pattern(node, _K("status"), None, META):
        return vocab.value(q.object)
    return None


def unfinished(store: ox.Store) -> list[Command]:
    """The load commands a killed or interrupted process left (in-progress or committing)."""
    out = []
    for status in (IN_PROGRESS, COMMITTING):
        for q in store.quads_for_pattern(None, _K("status"), Literal(status), META):
            node = q.subject
            if isinstance(node, NamedNode) and node.value.startswith(PREFIX):
                out.append(_read(store, node, status))
    return out


def _read(store: ox.Store, node: NamedNode, status: str) -> Command:
    cmd = Command(node, status)
    for q in store.quads_for_pattern(node, None, None, META):
        name, value = q.predicate.value[len(vocab.KGC):], vocab.value(q.object)
        if name == "loadCreates":
            cmd.creates.append(value)
        elif name == "loadStage":
            stage, target = value.split(" ")
            cmd.stages.append((stage, target))
        elif name == "savedState":
            cmd.saved = [_quad(text) for text in json.loads(value)]
        elif name == "loadFiles":
            cmd.files = value
    cmd.creates.sort()
    cmd.stages.sort()
    return cmd


def _quad(text: str) -> Quad:
    return next(iter(ox.parse(input=(text + " .\n").encode(), format=ox.RdfFormat.N_QUADS)))


def repair(store: ox.Store) -> list[str]:
    """Roll back every in-progress command, roll forward every committing one; one message
    each."""
    messages = []
    for cmd in unfinished(store):
        if cmd.status == COMMITTING:
            roll_forward(store, cmd)
            messages.append(f"finished the load of {cmd.files}, which was interrupted while committing")
        else:  # a big load takes a while (Oxigraph's delete rate): say so before, not only after
            log.info("rolling back the interrupted load of %s (%s)...", cmd.files, ", ".join(cmd.graphs()))
            rollback(store, cmd)
            messages.append(f"rolled back the interrupted load of {cmd.files}: the store is as it was before it")
    return messages


def graphs_in_progress(store: ox.Store) -> list[str]:
    """Graphs that an unfinished load (this kgcult's commands, or an older one's per-file
    record) is writing or left half-written: partial for every reader until repaired."""
    graphs = {g for cmd in unfinished(store) for g in cmd.graphs()}
    graphs.update(rec["graph"] for rec in journal.unfinished(store) if rec["graph"])
    return sorted(graphs)


# for a remote store: the same graphs by SPARQL (bind META and the predicates)
REMOTE_QUERY = f"""SELECT DISTINCT ?g WHERE {{ GRAPH <{vocab.META_GRAPH}> {{
  ?n <{vocab.KGC}status> ?st FILTER(?st IN ("{IN_PROGRESS}", "{COMMITTING}"))
  {{ ?n <{vocab.KGC}loadCreates> ?g }} UNION {{ ?n <{vocab.KGC}targetGraph> ?g }} UNION
  {{ ?n <{vocab.KGC}loadStage> ?pair BIND(IRI(STRAFTER(STR(?pair), " ")) AS ?g) }} }} }}"""
