// kgcult's result views for YASR (the result half of YASGUI): a map of WKT points (P625),
// a bar chart of a numeric column and an image grid (P18). They draw SVG and HTML from the
// result alone: no map tiles, chart library or anything else from the internet, so they work
// offline. The map is a plain longitude/latitude plot with a graticule (no coastlines).
"use strict";
(function () {
  const WKT = "http://www.opengis.net/ont/geosparql#wktLiteral";
  const POINT = /^\s*(?:<[^>]*>\s*)?Point\(\s*([-+0-9.eE]+)\s+([-+0-9.eE]+)\s*\)\s*$/i;
  const NUMERIC = /#(integer|decimal|double|float|int|long|short|nonNegativeInteger|positiveInteger)$/;
  // Commons files only (Special:FilePath, as Wikidata's P18 values are written): the whole IRI is
  // anchored, so an IRI on any other host ending in .png is not fetched (no tracking pixel);
  // the page's Content-Security-Policy allows images from Commons and this server alone
  const IMAGE = /^https?:\/\/commons\.wikimedia\.org\/wiki\/Special:FilePath\/[^\/?#]+$/i;
  const SVG = "http://www.w3.org/2000/svg";
  const MAX_MARKS = 5000;   // points, bars or images drawn (a note says when more were left out)

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }
  function bindings(yasr) { return (yasr.results && yasr.results.getBindings && yasr.results.getBindings()) || []; }
  function vars(yasr) { return (yasr.results && yasr.results.getVariables && yasr.results.getVariables()) || []; }
  // the column whose first bound values satisfy test
  function columnWhere(yasr, test) {
    const rows = bindings(yasr).slice(0, 200);
    return vars(yasr).find((v) => rows.some((b) => b[v] && test(b[v])));
  }
  // the text that names a row: a ?xLabel column, an entity's label (kgcult.labelOf), else the value
  function rowName(b, skip) {
    for (const [k, t] of Object.entries(b)) if (/Label$/.test(k) && t.type === "literal") return t.value;  // the label service
    for (const [k, t] of Object.entries(b)) {
      if (k === skip) continue;
      if (t.type === "uri") return (window.kgcult && window.kgcult.labelOf(t.value)) || t.value.replace(/^.*\//, "");
      if (t.type === "literal" && !(t.datatype && (t.datatype === WKT || NUMERIC.test(t.datatype)))) return t.value;
    }
    return "";
  }
  function icon(text) { const s = document.createElement("span"); s.textContent = text; return s; }
  function note(el, shown, total, what) {
    if (total > shown) el.append(Object.assign(document.createElement("p"), { className: "kg-note", textContent: `${shown} of ${total} ${what} drawn` }));
  }

  class MapPlugin {
    constructor(yasr) { this.yasr = yasr; this.priority = 5; this.label = "Map"; }
    column() { return columnWhere(this.yasr, (t) => t.type === "literal" && (t.datatype === WKT || POINT.test(t.value)) && POINT.test(t.value)); }
    canHandleResults() { return !!this.column(); }
    getIcon() { return icon("⊕"); }
    draw() {
      const col = this.column(), rows = bindings(this.yasr);
      const W = 960, H = 480, x = (lon) => (lon + 180) / 360 * W, y = (lat) => (90 - lat) / 180 * H;
      const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "kg-map", role: "img" });
      root.append(svg("rect", { x: 0, y: 0, width: W, height: H, class: "kg-map-sea" }));
      for (let lon = -180; lon <= 180; lon += 30) root.append(svg("line", { x1: x(lon), x2: x(lon), y1: 0, y2: H, class: "kg-grid" }));
      for (let lat = -90; lat <= 90; lat += 30) root.append(svg("line", { x1: 0, x2: W, y1: y(lat), y2: y(lat), class: "kg-grid" }));
      let n = 0;
      for (const b of rows) {
        const m = b[col] && POINT.exec(b[col].value);
        if (!m || n >= MAX_MARKS) continue;
        const lon = parseFloat(m[1]), lat = parseFloat(m[2]);
        if (!(Math.abs(lon) <= 180 && Math.abs(lat) <= 90)) continue;
        const c = svg("circle", { cx: x(lon).toFixed(1), cy: y(lat).toFixed(1), r: 4, class: "kg-point" });
        const t = svg("title"); t.textContent = `${rowName(b, col)} (${lat}, ${lon})`; c.append(t);
        root.append(c); n++;
      }
      const box = document.createElement("div"); box.className = "kg-map-box"; box.append(root);
      note(box, n, rows.length, "points");
      this.yasr.resultsEl.append(box);
    }
  }

  class ChartPlugin {
    constructor(yasr) { this.yasr = yasr; this.priority = 4; this.label = "Chart"; }
    column() { return columnWhere(this.yasr, (t) => t.type === "literal" && t.datatype && NUMERIC.test(t.datatype)); }
    canHandleResults() { return !!this.column(); }
    getIcon() { return icon("▮"); }
    draw() {
      const col = this.column(), rows = bindings(this.yasr).filter((b) => b[col]);
      const shown = rows.slice(0, 100);
      const max = Math.max(1, ...shown.map((b) => parseFloat(b[col].value) || 0));
      const bar = 18, labelW = 260, W = 900, H = shown.length * bar + 10;
      const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "kg-chart", role: "img" });
      shown.forEach((b, i) => {
        const v = parseFloat(b[col].value) || 0, w = Math.max(0, v) / max * (W - labelW - 60);
        const t = svg("text", { x: labelW - 6, y: i * bar + 13, class: "kg-bar-label", "text-anchor": "end" });
        t.textContent = rowName(b, col).slice(0, 40);
        const r = svg("rect", { x: labelW, y: i * bar + 2, width: w.toFixed(1), height: bar - 4, class: "kg-bar" });
        const v2 = svg("text", { x: labelW + w + 4, y: i * bar + 13, class: "kg-bar-value" }); v2.textContent = b[col].value;
        root.append(t, r, v2);
      });
      const box = document.createElement("div"); box.className = "kg-chart-box"; box.append(root);
      note(box, shown.length, rows.length, "bars");
      this.yasr.resultsEl.append(box);
    }
  }

  class ImagesPlugin {
    constructor(yasr) { this.yasr = yasr; this.priority = 3; this.label = "Images"; }
    column() { return columnWhere(this.yasr, (t) => t.type === "uri" && IMAGE.test(t.value)); }
    canHandleResults() { return !!this.column(); }
    getIcon() { return icon("▦"); }
    draw() {
      // the images themselves come from Wikimedia Commons: offline, each shows its file name
      const col = this.column(), rows = bindings(this.yasr).filter((b) => b[col] && IMAGE.test(b[col].value));
      const grid = document.createElement("div"); grid.className = "kg-images";
      for (const b of rows.slice(0, 500)) {
        const fig = document.createElement("figure"), img = document.createElement("img"), cap = document.createElement("figcaption");
        img.loading = "lazy"; img.referrerPolicy = "no-referrer";
        img.src = b[col].value.replace(/^http:/i, "https:") + "?width=240";
        img.alt = decodeURIComponent(b[col].value.replace(/^.*\//, ""));
        cap.textContent = rowName(b, col) || img.alt;
        fig.append(img, cap); grid.append(fig);
      }
      note(grid, Math.min(500, rows.length), rows.length, "images");
      this.yasr.resultsEl.append(grid);
    }
  }

  // YASR's table runs every cell through DOMPurify also for DataTables' type detection, search
  // and sort values, which are never inserted as HTML: ~10 s for a 20k-row result on a busy
  // 2-core machine before the first row showed (bench/page.py). Detect, search and sort on the
  // plain value instead; the cells drawn keep YASR's sanitized HTML.
  // DataTables' automatic column widths render every row's display HTML (YASR's sanitized
  // cells) to find the widest: off, the browser lays out the 50 rows shown instead.
  function plainSortAndSearch(Table) {
    if (Table && Table.defaults && Table.defaults.tableConfig) Table.defaults.tableConfig.autoWidth = false;
    const proto = Table && Table.prototype;
    if (!proto || typeof proto.getColumns !== "function" || proto.kgcultColumns) return;
    const getColumns = proto.getColumns;
    proto.getColumns = function () {
      return getColumns.apply(this, arguments).map((col, i) => {
        if (i === 0 || typeof col.render !== "function") return col;
        const render = col.render;
        return Object.assign({}, col, { render: (data, type, row, meta) =>
          (type === "filter" || type === "sort" || type === "type" || !type) ? (data && typeof data === "object" ? data.value : data)
                                                          : render(data, type, row, meta) });
      });
    };
    // a block of a larger result (the page's paging by request): sorting or filtering it would
    // pass for sorting the result, so both are off until every row is loaded
    const draw = proto.draw;
    proto.draw = function () {
      const part = !!(window.kgcult && window.kgcult.partial && window.kgcult.partial(this.yasr));
      this.config.tableConfig = Object.assign({}, this.config.tableConfig, { ordering: !part, searching: !part });
      return draw.apply(this, arguments);
    };
    proto.kgcultColumns = true;
  }

  const Yasr = window.Yasgui && window.Yasgui.Yasr;
  if (Yasr) {
    plainSortAndSearch(Yasr.plugins && Yasr.plugins.table);
    Yasr.registerPlugin("map", MapPlugin);
    Yasr.registerPlugin("chart", ChartPlugin);
    Yasr.registerPlugin("images", ImagesPlugin);
  }
})();
