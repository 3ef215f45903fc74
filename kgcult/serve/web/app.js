// kgcult query page: plain JS, no dependencies, no network access beyond this server.
"use strict";

const WD = "http://www.wikidata.org/entity/";
const ENTITY = /^http:\/\/www\.wikidata\.org\/entity\/([QP][0-9]+)$/;
const PREFIXES = [
  ["wd", WD], ["wdt", "http://www.wikidata.org/prop/direct/"],
  ["rdfs", "http://www.w3.org/2000/01/rdf-schema#"], ["skos", "http://www.w3.org/2004/02/skos/core#"],
  ["schema", "http://schema.org/"], ["wikibase", "http://wikiba.se/ontology#"],
  ["kgc", "https://w3id.org/kgcult/ns#"], ["kgcg", "https://w3id.org/kgcult/graph/"],
  ["xsd", "http://www.w3.org/2001/XMLSchema#"], ["rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"],
];

const $ = (id) => document.getElementById(id);
let examples = [];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function compactIri(iri) {
  for (const [p, base] of PREFIXES) {
    if (iri.startsWith(base) && /^[A-Za-z0-9_-]+$/.test(iri.slice(base.length))) return p + ":" + iri.slice(base.length);
  }
  return "<" + iri + ">";
}

function message(text, isError) {
  const m = $("message");
  m.textContent = text;
  m.className = isError ? "error" : "";
}

async function sparql(query, accept) {
  const body = new URLSearchParams({ query: query, "limit-mode": "truncate" });
  const resp = await fetch("/query", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", "Accept": accept || "application/sparql-results+json" },
    body: body,
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error("HTTP " + resp.status + ": " + text);
  return { text: text, truncated: resp.headers.get("X-Kgcult-Truncated") === "true", type: resp.headers.get("Content-Type") || "" };
}

// rdfs:label of the entities in the results, in the chosen language, else mul (Wikidata's
// default for all languages), else English
async function fetchLabels(iris, lang) {
  const ids = [...new Set(iris)].filter((i) => ENTITY.test(i)).slice(0, 2000);
  if (!ids.length) return {};
  const safeLang = /^[A-Za-z-]{1,20}$/.test(lang) ? lang.toLowerCase() : "en";
  const q = "SELECT ?x ?l WHERE { VALUES ?x { " + ids.map((i) => "<" + i + ">").join(" ") +
    " } ?x rdfs:label ?l FILTER(LANG(?l) = \"" + safeLang + "\" || LANG(?l) = \"mul\" || LANG(?l) = \"en\") }";
  const r = await sparql(q);
  const best = {};
  for (const b of JSON.parse(r.text).results.bindings) {
    const x = b.x.value, l = b.l;
    const rank = l["xml:lang"] === safeLang ? 0 : l["xml:lang"] === "mul" ? 1 : 2;
    if (!(x in best) || rank < best[x][0]) best[x] = [rank, l.value];
  }
  const out = {};
  for (const [x, v] of Object.entries(best)) out[x] = v[1];
  return out;
}

function renderTerm(t, labels, lang) {
  if (!t) return "";
  if (t.type === "uri") {
    const m = ENTITY.exec(t.value);
    if (m) {
      const a = el("a", { href: "/entity/" + m[1] + "?lang=" + encodeURIComponent(lang), class: "entity" },
        labels[t.value] ? labels[t.value] + " " : "");
      a.append(el("span", { class: "iri" }, m[1]));
      return a;
    }
    return el("span", { class: "iri", title: t.value }, compactIri(t.value));
  }
  if (t.type === "bnode") return "_:" + t.value;
  const span = el("span", {}, t.value);
  if (t["xml:lang"]) span.append(" ", el("span", { class: "lang" }, "@" + t["xml:lang"]));
  return span;
}

async function run() {
  const query = $("query").value;
  const lang = $("lang").value || "en";
  const results = $("results");
  results.textContent = "";
  message("running…");
  const t0 = performance.now();
  let r;
  try {
    r = await sparql(query, "application/sparql-results+json, application/n-triples;q=0.9");
  } catch (e) {
    message(e.message, true);
    return;
  }
  const ms = Math.round(performance.now() - t0);
  if (!r.type.startsWith("application/sparql-results+json")) {   // CONSTRUCT / DESCRIBE
    results.append(el("pre", { id: "rdf" }, r.text));
    message("RDF result in " + ms + " ms" + (r.truncated ? " (truncated)" : ""));
    return;
  }
  const doc = JSON.parse(r.text);
  if ("boolean" in doc) {
    results.append(el("p", { id: "boolean" }, String(doc.boolean)));
    message("ASK answered in " + ms + " ms");
    return;
  }
  const vars = doc.head.vars, rows = doc.results.bindings;
  const iris = [];
  for (const b of rows) for (const v of vars) if (b[v] && b[v].type === "uri") iris.push(b[v].value);
  let labels = {};
  try { labels = await fetchLabels(iris, lang); } catch (e) { /* labels are a nicety */ }
  const table = el("table", { id: "result-table" });
  table.append(el("tr", {}, ...vars.map((v) => el("th", {}, "?" + v))));
  for (const b of rows) table.append(el("tr", { class: "row" }, ...vars.map((v) => el("td", {}, renderTerm(b[v], labels, lang)))));
  results.append(table);
  message(rows.length + " row" + (rows.length === 1 ? "" : "s") + " in " + ms + " ms" +
    (r.truncated ? " (truncated at the server's row limit: add a LIMIT)" : ""));
  document.body.dataset.state = "done";
}

function loadExample(id) {
  const ex = examples.find((e) => e.id === id);
  if (ex) $("query").value = ex.query;
  return ex;
}

async function init() {
  try {
    examples = await (await fetch("/api/examples")).json();
  } catch (e) { examples = []; }
  const ul = $("examples");
  for (const ex of examples) {
    const b = el("button", { type: "button", id: "example-" + ex.id }, ex.title);
    b.addEventListener("click", () => { loadExample(ex.id); run(); });
    ul.append(el("li", {}, b));
  }
  try {
    const s = await (await fetch("/api/status")).json();
    $("status").textContent = s.store + (s.writable ? " · writable" : " · read-only") +
      (s.closure_stale ? " · closure stale: run kgcult closure" : "");
  } catch (e) { /* optional */ }
  $("query-form").addEventListener("submit", (e) => { e.preventDefault(); run(); });
  $("query").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } });
  // /#example=ID runs an example on load (links, and the headless browser test)
  const m = /example=([A-Za-z0-9-]+)/.exec(location.hash);
  if (m && loadExample(m[1])) run();
  const q = /query=([^&]+)/.exec(location.hash);
  if (q) { $("query").value = decodeURIComponent(q[1]); run(); }
}

init();
