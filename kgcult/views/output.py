"""What a build produces: sorted rows, their JSONL (and CSV) bytes, and the manifest
(snapshot content hash, declaration and query sha256s, parameters, row counts, output
sha256s), held in memory by :class:`BuildResult` and written atomically by its ``write``.
Same store and parameters -> byte-identical files."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kgcult import extras, ids
from kgcult.errors import KgcultError
from kgcult.files import atomic_directory, jsonl_bytes
from kgcult.store.snapshot import store_content_hash
from kgcult.version import __version__
from kgcult.views import hf
from kgcult.views.spec import View, ViewError, param_text
from kgcult.safe_text import csv_row

MANIFEST = "MANIFEST.json"


FORMS = ("objects", "arrays", "document")


@dataclass
class Output:
    """One file of a build, as a processor gives it: rows, their fields in order, whether
    it is the view's main output, and its form on disk:

    * ``objects``: JSON Lines, one object a line (kgcult's own files);
    * ``arrays``: JSON Lines, one array of the row's field values a line (FmLAMA's
      released ``<lang>_count.jsonl``: ``["All", 1549]``);
    * ``document``: ``rows`` holds one dict, written as one JSON document the way the paper's
      release wrote it: ASCII only (``json.dump``'s default, so a script that opens it
      without an encoding reads it under any locale), on one line or, with ``indent``,
      indented (FmLAMA's ``country_info.json``).
    """
    path: str                  # relative to the view's output directory
    rows: list[dict]
    fields: list[str]
    main: bool = False
    form: str = "objects"
    indent: int | None = None


def item_key(value: str) -> tuple:
    """The order of every view's output: Wikidata items (ids or entity IRIs) by number,
    Q2 before Q10, then anything else as text. Unlike :func:`kgcult.ids.sort_key`, which
    puts properties and lexemes before items, this keeps outputs as they always were."""
    qid = ids.of_iri(value) or value
    return (0, int(qid[1:]), "") if ids.is_item(qid) else (1, 0, value)


def ordered(rows: list[dict], fields: list[str]) -> list[dict]:
    """Rows with the declared fields first, in order, then the others by name."""
    out = []
    for r in rows:
        row = {f: r[f] for f in fields if f in r}
        row.update({k: r[k] for k in sorted(r) if k not in row})
        out.append(row)
    return out


def file_bytes(o: Output, rows: list[dict]) -> bytes:
    """The bytes of an output in its form (``rows`` already in field order)."""
    if o.form == "objects":
        return jsonl_bytes(rows)
    if o.form == "arrays":
        return "".join(json.dumps([r.get(f) for f in o.fields], ensure_ascii=False) + "\n"
                       for r in rows).encode("utf-8")
    if o.form == "document":
        if len(rows) != 1:
            raise ViewError(f"output {o.path}: a document output holds one JSON document, not {len(rows)}")
        return json.dumps(rows[0], indent=o.indent).encode("ascii")
    raise ViewError(f"output {o.path}: unknown form {o.form!r} (one of {', '.join(FORMS)})")


def csv_bytes(rows: list[dict], fields: list[str]) -> bytes:
    """CSV with the declared fields first, then the others as first met."""
    cols = list(fields)
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    # a cell with a carriage return is quoted (the writer quotes only the line terminator's
    # characters): unquoted, it would end the row in a spreadsheet and start the next one
    # with what follows it, a formula perhaps
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writerow(cols)
    for r in rows:
        cells = csv_row([_cell(r.get(c)) for c in cols])  # no cell a spreadsheet evaluates
        (quoted if any(isinstance(c, str) and "\r" in c for c in cells) else w).writerow(cells)
    return buf.getvalue().encode("utf-8")


def _cell(value):
    """None as an empty cell, lists and objects as JSON."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return value


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot_content_hash(store) -> str | None:
    """The store's snapshot content hash. A remote endpoint is not dumped to compute it:
    its metadata graph may hold it (a served kgcult store that computed it does; every
    write removes it), else None, recorded as unknown. Never the hash of a snapshot
    imported earlier: the store may have changed since."""
    if not store.remote:
        return store_content_hash(store)
    try:
        return store.get_state("contentSha256") or None
    except (KgcultError, AttributeError, OSError):
        return None


@dataclass
class BuildResult:
    """A built view in memory: ``rows`` (the main output), ``outputs`` ({file: rows} for
    every output: rows as dicts whatever the file's form, a ``document`` output as a list
    holding its one dict), ``files`` ({relative file: bytes}, CSV included when asked for),
    ``manifest`` (as MANIFEST.json holds it), and ``path`` once written."""
    name: str
    outputs: dict[str, list[dict]]
    files: dict[str, bytes]
    manifest: dict
    path: Path | None = None
    card: bool = False  # write a Hugging Face dataset card (README.md) beside the files

    @property
    def rows(self) -> list[dict]:
        return self.outputs[self.manifest["output"]]

    def to_hf(self):
        """The outputs as a Hugging Face ``datasets.DatasetDict`` (``default``: the main
        output); needs ``pip install 'kgcult[hf]'``."""
        return hf.to_hf(self.outputs, self.manifest)

    def to_pandas(self, output: str | None = None):
        """An output (the main one by default) as a pandas DataFrame; needs pandas."""
        pd = extras.require("pandas", "hf", "BuildResult.to_pandas()")
        name = output or self.manifest["output"]
        if name not in self.outputs:
            raise ViewError(f"view {self.name} has no output {name!r} (outputs: {', '.join(sorted(self.outputs))})")
        return pd.DataFrame(self.outputs[name])

    def write(self, directory: str | os.PathLike) -> Path:
        """Write the files and MANIFEST.json into ``directory/<name>/``, replacing a previous
        build whole (never a directory that holds no MANIFEST.json)."""
        target = Path(directory) / self.name
        if target.exists() and any(target.iterdir()) and not (target / MANIFEST).is_file():
            raise ViewError(f"{target}: exists and is not a kgcult view output (no {MANIFEST}); "
                            "refusing to overwrite it")
        with atomic_directory(target) as tmp:
            for rel, data in self.files.items():
                p = tmp / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
            (tmp / MANIFEST).write_bytes(
                (json.dumps(self.manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
            if self.card:
                (tmp / "README.md").write_text(hf.dataset_card(self.manifest), encoding="utf-8")
        self.path = target
        return target


def result(view: View, params: dict, query_text: dict[str, str], outputs: list[Output], *,
           csv_out: bool, snapshot: str | None, conversions: dict | None = None) -> BuildResult:
    """The rows, files and manifest of a build from its processor's outputs.
    ``conversions`` (what the processor changed in the graph's text and with which tool,
    e.g. Chinese to simplified script) is recorded in the manifest when not empty."""
    rows = {o.path: o.rows if o.form == "document" else ordered(o.rows, o.fields) for o in outputs}
    files: dict[str, bytes] = {}
    counts: dict[str, int] = {}
    for o in outputs:
        files[o.path] = file_bytes(o, rows[o.path])
        counts[o.path] = len(o.rows[0]) if o.form == "document" else len(o.rows)
        if csv_out and o.form != "document":
            name = re.sub(r"\.jsonl$", ".csv", o.path)
            files[name], counts[name] = csv_bytes(o.rows, o.fields), len(o.rows)
    main = next(o.path for o in outputs if o.main)
    forms = {o.path: o.form for o in outputs if o.form != "objects"}   # recorded only where not JSON objects
    sha = {name: sha256_bytes(data) for name, data in files.items()}
    manifest = {
        "view": view.name,
        "description": view.description,
        "kgcult_version": __version__,
        "snapshot_content_sha256": snapshot,
        "declaration": {"file": view.rel(view.path), "sha256": sha256_bytes(view.text.encode("utf-8"))},
        "queries": {k: {"file": view.rel(p), "sha256": sha256_bytes(query_text[k].encode("utf-8"))}
                    for k, p in sorted(view.queries.items())},
        "parameters": {k: param_text(v) for k, v in sorted(params.items())},
        **({"conversions": conversions} if conversions else {}),
        "output": main,
        "rows": len(rows[main]),
        "sha256": sha[main],
        "outputs": [{"file": p, "rows": counts[p], "sha256": sha[p], **({"form": forms[p]} if p in forms else {})}
                    for p in sorted(files)],
    }
    return BuildResult(view.name, rows, files, manifest)
