"""The journal that steers recovery lives beside the store, not in its data (issue 38, the
write-path attacks of issue 40): forged or malformed records in the metadata graph are
never acted on, `/update` refuses `LOAD` and writes to kgcult's own graphs, and a damaged
journal is one error line for writers while readers keep working. Each test replays an
attack as it was sent (a token holder's `/update`), then the deeper layer (the record
written into the metadata graph by any other means)."""
from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad

from kgcult import vocab
from kgcult.serve.config import ServeConfig
from kgcult.store import Store, recovery

from tests.conftest import build_store, running_server

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "journal-trust-token-123"
META = vocab.META_GRAPH
K = vocab.KGC
NT = "".join(f'<http://www.wikidata.org/entity/Q{i}> <http://www.w3.org/2000/01/rdf-schema#label> "item {i}"@en .\n'
             for i in range(50))


def _post(url: str, text: str) -> tuple[int, str]:
    req = urllib.request.Request(url + "/update", data=text.encode(), headers={
        "Content-Type": "application/sparql-update", "Authorization": "Bearer " + TOKEN})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, ""
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgcult", "--store", str(store), *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def _store_with(tmp_path: Path, *graphs: str) -> Path:
    path = tmp_path / "store"
    f = tmp_path / "victim.nt"
    f.write_text(NT)
    with Store(path) as s:
        for g in graphs:
            s.load([f], graph=g)
    return path


FORGED_IN_PROGRESS = (f'INSERT DATA {{ GRAPH <{META}> {{ <{vocab.GRAPH}meta/load/forged> <{K}status> "in-progress" ; '
                      f'<{K}loadCreates> <{vocab.GRAPH}victim> ; <{K}savedState> "[]" ; <{K}loadFiles> "x" }} }}')
FORGED_COMMITTING = (f'INSERT DATA {{ GRAPH <{META}> {{ <{vocab.GRAPH}meta/load/forged2> <{K}status> "committing" ; '
                     f'<{K}loadStage> "{vocab.GRAPH}victim {vocab.GRAPH}other" ; <{K}savedState> "[]" }} }}')
MALFORMED = (f'INSERT DATA {{ GRAPH <{META}> {{ <{vocab.GRAPH}meta/load/bad> <{K}status> "in-progress" ; '
             f'<{K}loadStage> "no-space-here" ; <{K}savedState> "not json" }} }}')


def test_update_refuses_the_forged_journal_records_as_sent(tmp_path):
    path = build_store(tmp_path / "store")
    with running_server(path, ServeConfig(port=0, writable=True, token=TOKEN), read_only=False) as srv:
        for text in (FORGED_IN_PROGRESS, FORGED_COMMITTING, MALFORMED):
            code, body = _post(srv.url, text)
            assert code == 400 and "kgcult's own" in body, (code, body)
        live = srv.app.store.ox
        assert not list(live.quads_for_pattern(None, vocab.kgc("status"), None, NamedNode(META)))


def test_a_forged_in_progress_record_in_the_metadata_graph_drops_nothing(tmp_path):
    path = _store_with(tmp_path, "victim")
    with Store(path) as s:  # as /update could write it before, or any tool writing the store
        s.ox.update(FORGED_IN_PROGRESS)
    with Store(path) as s:  # the writable open that used to "roll it back"
        assert s.triple_count(vocab.GRAPH + "victim") == 50
        assert s.partial_graphs() == []
    res = _cli(path, "stats")
    assert res.returncode == 0 and "victim" in res.stdout, res.stderr


def test_a_forged_committing_record_moves_nothing(tmp_path):
    path = _store_with(tmp_path, "victim", "other")
    with Store(path) as s:
        s.ox.add(Quad(NamedNode(vocab.GRAPH + "x"), vocab.kgc("p"), Literal("y"), NamedNode(vocab.GRAPH + "victim")))
        s.ox.update(FORGED_COMMITTING)
    with Store(path) as s:
        assert s.triple_count(vocab.GRAPH + "victim") == 51
        assert s.triple_count(vocab.GRAPH + "other") == 50


def test_a_malformed_record_locks_nothing(tmp_path):
    path = _store_with(tmp_path, "victim")
    with Store(path) as s:
        s.ox.update(MALFORMED)
    for args in (["stats"], ["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"]):
        res = _cli(path, *args)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    f = tmp_path / "more.nt"
    f.write_text(NT)
    res = _cli(path, "load", str(f), "--graph", "more")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list = []

    def do_GET(self):
        _Counting.hits.append(self.path)
        body = b"<http://x/s> <http://x/p> <http://x/o> .\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/n-triples")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_load_through_update_is_refused_and_fetches_nothing(tmp_path):
    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=target.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{target.server_address[1]}/secret"
    path = build_store(tmp_path / "store")
    try:
        with running_server(path, ServeConfig(port=0, writable=True, token=TOKEN), read_only=False) as srv:
            for text in (f"LOAD <{url}> INTO GRAPH <http://example.org/g>", f"LOAD SILENT <{url}>"):
                code, body = _post(srv.url, text)
                assert code == 400 and "LOAD" in body, (code, body)
            assert "http://example.org/g" not in srv.app.store.graph_counts()
    finally:
        target.shutdown()
    assert _Counting.hits == []


def test_update_may_not_write_kgcults_own_graphs_or_a_graph_chosen_at_run_time(tmp_path):
    path = build_store(tmp_path / "store")
    with running_server(path, ServeConfig(port=0, writable=True, token=TOKEN), read_only=False) as srv:
        before = sorted(str(q) for q in srv.app.store.ox.quads_for_pattern(None, None, None, NamedNode(META)))
        for text in (f"CLEAR GRAPH <{META}>", f"DROP GRAPH <{vocab.CLOSURE_GRAPH}subclass>",
                     f"MOVE <{META}> TO <http://example.org/g>", "DROP NAMED",
                     f"WITH <{META}> DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}",
                     "DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { GRAPH ?g { ?s ?p ?o } }"):
            code, body = _post(srv.url, text)
            assert code == 400, (text, code, body)
        after = sorted(str(q) for q in srv.app.store.ox.quads_for_pattern(None, None, None, NamedNode(META)))
        assert after == before
        assert _post(srv.url, "INSERT DATA { GRAPH <http://example.org/g> { <http://x/s> <http://x/p> 1 } }")[0] == 204


def test_a_damaged_journal_is_one_line_for_writers_and_readers_keep_working(tmp_path):
    path = _store_with(tmp_path, "victim")
    journal = recovery.path_of(path)
    f = tmp_path / "more.nt"
    f.write_text(NT)
    for damage in (b"{not json", None):
        if damage is not None:
            journal.write_bytes(damage)
        else:  # a well-formed journal whose entry was changed after it was written
            entry = recovery.Entry("k", "load", "x", creates=[vocab.GRAPH + "other"])
            recovery._write(path, [entry])
            journal.write_text(journal.read_text().replace("/other", "/victim"))
        res = _cli(path, "load", str(f), "--graph", "more")
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert res.returncode != 0 and len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
        assert "journal is damaged" in errors[0] and f"mv {journal}" in errors[0]
        res = _cli(path, "stats")
        assert res.returncode == 0 and "victim" in res.stdout, res.stderr
        with Store(path, read_only=True) as r:
            assert r.triple_count(vocab.GRAPH + "victim") == 50
    journal.unlink()
    assert _cli(path, "load", str(f), "--graph", "more").returncode == 0
