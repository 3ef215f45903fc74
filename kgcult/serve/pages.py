"""The HTML side of the server: the query page's files (``kgcult/serve/web/``: YASGUI from
``web/vendor/`` when ``make vendor`` put it there, else the plain page), its example queries
(``queries/examples/``), and the entity page (the card of ``kgcult show`` as HTML)."""
from __future__ import annotations

import html
import re
from importlib.resources import files

from kgcult import ids, resources
from kgcult.errors import KgcultError
from kgcult.serve.protocol import HttpError, Reply

WEB_DIR = files("kgcult.serve") / "web"
VENDOR_DIR = WEB_DIR / "vendor"
_JS, _HTML = "text/javascript; charset=utf-8", "text/html; charset=utf-8"
_STATIC = {"index.html": _HTML, "yasgui.html": _HTML, "app.js": _JS, "yasgui-page.js": _JS,
           "yasr-plugins.js": _JS, "style.css": "text/css; charset=utf-8"}
_VENDOR = {"yasgui.min.js": _JS, "yasgui.min.css": "text/css; charset=utf-8"}

# The example queries of the query page: queries/examples/NN-ID.rq, in file-name order, each
# opening with "# title: ...". They read the kgc: closure properties (built by `kgcult closure`).
_TITLE = re.compile(r"\A#\s*title:\s*(.+)\n")


def _examples() -> list[dict]:
    out = []
    for path in sorted(resources.queries("examples").glob("*.rq")):
        text = path.read_text(encoding="utf-8")
        m = _TITLE.match(text)
        if not m:
            raise KgcultError(f"{resources.recorded_path(path)}:1: an example query opens with '# title: ...'")
        out.append({"id": re.sub(r"^\d+-", "", path.stem), "title": m.group(1).strip(),
                    "query": text[m.end():].rstrip("\n")})
    return out


EXAMPLES = _examples()


def vendored() -> bool:
    """Whether the wheel or checkout carries YASGUI (``make vendor``, tools/vendor-yasgui.sh)."""
    return all(VENDOR_DIR.joinpath(n).is_file() for n in _VENDOR)


def page() -> Reply:
    """The query page: YASGUI when it is vendored, else the plain page."""
    return static("yasgui.html" if vendored() else "index.html")


def vendor(name: str) -> Reply:
    """One of YASGUI's dist files."""
    if name not in _VENDOR:
        raise HttpError(404, f"no such file: vendor/{name}")
    try:
        data = VENDOR_DIR.joinpath(name).read_bytes()
    except OSError:
        raise HttpError(404, "YASGUI is not installed with kgcult (run `make vendor`, which needs npm)") from None
    # the file names carry no version: a changed bundle comes with a changed VERSION file
    return Reply(200, _VENDOR[name], data, {"Cache-Control": "no-cache"})


def static(name: str) -> Reply:
    """One of the query page's files."""
    if name not in _STATIC:
        raise HttpError(404, f"no such file: {name}")
    try:
        data = WEB_DIR.joinpath(name).read_bytes()
    except OSError:
        raise HttpError(500, f"the query page is missing from the installation ({WEB_DIR.joinpath(name)})") from None
    return Reply(200, _STATIC[name], data, {"Cache-Control": "no-cache"})


def _entity_link(qid: str, label: str, lang: str) -> str:
    q = html.escape(qid)
    text = html.escape(f"{label} ({qid})" if label else qid)
    if ids.is_id(qid):
        return f'<a href="/entity/{q}?lang={html.escape(lang)}">{text}</a>'
    return text


def render_card(card: dict, lang: str) -> str:
    """The entity page: the card of ``kgcult show`` as HTML (every value escaped)."""
    e = html.escape
    title = f"{card['qid']} {card.get('label') or ''}".strip()
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(title)} · kgcult</title><link rel='stylesheet' href='/static/style.css'></head><body>",
        "<header><a href='/'>kgcult</a> · entity</header><main class='card'>",
        f"<h1>{e(card.get('label') or card['qid'])} <span class='qid'>{e(card['qid'])}</span></h1>",
    ]
    desc = card["descriptions"].get(lang) or card["descriptions"].get("en")
    if desc:
        out.append(f"<p class='desc'>{e(desc)}</p>")
    out.append(f"<p class='iri'><a href='{e(card['iri'])}'>{e(card['iri'])}</a></p>")
    out.append("<h2>Labels</h2><table id='labels'><tr><th>language</th><th>label</th><th>aliases</th><th>description</th></tr>")
    langs = sorted(set(card["labels"]) | set(card["aliases"]) | set(card["descriptions"]))
    for l in langs:
        out.append(f"<tr><td>{e(l)}</td><td>{e(card['labels'].get(l, ''))}</td>"
                   f"<td>{e(' | '.join(card['aliases'].get(l, [])))}</td><td>{e(card['descriptions'].get(l, ''))}</td></tr>")
    out.append("</table>")
    if card.get("sitelinks") is not None:
        out.append(f"<p>sitelinks: {int(card['sitelinks'])}</p>")
    out.append("<h2>Claims</h2><table id='claims'><tr><th>property</th><th>value</th></tr>")
    for c in card["claims"]:
        prop = f"{c['property']} ({c['property_label']})" if c["property_label"] else c["property"]
        out.append(f"<tr><td>{e(prop)}</td><td>{_entity_link(c['value'], c.get('value_label', ''), lang)}</td></tr>")
    out.append("</table>")
    if card["ancestors"]:
        out.append("<h2>Ancestors <small>(from the closure)</small></h2><dl id='ancestors'>")
        for k, ys in card["ancestors"].items():
            links = ", ".join(_entity_link(y["qid"], y["label"], lang) for y in ys)
            out.append(f"<dt>{e(k)}</dt><dd>{links}</dd>")
        out.append("</dl>")
    out.append("</main></body></html>\n")
    return "".join(out)

