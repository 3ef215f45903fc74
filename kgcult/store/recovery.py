"""The store's one journal, kept beside the store, and the one recovery a writable open runs.

Every write command (``Store.writing``: load, snapshot import, ingest, mirror, a SPARQL
Update, the closure build) writes one *entry* in the journal, ``<store>.journal.json``,
before it writes the store: a file beside the store, written whole (a temporary file
renamed over it, fsync'd) with a sha256 of its entries. No SPARQL update, snapshot or data
file can write it: what steers recovery is never read from the store's data, so forged
metadata can at most be wrong data, never an instruction.

An entry names what undoes its command and what finishes it:

- ``creates``: graphs empty before the command (rolling back drops them);
- ``stages``: ``(staging graph, target)`` pairs: a file whose graph held data is loaded
  beside it and copied in when the command commits;
- ``saved``: the store's state before (closure freshness, content hashes, data version),
  put back by a rollback, so the store is exactly as before, facts cached for its data
  version included;
- ``swaps``: ``(staging graph, target)`` pairs: the commit makes the target equal to the
  staging graph (a refreshed mirror or ingest subgraph, a graph ``import --replace`` replaces);
- ``commit``: the update operations that commit it (provenance records, state);
- ``marks``: graphs whose triples the default graph (the set) may lack until the commit.

An entry is ``in-progress`` until the command commits: :func:`commit` first marks it
``committing`` (the journal's own write is the commit point), then runs its operations,
copies its staging graphs in, makes its swapped graphs equal to theirs, and removes it. :func:`recover` (once
per writable open) settles every ``in-progress`` entry (:func:`undo`: a load, import,
ingest or mirror is rolled back; an update cannot be, and its marked graphs are brought
into the set; a closure build leaves the closure stale) and rolls every ``committing`` one
forward; all idempotent, so a kill during recovery is recovered again. Until then readers
see an entry's graphs as partial (:func:`partial_graphs`).

A journal whose checksum or shape is wrong is refused by every writable open with one
line saying how to repair it; read-only opens keep working (with a notice).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

import pyoxigraph as ox
from pyoxigraph import NamedNode, Quad

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.store import base, provenance, setgraph, sidefiles

log = logging.getLogger(__name__)

IN_PROGRESS, COMMITTING = "in-progress", "committing"
STAGING = vocab.STAGING_GRAPH + "load/"
_FORMAT = "kgcult-journal/1"


class JournalDamaged(KgcultError):
    """The journal beside the store cannot be trusted (checksum, JSON or shape)."""


_NAMES = {"load": "load", "import": "snapshot import", "ingest": "ingest", "mirror": "mirror",
          "update": "SPARQL Update", "closure": "closure build"}
UNDOABLE = ("load", "import", "ingest", "mirror")  # an unfinished one is rolled back


@dataclass
class Entry:
    key: str
    kind: str                                   # a key of _NAMES
    what: str                                   # for messages: the files, the snapshot
    status: str = IN_PROGRESS
    creates: list[str] = field(default_factory=list)
    stages: list[list[str]] = field(default_factory=list)    # [staging graph, target]
    saved: list[str] = field(default_factory=list)           # N-Quads of the saved state
    commit: list[str] = field(default_factory=list)          # update operations
    marks: list[str] = field(default_factory=list)           # graphs marked pending for the set
    swaps: list[list[str]] = field(default_factory=list)     # [staging graph, target it replaces]

    @property
    def title(self) -> str:
        return f"{_NAMES.get(self.kind, self.kind)} of {self.what}"

    def graphs(self) -> list[str]:
        """The graphs readers take as partial while the entry is there."""
        return sorted({*self.creates, *(t for _, t in self.stages + self.swaps)})


def path_of(location: str | os.PathLike) -> Path:
    return sidefiles.side_path(location, "journal")


def new_key() -> str:
    return hashlib.sha256(f"{time.time_ns()}|{os.getpid()}|{os.urandom(8).hex()}".encode()).hexdigest()[:16]


def staging_graph(key: str, index: int) -> str:
    return f"{STAGING}{key}/{index}"


# -- the file ---------------------------------------------------------------------------

def _digest(entries: list) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def read(location: str | os.PathLike) -> list[Entry]:
    """The journal's entries (none when there is no journal); JournalDamaged when it cannot
    be trusted."""
    path = path_of(location)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise _damaged(path, f"cannot read it: {e.strerror or e}") from None
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT or not isinstance(doc.get("entries"), list):
            raise ValueError("not a kgcult journal")
        if doc.get("sha256") != _digest(doc["entries"]):
            raise ValueError("its checksum does not match its entries")
        return [_entry(e) for e in doc["entries"]]
    except (ValueError, TypeError, KeyError) as e:
        raise _damaged(path, str(e)) from None


def _damaged(path: Path, why: str) -> JournalDamaged:
    return JournalDamaged(
        f"{path}: the store's journal is damaged ({why}); a writable open cannot tell which "
        f"interrupted command to undo or finish. Read-only commands still work. To repair: "
        f"check the graphs with `kgcult stats`, then move the journal aside (`mv {path} {path}.damaged`) "
        "and reload or re-import any graph it shows as partial")


def _strings(value, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what}: expected a list of strings")
    return list(value)


def _iri(value: str, what: str) -> str:
    NamedNode(value)  # ValueError when it is not an IRI
    return value


def _entry(raw) -> Entry:
    """An entry checked field by field: a graph it would drop is a user graph, a graph it
    would copy from is one of kgcult's staging graphs."""
    if not isinstance(raw, dict):
        raise ValueError("an entry is not an object")
    e = Entry(key=str(raw["key"]), kind=str(raw["kind"]), what=str(raw.get("what", "")),
              status=str(raw["status"]))
    if e.status not in (IN_PROGRESS, COMMITTING) or e.kind not in _NAMES:
        raise ValueError(f"entry {e.key}: unknown status or kind")
    e.creates = [_iri(g, "creates") for g in _strings(raw.get("creates", []), "creates")]
    for g in e.creates:
        if base.is_reserved(g):
            raise ValueError(f"entry {e.key}: would drop kgcult's own graph {g}")
    for name in ("stages", "swaps"):
        for pair in raw.get(name, []):
            stage, target = _strings(pair, name)
            if not stage.startswith(vocab.STAGING_GRAPH) or base.is_reserved(target):
                raise ValueError(f"entry {e.key}: a staging pair that is not one")
            getattr(e, name).append([_iri(stage, "stage"), _iri(target, "target")])
    e.saved = _strings(raw.get("saved", []), "saved")
    e.commit = _strings(raw.get("commit", []), "commit")
    e.marks = [_iri(g, "marks") for g in _strings(raw.get("marks", []), "marks")]
    if raw.get("replace"):
        raise ValueError(f"entry {e.key}: an import --replace by an older kgcult, which this one cannot finish")
    return e


def _write(location: str | os.PathLike, entries: list[Entry]) -> None:
    path = path_of(location)
    if not entries:
        path.unlink(missing_ok=True)
        return
    raw = [asdict(e) for e in entries]
    data = json.dumps({"format": _FORMAT, "entries": raw, "sha256": _digest(raw)}, indent=1)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _put(location, entry: Entry) -> None:
    entries = [e for e in read(location) if e.key != entry.key]
    _write(location, entries + [entry])


def _drop(location, key: str) -> None:
    _write(location, [e for e in read(location) if e.key != key])


# -- a command's life -------------------------------------------------------------------

def begin(store, *, kind: str, what: str, creates: Iterable[str] = (), stages: Iterable[tuple[str, str]] = (),
          marks: Iterable[str] = (), key: str | None = None, swaps: Iterable[tuple[str, str]] = ()) -> Entry:
    """Journal a command about to write (in the file, first), then mark the store's data
    changed (closure stale and, but for a closure build, a new data version). ``stages``
    are added to their targets at the commit, ``swaps`` replace theirs; ``marks`` are
    brought into the set if it never commits."""
    db: ox.Store = store.ox
    entry = Entry(key or new_key(), kind, what, IN_PROGRESS, sorted(set(creates)),
                  [[s, t] for s, t in stages], [str(q) for q in provenance.saved_state(db)],
                  marks=sorted(set(marks)), swaps=[[s, t] for s, t in swaps])
    _put(store.location, entry)
    store.note_write()
    provenance.run(db, provenance.stale_ops(data=kind != "closure"))
    return entry


def commit(store, entry: Entry, ops: Iterable[str] = ()) -> None:
    """Commit: the journal says so first (with ``ops``, what commits it), then the store
    gets ``ops``, the staging graphs are copied in or swapped (:func:`roll_forward`)."""
    entry.status, entry.commit = COMMITTING, [op for op in ops if op]
    _put(store.location, entry)
    roll_forward(store, entry)


def roll_forward(store, entry: Entry) -> None:
    """Finish a committed entry; idempotent if killed at any point."""
    db: ox.Store = store.ox
    provenance.run(db, entry.commit)
    for stage, target in entry.stages:
        s = NamedNode(stage)
        if not db.contains_named_graph(s):
            continue  # done before a kill
        t, visible = NamedNode(target), setgraph.visible(target)
        db.bulk_extend(_both(db.quads_for_pattern(None, None, None, s), t, visible))
        db.flush()
        setgraph.drop(db, stage)
    for stage, target in entry.swaps:
        if db.contains_named_graph(NamedNode(stage)):  # else done before a kill
            setgraph.replace_graph(db, target, stage)  # batches: idempotent
            setgraph.drop(db, stage)
    _drop(store.location, entry.key)


def _both(quads, target: NamedNode, visible: bool):
    for q in quads:
        yield Quad(q.subject, q.predicate, q.object, target)
        if visible:
            yield Quad(q.subject, q.predicate, q.object, setgraph.DEFAULT)


def rollback(store, entry: Entry) -> None:
    """Undo an uncommitted entry: drop its staging graphs and the graphs it created (a
    batch per transaction, each triple leaving the default graph unless another graph
    holds it), put the saved state back, then forget it; idempotent."""
    db: ox.Store = store.ox
    for stage, _ in entry.stages + entry.swaps:
        setgraph.drop(db, stage)
    for graph in entry.creates:
        setgraph.drop(db, graph)
    saved = [_quad(text) for text in entry.saved]
    provenance.run(db, provenance.delete_fields(provenance.STATE, provenance.SAVED_STATES)
                   + [provenance.insert_data(saved)])
    _drop(store.location, entry.key)


def undo(store, entry: Entry, applied: bool = True) -> str:
    """Settle an entry that did not commit (idempotent): a load, import, ingest or mirror is
    rolled back, as is any entry that wrote nothing yet (``applied`` False); an update, whose
    own transaction committed or not, has its marked graphs brought into the set; a closure
    build leaves the closure stale (the next command that needs it rebuilds it) and its
    scratch records are removed. Returns what was done."""
    if entry.kind in UNDOABLE or not applied:
        rollback(store, entry)
        return f"rolled back the interrupted {entry.title}: the store is as it was before it"
    if entry.kind == "update":
        setgraph.repair(store.ox, entry.marks)
    else:
        shutil.rmtree(sidefiles.side_path(store.location, "closure-build"), ignore_errors=True)
    _drop(store.location, entry.key)
    return f"settled the interrupted {entry.title}" + (
        " (the closure stays stale until it is built again)" if entry.kind == "closure" else "")


def status(store, entry: Entry) -> str | None:
    """An entry's status in the journal: in-progress, committing, or None (done)."""
    return next((e.status for e in read(store.location) if e.key == entry.key), None)


def _quad(text: str) -> Quad:
    return next(iter(ox.parse(input=(text + " .\n").encode(), format=ox.RdfFormat.N_QUADS)))


# -- on open ------------------------------------------------------------------------------

def recover(store) -> list[str]:
    """Everything a writable open repairs, once: every journal entry settled or rolled
    forward, the files of a killed bulk load removed. One message per repair (for the log)."""
    messages = []
    for entry in read(store.location):  # JournalDamaged: one line, the store left as it is
        if entry.status == COMMITTING:
            roll_forward(store, entry)
            messages.append(f"finished a {entry.title} (into {', '.join(entry.graphs())}), which was "
                            "interrupted while committing")
        else:  # a big load takes a while (Oxigraph's delete rate): say so before, not only after
            log.info("settling the interrupted %s (%s)...", entry.title, ", ".join(entry.graphs()))
            messages.append(undo(store, entry))
    remove_bulk_leftovers(store.location)
    return messages


def remove_bulk_leftovers(location: str) -> None:
    """Delete the ``bulk-*.sst`` files Oxigraph's bulk loader writes into the store directory
    and ingests at its end: a killed or failed load leaves them behind (hundreds of MB, for
    ever). Called only by the process that holds the store for writing, with no load of its
    own running, so no load can be using them."""
    freed, n = 0, 0
    for f in Path(location).glob("bulk-*.sst"):
        try:
            size = f.stat().st_size
            f.unlink()
        except OSError:
            continue
        freed, n = freed + size, n + 1
    if n:
        log.info("%s: removed %d file(s) (%.1f MB) left by an interrupted bulk load", location, n, freed / 1e6)


def partial_graphs(location: str | os.PathLike) -> list[str]:
    """Graphs an unfinished command is writing or left half-written (a damaged journal:
    none can be named, and the open says so)."""
    try:
        return sorted({g for e in read(location) for g in e.graphs()})
    except JournalDamaged:
        return []
