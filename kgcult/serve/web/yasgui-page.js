// kgcult query page on YASGUI: examples, history, a share link that follows the query,
// downloads (CSV, TSV, JSON from this server), and kgcult's automatic entity labels, added to
// the table cells YASR draws (only the rows on screen are labelled: one page of the table).
// A SELECT is fetched a block of BLOCK rows at a time (the server's rows=/offset=), its rows
// counted by a second request (total=true): the first rows show without the whole result
// crossing the wire, and the page holds one block, not the result.
"use strict";
(function () {
  const ENTITY = /^http:\/\/www\.wikidata\.org\/entity\/([QP][0-9]+)$/;
  const VIEWS = { map: "map", barchart: "chart", chart: "chart", imagegrid: "images", table: "table" };
  const HISTORY_KEY = "kgcult.history", HISTORY_MAX = 30;
  const $ = (id) => document.getElementById(id);
  const labels = new Map();   // "lang|iri" -> label ("" when the store has none)
  let examples = [];
  // rows per request (the page's ?rows=N, else 1000); sorting and filtering over all rows load them all
  const BLOCK = (() => { const n = parseInt(new URLSearchParams(location.search).get("rows"), 10);
                         return n > 0 && n <= 100000 ? n : 1000; })();

  function lang() {
    const l = ($("lang").value || "en").trim();
    return /^[A-Za-z-]{1,20}$/.test(l) ? l.toLowerCase() : "en";
  }
  function message(text, isError) { $("message").textContent = text; $("message").className = isError ? "error" : ""; }

  // -- labels: one VALUES query per batch of unlabelled entities on screen, in the chosen
  // language, else mul (Wikidata's language-independent label), else English --------------
  async function fetchLabels(iris, l) {
    // the IRIs passed the ENTITY pattern and the language the lang() pattern: nothing else
    // reaches the query text
    const q = "SELECT ?x ?l WHERE { VALUES ?x { " + iris.map((i) => "<" + i + ">").join(" ") +
      " } ?x rdfs:label ?l FILTER(LANG(?l) = \"" + l + "\" || LANG(?l) = \"mul\" || LANG(?l) = \"en\") }";
    const resp = await fetch("/query", { method: "POST", body: new URLSearchParams({ query: q }),
      headers: { "Accept": "application/sparql-results+json" } });
    if (!resp.ok) return;
    const best = {};
    for (const b of (await resp.json()).results.bindings) {
      const rank = b.l["xml:lang"] === l ? 0 : b.l["xml:lang"] === "mul" ? 1 : 2;
      if (!(b.x.value in best) || rank < best[b.x.value][0]) best[b.x.value] = [rank, b.l.value];
    }
    for (const i of iris) labels.set(l + "|" + i, best[i] ? best[i][1] : "");
  }
  function labelOf(iri) { return labels.get(lang() + "|" + iri) || ""; }

  function decorate(a, l) {
    const iri = a.getAttribute("href"), m = ENTITY.exec(iri);
    a.dataset.kgLabelled = l;
    a.classList.add("entity");
    a.title = iri;
    a.href = "/entity/" + m[1] + "?lang=" + encodeURIComponent(l);
    a.target = "_self";
    a.textContent = "";
    const label = labels.get(l + "|" + iri);
    if (label) a.append(Object.assign(document.createElement("span"), { className: "kg-label", textContent: label }), " ");
    a.append(Object.assign(document.createElement("span"), { className: "qid", textContent: m[1] }));
  }

  let labelling = false, again = false;
  async function labelOnScreen() {
    if (labelling) { again = true; return; }
    labelling = true;
    try {
      do {
        again = false;
        const l = lang();
        const anchors = [...document.querySelectorAll("#yasgui .yasr a.iri:not([data-kg-labelled])")]
          .filter((a) => ENTITY.test(a.getAttribute("href") || ""));
        if (!anchors.length) break;
        const todo = [...new Set(anchors.map((a) => a.getAttribute("href")))].filter((i) => !labels.has(l + "|" + i));
        for (let k = 0; k < todo.length; k += 500) {
          try { await fetchLabels(todo.slice(k, k + 500), l); } catch (e) { /* labels are a nicety */ }
        }
        for (const a of anchors) if (a.isConnected && !a.dataset.kgLabelled) decorate(a, l);
      } while (again);
    } finally { labelling = false; }
    document.body.dataset.labelled = String(Date.now());
  }

  // -- paging by request ------------------------------------------------------------------
  // paging.query: the query whose rows are shown; offset: the first row of the block shown;
  // total: every row of the result (null until counted); all: every row is loaded;
  // cut: the server cut an answer (X-Kgcult-Truncated: its --max-rows, or one answer's cap)
  let paging = { query: null, offset: 0, total: null, all: false, cut: false };
  const wasCut = (resp) => resp.headers.get("X-Kgcult-Truncated") === "true";
  function partial(yasr) {
    const rows = yasr && yasr.results && yasr.results.getBindings && yasr.results.getBindings();
    // a block: BLOCK rows (more may follow: the count tells), or a later block; a result of
    // another size is whole (a smaller one, or every row loaded, as restored from storage)
    const p = !paging.all && !!rows && (rows.length === BLOCK || paging.offset > 0 || paging.cut);
    document.body.classList.toggle("kg-partial", p);
    return p;
  }
  async function fetchRows(query, params) {
    const t0 = performance.now();
    const resp = await fetch("/query", { method: "POST",
      body: new URLSearchParams(Object.assign({ query: query, "limit-mode": "truncate" }, params)),
      headers: { "Accept": "application/sparql-results+json" } });
    return { resp: resp, text: await resp.text(), ms: performance.now() - t0 };
  }
  async function countRows(query) {
    const got = await fetchRows(query, { rows: "0", total: "true" });
    if (query !== paging.query) return;
    const n = parseInt(got.resp.headers.get("X-Kgcult-Total-Rows"), 10);
    if (!got.resp.ok || isNaN(n)) { message("could not count the rows: " + got.text.slice(0, 200), true); return; }
    paging.total = n;
    if (wasCut(got.resp)) paging.cut = true;   // a count cut by the server: at least n rows
    document.body.dataset.total = String(n) + (paging.cut ? "+" : "");
    if (n <= BLOCK && paging.offset === 0) {   // the block was the whole result: sort and filter it
      paging.all = true;
      tab().getYasr().draw();
    }
    drawPager();
  }
  async function showBlock(offset) {   // offset null: every row
    const query = paging.query;
    $("pager").dataset.state = "loading";
    const got = await fetchRows(query, offset === null ? {} : { offset: String(offset), rows: String(BLOCK) });
    if (query !== paging.query) return;
    if (!got.resp.ok) { message("the query failed: " + got.text.slice(0, 200), true); drawPager(); return; }
    const cut = wasCut(got.resp);
    if (cut) paging.cut = true;
    paging.all = offset === null && !cut;   // "all rows" cut by the server is not all of them
    paging.offset = offset || 0;
    tab().getYasr().setResponse({ data: got.text, contentType: got.resp.headers.get("Content-Type"),
                                  status: got.resp.status, executionTime: Math.round(got.ms) }, Math.round(got.ms));
    drawPager();
    if (cut) message("the server cut this answer at " + tab().getYasr().results.getBindings().length +
                     " rows (X-Kgcult-Truncated): page through the rest with next", true);
  }
  function drawPager() {
    const pager = $("pager"), yasr = tab().getYasr();
    pager.textContent = "";
    pager.dataset.state = "idle";
    const rows = (yasr.results && yasr.results.getBindings && yasr.results.getBindings()) || [];
    if (!partial(yasr)) {
      if (paging.all && paging.total !== null) message(paging.total + " row" + (paging.total === 1 ? "" : "s"));
      return;
    }
    const total = paging.total, last = paging.offset + rows.length;
    const button = (id, text, enabled, go) => {
      const b = Object.assign(document.createElement("button"), { type: "button", id: id, textContent: text, disabled: !enabled });
      b.addEventListener("click", go);
      pager.append(b, " ");
    };
    pager.append(Object.assign(document.createElement("span"), { id: "pager-range",
      textContent: "rows " + (paging.offset + 1) + "–" + last + " of " + (total === null ? "…" : total + (paging.cut ? "+" : "")) }), " ");
    button("pager-previous", "◀ previous " + BLOCK, paging.offset > 0, () => showBlock(Math.max(0, paging.offset - BLOCK)));
    button("pager-next", "next " + BLOCK + " ▶", total === null || last < total || paging.cut, () => showBlock(paging.offset + BLOCK));
    button("pager-all", "all rows", true, () => showBlock(null));
    pager.append(Object.assign(document.createElement("span"), { className: "hint",
      textContent: "The table sorts and filters the rows loaded: load all rows to sort or filter the whole result " +
                   "(downloads always hold every row)." }));
    message(total === null ? "counting rows…" : paging.cut ? "at least " + total + " rows (the server cut the count: " +
            "X-Kgcult-Truncated), loaded " + BLOCK + " at a time" : total + " rows, loaded " + BLOCK + " at a time");
  }

  // -- the query in the URL, downloads, history --------------------------------------------
  function queryFromUrl() {
    const h = location.hash.slice(1), s = new URLSearchParams(location.search);
    const ex = /^example=([A-Za-z0-9-]+)$/.exec(h);
    if (ex) { const e = examples.find((x) => x.id === ex[1]); return e ? e.query : null; }
    if (h.startsWith("query=")) return decodeURIComponent(h.slice(6).replace(/\+/g, "%20"));
    if (s.get("query")) return s.get("query");
    if (h) { try { return decodeURIComponent(h); } catch (e) { return null; } }  // WDQS style: /#<query>
    return null;
  }
  function follow(query) {
    const link = location.pathname + "#query=" + encodeURIComponent(query);
    history.replaceState(null, "", link);
    $("share").href = link;
    for (const f of ["csv", "tsv", "json"]) {
      $("download-" + f).href = "/query?" + new URLSearchParams({ query: query, format: f });
    }
    document.body.dataset.downloads = "ready";
  }
  function remember(query) {
    let h = [];
    try { h = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]"); } catch (e) { h = []; }
    h = [query, ...h.filter((q) => q !== query)].slice(0, HISTORY_MAX);
    try { localStorage.setItem(HISTORY_KEY, JSON.stringify(h)); } catch (e) { /* private mode */ }
    drawHistory(h);
  }
  function drawHistory(h) {
    const ul = $("history");
    ul.textContent = "";
    h.slice(0, 10).forEach((q) => {
      const b = document.createElement("button");
      b.type = "button"; b.className = "history"; b.title = q;
      b.textContent = q.replace(/^(#.*\n|PREFIX.*\n|\s+)*/i, "").slice(0, 60);
      b.addEventListener("click", () => run(q));
      const li = document.createElement("li");
      li.append(b);
      ul.append(li);
    });
  }

  // kgcult predeclares the WDQS prefixes (as WDQS does): tell the editor's syntax check, whose
  // tokenizer otherwise flags wd:, wdt:, kgc: ... as undeclared
  let prefixes = {};
  function predeclare(yasqe) {
    const mode = yasqe && yasqe.getMode && yasqe.getMode();
    if (!mode || mode.kgcultPrefixes || typeof mode.startState !== "function") return;
    const start = mode.startState;
    mode.startState = function () {
      const st = start.apply(this, arguments);
      if (st && st.prefixes) Object.assign(st.prefixes, prefixes);
      return st;
    };
    mode.kgcultPrefixes = true;
    yasqe.setValue(yasqe.getValue());   // tokenize again from the first line
  }

  let yasgui;
  function tab() { return yasgui.getTab(); }
  function run(query) {
    const yasqe = tab().getYasqe();
    predeclare(yasqe);
    yasqe.setValue(query);
    document.body.dataset.state = "running";
    yasqe.query();
  }

  async function init() {
    try { examples = await (await fetch("/api/examples")).json(); } catch (e) { examples = []; }
    try { prefixes = await (await fetch("/api/prefixes")).json(); } catch (e) { /* compact IRIs are a nicety */ }
    const Yasgui = window.Yasgui;
    yasgui = new Yasgui($("yasgui"), {
      requestConfig: { endpoint: "/query", method: "POST",
                       args: [{ name: "limit-mode", value: "truncate" }, { name: "rows", value: String(BLOCK) }] },
      copyEndpointOnNewTab: true,
      populateFromUrl: false,
      endpointCatalogueOptions: { getData: () => [{ endpoint: location.origin + "/query" }] },
      // offline: the class and property completers ask the LOV service on the internet; these two do not
      yasqe: { autocompleters: ["variables", "prefixes"], resizeable: true },
      yasr: { prefixes: prefixes, pluginOrder: ["table", "map", "chart", "images", "response"],
              defaultPlugin: "table" },
    });
    // a new query: its first block is drawn as a block (no sorting of a part) until counted
    yasgui.on("query", () => {
      paging = { query: null, offset: 0, total: null, all: false, cut: false };
      delete document.body.dataset.total;
    });
    yasgui.on("queryResponse", (_yg, t) => {
      const query = t.getQuery();
      follow(query);
      remember(query);
      // YASR reads the response in its own handler of this event: look after it has
      setTimeout(() => {
        const yasr = t.getYasr();
        const view = /^#\s*defaultView:\s*(\w+)/mi.exec(query);
        const name = view && VIEWS[view[1].toLowerCase()];
        if (name && yasr.plugins[name] && yasr.plugins[name].canHandleResults()) yasr.selectPlugin(name);
        else if (view || !yasr.plugins[yasr.getSelectedPluginName()].canHandleResults()) yasr.selectPlugin("table");
        const rows = yasr.results && yasr.results.getBindings && yasr.results.getBindings();
        paging.query = query;
        if (yasr.results && yasr.results.getError && yasr.results.getError()) message("the query failed: see below", true);
        else if (partial(yasr)) { drawPager(); countRows(query); }
        else { paging.all = true; $("pager").textContent = ""; message(rows ? rows.length + " row" + (rows.length === 1 ? "" : "s") : "done"); }
        document.body.dataset.state = "done";
        labelOnScreen();
      }, 0);
    });
    // label whatever YASR draws: a new result, another page of the table, a sort
    new MutationObserver(() => { if (document.querySelector("#yasgui .yasr a.iri:not([data-kg-labelled])")) labelOnScreen(); })
      .observe($("yasgui"), { childList: true, subtree: true });
    $("lang").addEventListener("change", () => {
      for (const a of document.querySelectorAll("#yasgui a.entity[data-kg-labelled]")) {
        a.setAttribute("href", a.title); delete a.dataset.kgLabelled;
      }
      labelOnScreen();
    });

    const ul = $("examples");
    for (const ex of examples) {
      const b = document.createElement("button");
      b.type = "button"; b.id = "example-" + ex.id; b.textContent = ex.title;
      b.addEventListener("click", () => run(ex.query));
      ul.append(document.createElement("li"));
      ul.lastChild.append(b);
    }
    try { drawHistory(JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]")); } catch (e) { /* none */ }
    try {
      const s = await (await fetch("/api/status")).json();
      $("status").textContent = s.store + (s.writable ? " · writable" : " · read-only") +
        (s.closure_stale ? " · closure stale: run kgcult closure" : "");
    } catch (e) { /* optional */ }
    predeclare(tab().getYasqe());
    yasgui.on("tabSelect", () => setTimeout(() => predeclare(tab().getYasqe()), 0));
    window.kgcult = { yasgui: yasgui, labelOf: labelOf, run: run, partial: partial, block: BLOCK };
    // a link opened or pasted while the page is open (the page's own URL updates do not fire this)
    window.addEventListener("hashchange", () => { const q = queryFromUrl(); if (q) run(q); });
    const q = queryFromUrl();
    // a block of a larger result restored from the browser's storage: drawn again as a block
    const restored = tab().getYasr();
    if (!q && restored.results && partial(restored)) {
      paging.query = tab().getQuery();
      restored.draw();
      drawPager();
      countRows(paging.query);
    }
    if (q) run(q); else follow(tab().getYasqe().getValue());
    document.body.dataset.ready = "true";
  }

  init();
})();
