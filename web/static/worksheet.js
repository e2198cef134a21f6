// The worksheet page: views (heat maps and graphs) on one time axis, their live columns
// from /api/live (server-sent events), drag to drill down, click a time, the state in the
// address (?s=JSON: the drilled band and the selected time too; a zoom or a drill-down is a
// step Back undoes), a band broken down by any field the archive holds, CSV of a view or a
// drill-down, a time range typed in, named worksheets and the datasets' lifecycle. Times travel as unix
// seconds; the page shows them in the zone chosen (this browser's, the server's, UTC).
// A live heat map's title totals and its side panel (events/s per row) follow its columns;
// a live view whose new columns do not fit its figure (values outside its axis, new keys)
// is loaded again. A view time:nfsd (time:fs, time:disk) is a graph of where each op's time
// went, a stacked line per component, its p99 in the hover (each trace's customdata).
"use strict";

const MAX_VIEWS = 8;       // views one page follows live (the server's bound, web/limits.py)
const DEFAULT = {views: [], last: 300, live: true, axis: "", crop: null, drag: "drill", style: "", zone: "browser"};
let state = readState();
let views = [];            // {spec, div, live (geometry), start, times, ...}
let stream = null;
let generation = 0;        // a newer load() makes older answers moot
let picked = {target: null, keys: []};   // shift-clicked keys of the last drill-down
let relayoutBusy = false;
let serverZone = "UTC";    // /api/datasets says
window.strataLive = {messages: 0, bytes: 0, largest: 0, refits: 0};

// -- time zones: unix seconds <-> the wall-clock strings plotly's date axis shows ------------

const clocks = {};
const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;   // asked once: a new Intl object is slow
function zoneName() {
  return state.zone === "UTC" ? "UTC" : state.zone === "server" ? serverZone : BROWSER_ZONE;
}
function wall(t) {                      // the wall clock of unix second t in the chosen zone, as UTC ms
  const zone = zoneName();
  const f = clocks[zone] || (clocks[zone] = new Intl.DateTimeFormat("en-US", {timeZone: zone, hourCycle: "h23",
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit"}));
  const o = {};
  for (const part of f.formatToParts(new Date(Math.floor(t) * 1000))) o[part.type] = +part.value;
  return Date.UTC(o.year, o.month - 1, o.day, o.hour, o.minute, o.second) + Math.round((t - Math.floor(t)) * 1000);
}
function isoLocal(t) {                  // "YYYY-MM-DDTHH:MM:SS[.mmm]" in the chosen zone
  const text = new Date(wall(t)).toISOString().replace("Z", "");
  return text.endsWith(".000") ? text.slice(0, -4) : text;
}
function zoneLabel(t) {                // "EST", "UTC", "GMT+5:30": the chosen zone at t
  const parts = new Intl.DateTimeFormat("en-US", {timeZone: zoneName(), timeZoneName: "short"})
    .formatToParts(new Date(t * 1000));
  return (parts.find(p => p.type === "timeZoneName") || {}).value || zoneName();
}
// The title names its range as the server wrote it (describe.time_range, the server's zone):
// written again in the chosen zone, ending where the view's columns end.
function titled(v) {
  const [t0, t1] = v.span, a = isoLocal(t0).replace("T", " "), b = isoLocal(t1).replace("T", " ");
  const right = a.slice(0, 10) === b.slice(0, 10) ? b.slice(11) : b;
  const duration = (v.named.match(/\([^()]*\)$/) || [""])[0];
  return v.title.replace(v.named, `${a} → ${right} ${zoneLabel(t1)} ${duration}`);
}
function unixOf(text) {                 // a wall-clock string of the axis, back to unix seconds
  const m = String(text).match(/^(\d+)-(\d+)-(\d+)(?:[ T](\d+):(\d+)(?::(\d+(?:\.\d*)?))?)?/);
  if (!m) return NaN;
  const sec = +(m[6] || 0);
  const w = Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0), Math.floor(sec)) / 1000 + (sec % 1);
  let t = w - (wall(w) / 1000 - w);      // the zone's offset near the time, then at it
  t = w - (wall(t) / 1000 - t);
  return t;
}

// heatmaps/units.py format_count: 987, 1.23k, 45.6M; 2.5; 0.0123; 3.2e-7
const SI = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""]];
function trimmed(x, sig) {
  if (x === 0) return "0";
  const text = x.toFixed(Math.max(sig - 1 - Math.floor(Math.log10(Math.abs(x))), 0));
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}
function formatCount(n) {
  const a = Math.abs(n);
  if (n === 0) return "0";
  if (a < 0.001) { const [m, e] = n.toExponential(1).split("e"); return m.replace(/\.?0+$/, "") + "e" + (+e); }
  if (a < 0.1) return trimmed(n, 3);
  if (a < 10 && n !== Math.trunc(n)) return n.toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
  if (a < 1000) return n === Math.trunc(n) || a >= 100 ? n.toFixed(0) : n.toFixed(1).replace(/0+$/, "").replace(/\.$/, "");
  const [scale, suffix] = SI.find(([s]) => a >= s);
  return trimmed(n / scale, 3) + suffix;
}

function readState() {
  const s = new URLSearchParams(location.search).get("s");
  if (!s) return Object.assign({}, DEFAULT);
  try { return Object.assign({}, DEFAULT, JSON.parse(s)); } catch (e) { return Object.assign({}, DEFAULT); }
}

function writeState(step) {               // step: a new entry in the history (Back returns to this one)
  const url = "?s=" + encodeURIComponent(JSON.stringify(state));
  if (url === location.search) return;
  if (step) history.pushState(null, "", url); else history.replaceState(null, "", url);
}
window.addEventListener("popstate", () => { state = readState(); load(); });

function say(text) { document.getElementById("message").textContent = text || ""; }

async function api(path, body) {
  const opts = body === undefined ? {} : {method: "POST", body: JSON.stringify(body),
                                          headers: {"Content-Type": "application/json"}};
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = {error: r.status + " " + r.statusText}; }
  if (!r.ok) throw new Error((data && data.error) || (r.status + " " + r.statusText));
  return data;
}

// plotly's JSON packs numpy arrays as {dtype, bdata, shape}: plain nested arrays here,
// so that live columns can be pushed into them.
const DTYPES = {f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
                u2: Uint16Array, i4: Int32Array, u4: Uint32Array};
function unpack(v) {
  if (Array.isArray(v)) return v.map(unpack);
  if (v && typeof v === "object" && v.bdata !== undefined && v.dtype) {
    const text = atob(v.bdata), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const flat = new DTYPES[v.dtype](bytes.buffer);
    const shape = v.shape ? String(v.shape).split(",").map(Number) : [flat.length];
    const build = (off, dims) => {
      if (dims.length === 1) return Array.from(flat.subarray(off, off + dims[0]));
      const step = dims.slice(1).reduce((a, b) => a * b, 1);
      return Array.from({length: dims[0]}, (_, i) => build(off + i * step, dims.slice(1)));
    };
    return build(0, shape);
  }
  if (v && typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v)) out[k] = unpack(v[k]);
    return out;
  }
  return v;
}

function rangeQuery() {
  if (state.live || state.since === undefined) return "last=" + state.last;
  return "since=" + state.since + "&until=" + state.until;
}

function viewQuery(spec) {
  const q = new URLSearchParams({name: spec.name});
  if (state.axis) q.set("axis", state.axis);
  if (spec.compare && spec.compare.length) q.set("compare", spec.compare.join(","));
  if (state.crop) q.set("crop", state.crop);
  if (state.style) q.set("style", state.style);
  return q.toString() + "&" + rangeQuery();
}

function addView(spec) {
  if (state.views.length >= MAX_VIEWS) { say(`at most ${MAX_VIEWS} views: remove one to add another`); return; }
  state.views.push(spec);
  load();
}

async function load(step) {
  const mine = ++generation;
  const cut = state.views.length > MAX_VIEWS;
  if (cut) state.views = state.views.slice(0, MAX_VIEWS);
  document.body.dataset.loads = generation;
  if (stream) { stream.close(); stream = null; }
  writeState(step);
  syncToolbar();
  const box = document.getElementById("views");
  box.innerHTML = "";
  views = state.views.map((spec, i) => {
    const el = document.createElement("div");
    el.className = "view";
    el.innerHTML = '<button class="close" title="remove this view">×</button>' +
                   '<button class="csv" title="this view\'s columns as CSV">CSV</button><div class="plot"></div>';
    el.querySelector(".close").onclick = () => { state.views.splice(i, 1); load(); };
    el.querySelector(".csv").onclick = () => {
      const v = views[i];
      if (v && v.times) download(`${v.spec.name} ${v.span[0]}-${v.span[1]}.csv`, viewRows(v));
    };
    box.appendChild(el);
    return {spec, div: el.querySelector(".plot"), index: i};
  });
  // each view drawn as its answer arrives: the page draws one while the server reads the next
  const errors = await Promise.all(views.map(v => api("/api/view?" + viewQuery(v.spec)).then(a => {
    if (mine === generation) draw(v, a);
  }, e => {
    if (mine === generation) v.div.textContent = v.spec.name + ": " + e.message;
    return e.message;
  })));
  if (mine !== generation) return;
  say(errors.find(e => e) || (cut ? `at most ${MAX_VIEWS} views: the first ${MAX_VIEWS} are shown` : ""));
  document.body.dataset.views = views.filter(v => v.live).length;
  restorePointing();
  if (state.live) openStream();
}

// A browser that prefers a dark scheme: the figures' paper, text and grid in dark colours.
const DARK = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
function darkened(layout) {
  Object.assign(layout, {paper_bgcolor: "#17181c", plot_bgcolor: "#17181c"});
  layout.font = Object.assign({}, layout.font, {color: "#ddd"});
  for (const key of Object.keys(layout).filter(k => /^[xy]axis\d*$/.test(k))) {
    Object.assign(layout[key], {gridcolor: "#333", linecolor: "#666", zerolinecolor: "#444"});
  }
  if (layout.title && layout.title.text) layout.title.text = layout.title.text.replace(/color:#555/g, "color:#aaa");
}

function draw(v, a) {
  const fig = unpack(a.figure);
  if (DARK) darkened(fig.layout);
  v.live = a.live; v.width = a.live.width; v.start = a.start; v.end = a.end;
  v.kind = a.live.type;
  v.label = a.live.label || "";
  fig.layout.dragmode = "zoom";
  fig.layout.datarevision = 0;
  fig.layout.autosize = true;
  delete fig.layout.width; delete fig.layout.height;
  // one plot area for every view, so that their time axes line up, with room for the y axis's
  // labels and title: plotly's automargin has nothing to push and draws each view once
  const margin = fig.layout.margin || {};
  fig.layout.margin = Object.assign({}, margin, {r: 150, l: Math.max(margin.l || 0, 90), b: Math.max(margin.b || 0, 65)});
  // the margins hold every tick label, and plotly spaces time ticks by the axis's width: its
  // checks of each label against every other (boxes measured label by label, for a label
  // that would run past the page or overlap the next one and be turned) are not needed
  Object.keys(fig.layout).filter(k => /^[xy]axis\d*$/.test(k)).forEach(k => {
    fig.layout[k].ticklabeloverflow = "allow";
    if (k.startsWith("x") && fig.layout[k].tickangle === undefined) fig.layout[k].tickangle = 0;
  });
  fig.data.forEach(tr => {
    if (tr.colorbar) Object.assign(tr.colorbar, {x: 1.01, xanchor: "left", ticklabeloverflow: "allow"});
  });
  if (v.kind === "heatmap") {
    const tr = fig.data[1];                   // each cell's hover data: its row's bounds around its count
    const ys = Array.from(tr.y);
    v.cell = !a.rows ? (r, n) => [ys[r], ys[r + 1], n]                // no column yet: the row's edges
      : a.rows[0] && a.rows[0].length > 2 ? (r, n) => [a.rows[r][0], a.rows[r][1], n, ...a.rows[r].slice(2)]
      : (r, n) => [a.rows[r][0], a.rows[r][1], n];
    if (a.rows) tr.customdata = tr.customdata.map((row, r) => row.map(n => v.cell(r, n)));
    v.cells = tr.customdata;                  // per row, per column: [from, to, events, ...]
    v.zRows = tr.z;                           // per row, per column: the cell's colour value
    tr.hoverongaps = true;                    // an empty cell is a time too (its count reads 0)
    v.times = tr.x.slice(0, -1);
    // a live column's rows' events coloured as plot_heatmap colours them: log10 of the count per cell height
    const edges = a.live.edges.map(e => a.live.axis === "log" ? Math.log10(e) : e);
    const perCell = edges.slice(1).map((e, r) => a.live.cell_h / (e - edges[r]));
    v.zOf = n => n.map((c, r) => c > 0 ? Math.log10(c * perCell[r]) : null);
    v.totals = a.totals && {text: a.totals.text, noun: a.totals.noun, span: a.totals.span,
                            columns: a.totals.columns.slice(), seconds: a.totals.seconds && a.totals.seconds.slice()};
  } else {
    v.times = (fig.data[0] ? fig.data[0].x : []).map(t => t - v.width / 2);
  }
  v.times = v.times.map(Number);
  if (v.kind === "heatmap") evenRows(v, fig);
  fig.data.forEach(tr => { if (tr.xaxis === "x2" && tr.x) tr.x = Array.from(tr.x, isoLocal); });
  const axis = fig.layout.xaxis2 || {};
  if (axis.range) axis.range = axis.range.map(isoLocal);
  if (axis.title) axis.title.text = `time (${zoneName()})`;
  v.title = fig.layout.title && fig.layout.title.text || "";
  v.named = a.title_range || "";
  v.span = [a.start, a.end];
  if (v.named && v.title.includes(v.named)) fig.layout.title.text = titled(v);
  (fig.layout.shapes || []).forEach(sh => { if (sh.xref === "x2") { sh.x0 = isoLocal(sh.x0); sh.x1 = isoLocal(sh.x1); } });
  v.keep = v.times.length;
  v.xrange = fig.layout.xaxis2 && fig.layout.xaxis2.range ? fig.layout.xaxis2.range.slice() : undefined;
  v.yrange = fig.layout.yaxis && fig.layout.yaxis.range ? fig.layout.yaxis.range.slice() : undefined;
  Plotly.newPlot(v.div, fig.data, fig.layout, {displaylogo: false, responsive: true,
                                               // a drag here drills down or zooms time (the page's own):
                                               // plotly's pan and zoom buttons would start drill-downs
                                               modeBarButtonsToRemove: ["select2d", "lasso2d", "pan2d", "zoomIn2d",
                                                                        "zoomOut2d", "autoScale2d"]});
  v.div.dataset.columns = v.times.length;
  v.div.dataset.last = v.times.length ? v.times[v.times.length - 1] : "";
  v.div.on("plotly_relayout", ev => onRelayout(v, ev));
}

// plotly paints a heat map cell by cell (a canvas fillRect each: 0.1-0.2 s for 300 x 80 cells)
// unless its rows are evenly spaced on a linear axis; then it paints one pixel per cell and
// the browser scales the picture. The rows (true bucket edges, uneven) are drawn here as even
// sub-rows finer than a pixel, each a reference to its row (the same picture; live columns
// change v.zRows and v.cells, which the sub-rows share), on a linear axis of log10 values
// where the view's axis is log: its ticks, lines and shapes moved alike (yOf).
function evenRows(v, fig) {
  const tr = fig.data[1], log = v.live.axis === "log", lin = y => (y > 0 ? Math.log10(y) : null);
  if (log) {
    ["yaxis", "yaxis2"].forEach(key => {
      const ax = fig.layout[key];
      if (!ax || ax.type !== "log") return;
      ax.type = "linear";
      if (ax.tickvals) ax.tickvals = ax.tickvals.map(lin);
    });
    fig.data.forEach(t => {
      if (t === tr || !t.y || !["y", "y2"].includes(t.yaxis || "y")) return;
      if (t.hovertemplate && t.hovertemplate.includes("%{y") && !t.customdata) {
        t.customdata = Array.from(t.y);
        t.hovertemplate = t.hovertemplate.replace(/%\{y/g, "%{customdata");
      }
      t.y = Array.from(t.y, lin);
    });
  }
  const edges = Array.from(tr.y, log ? lin : Number), rows = edges.length - 1;
  if (rows < 1 || !edges.every(Number.isFinite)) return;
  const n = Math.max(rows, Math.min(2000, Math.ceil(v.div.clientHeight || 600)));
  const step = (edges[rows] - edges[0]) / n, z = new Array(n), cells = new Array(n), y = new Array(n + 1);
  for (let s = 0, r = 0; s < n; s++) {
    const mid = edges[0] + (s + 0.5) * step;
    while (r < rows - 1 && mid >= edges[r + 1]) r++;
    z[s] = v.zRows[r];
    cells[s] = v.cells[r];
    y[s] = edges[0] + s * step;
  }
  y[n] = edges[rows];
  Object.assign(tr, {y, z, customdata: cells});
}
function yOf(v, value) {                 // a value (the dataset's unit) on view v's y axis
  const y = value / v.live.scale;
  return v.live.axis === "log" && v.kind === "heatmap" ? Math.log10(y) : y;
}

// -- live ------------------------------------------------------------------------------------

function openStream() {
  const ready = views.filter(v => v.live);
  if (!ready.length) return;
  const ids = ready.map(v => v.live.id).join(",");
  const after = ready.map(v => v.times.length ? v.times[v.times.length - 1] : v.live.next).join(",");
  stream = new EventSource("/api/live?ids=" + ids + "&after=" + after);
  stream.onmessage = ev => {
    const seen = window.strataLive;               // what the live stream sent: for tests and benchmarks
    seen.messages += 1; seen.bytes += ev.data.length; seen.largest = Math.max(seen.largest, ev.data.length);
    const m = JSON.parse(ev.data);
    const v = ready[m.i];
    if (v && state.live) addColumns(v, m.cols);
    if (v && state.live && m.refit) refit(v);
  };
  stream.onerror = () => { document.getElementById("status").textContent = "live: reconnecting"; };
  stream.onopen = () => { document.getElementById("status").textContent = "live"; };
}

// Load one view again (its axis, keys and title from the archive), at most every 3 s, then
// follow all views from where each is.
async function refit(v) {
  if (v.refitting || Date.now() - (v.refitAt || 0) < 3000) return;
  v.refitting = true;
  v.refitAt = Date.now();
  window.strataLive.refits += 1;
  let a = null;
  try { a = await api("/api/view?" + viewQuery(v.spec)); } catch (e) { say(e.message); }
  v.refitting = false;
  if (!a || !views.includes(v) || !state.live) return;
  draw(v, a);
  if (stream) { stream.close(); stream = null; }
  openStream();
}

function addColumns(v, cols) {
  const data = v.div.data;
  for (const c of cols) {
    let idx = v.times.indexOf(c.t);
    const append = idx < 0;
    if (append && v.times.length && c.t < v.times[v.times.length - 1]) continue;
    if (v.kind === "heatmap") {
      const tr = data[1], z = v.zOf(c.n);
      if (append) {
        tr.x.push(isoLocal(c.t + v.width));
        v.zRows.forEach((row, r) => row.push(z[r]));
        v.cells.forEach((row, r) => row.push(v.cell(r, c.n[r])));
        v.times.push(c.t);
        if (v.totals) { v.totals.columns.push(c.total); if (v.totals.seconds) v.totals.seconds.push(c.s || 0); }
      } else {
        v.zRows.forEach((row, r) => { row[idx] = z[r]; });
        v.cells.forEach((row, r) => { row[idx][2] = c.n[r]; });
        if (v.totals) { v.totals.columns[idx] = c.total; if (v.totals.seconds) v.totals.seconds[idx] = c.s || 0; }
      }
    } else {
      data.forEach((tr, j) => {
        if (append) { tr.x.push(isoLocal(c.t + v.width / 2)); tr.y.push(c.y[j]); } else { tr.y[idx] = c.y[j]; }
        if (c.p99 && tr.customdata) { if (append) tr.customdata.push(c.p99[j]); else tr.customdata[idx] = c.p99[j]; }
      });
      if (append) v.times.push(c.t);
    }
  }
  while (v.times.length > v.keep) {          // the window keeps its length: drop the oldest
    v.times.shift();
    if (v.kind === "heatmap") {
      const tr = data[1];
      tr.x.shift(); v.zRows.forEach(row => row.shift()); v.cells.forEach(row => row.shift());
      if (v.totals) { v.totals.columns.shift(); if (v.totals.seconds) v.totals.seconds.shift(); }
    } else {
      data.forEach(tr => { tr.x.shift(); tr.y.shift(); if (tr.customdata) tr.customdata.shift(); });
    }
  }
  const layout = v.div.layout;
  layout.datarevision = (layout.datarevision || 0) + 1;
  if (v.kind === "heatmap") {
    const x = data[1].x;
    v.xrange = [x[0], x[x.length - 1]];
  } else if (v.times.length) {
    v.xrange = [isoLocal(v.times[0]), isoLocal(v.times[v.times.length - 1] + v.width)];
  }
  layout.xaxis2.range = v.xrange.slice();
  if (v.totals) retotal(v);
  if (v.named && v.times.length) {                 // the title's range follows the columns
    const end = v.times[v.times.length - 1] + v.width;
    v.span = [end - (v.span[1] - v.span[0]), end];
  }
  if (layout.title) layout.title.text = v.named && v.title.includes(v.named) ? titled(v) : v.title;
  redraw(v);
  v.div.dataset.columns = v.times.length;
  v.div.dataset.last = v.times[v.times.length - 1];
}

// A heat map's totals as describe.totals writes them, over the columns shown, and its side
// panel's events/s per row (the seconds collected, else the span: timebins.rate_seconds).
function retotal(v) {
  const t = v.totals, sum = list => list.reduce((a, b) => a + b, 0);
  const total = sum(t.columns), seconds = Math.max(t.seconds ? sum(t.seconds) : t.span, 1);
  const text = total ? `${formatCount(total)} ${t.noun} · ${formatCount(total / seconds)} ${t.noun}/s average`
                     : `no ${t.noun} in this range`;
  if (text !== t.text && v.title.includes(t.text)) v.title = v.title.replace(t.text, text);
  t.text = text;
  v.total = total;
  const side = v.div.data[0], cells = v.cells;
  if (side && side.x && side.x.length === 2 * cells.length) {
    side.x = cells.flatMap(row => { const r = row.reduce((a, c) => a + (c[2] || 0), 0) / seconds; return [r, r]; });
  }
}

// A redraw while the user drags would cancel the drag: held until the button is up.
let dragging = false;
let pressed = null;        // where the button went down: a click, or the time of a drag too narrow for plotly
document.addEventListener("mousedown", ev => {
  dragging = true;
  pressed = {x: ev.clientX, y: ev.clientY, view: views.find(w => w.div.contains(ev.target))};
}, true);
document.addEventListener("mouseup", ev => setTimeout(() => {   // after plotly's own mouseup
  if (pressed && pressed.view && views.includes(pressed.view)) onClick(pressed.view, ev);
  dragging = false;
  views.filter(v => v.pending).forEach(redraw);
}, 0));

function redraw(v) {
  v.pending = dragging;
  if (dragging) return;
  v.div.layout.shapes = v.shapes || [];
  Plotly.react(v.div, v.div.data, v.div.layout);
}

// -- pointing --------------------------------------------------------------------------------

function timeAt(v, clientX) {            // the unix second under a pixel of view v's time axis
  const x = v.div._fullLayout && v.div._fullLayout.xaxis2;
  if (!x) return NaN;
  const px = clientX - v.div.getBoundingClientRect().left - x._offset;
  return px < 0 || px > x._length ? NaN : unixOf(x.p2d(px));
}

function column(v, t) {                  // the start of view v's column holding second t, or undefined
  return v.times && v.times.find(s => t >= s && t < s + v.width);
}

function onRelayout(v, ev) {
  if (relayoutBusy) return;
  const x0 = ev["xaxis2.range[0]"], x1 = ev["xaxis2.range[1]"];
  let y0 = ev["yaxis.range[0]"], y1 = ev["yaxis.range[1]"];
  if (x0 === undefined && y0 === undefined) {
    if (ev["yaxis2.range[0]"] !== undefined && !relayoutBusy) {     // a graph's y-zoom: put back
      relayoutBusy = true;
      Plotly.relayout(v.div, {"yaxis2.autorange": true}).then(() => { relayoutBusy = false; });
    }
    return;
  }
  if (x0 !== undefined && (state.drag === "zoom" || v.kind !== "heatmap")) {    // zoom time: every view
    const t0 = Math.floor(unixOf(x0)), t1 = Math.ceil(unixOf(x1));
    Object.assign(state, {live: false, since: t0, until: Math.max(t1, t0 + 1)});
    load(true);
    return;
  }
  let t0 = unixOf(x0), t1 = unixOf(x1);
  if (x0 === undefined) {             // narrower than plotly's 8 px: a y-zoom, put back; on a heat map, a
    const at = column(v, pressed ? timeAt(v, pressed.x) : NaN);     // drill-down of the column pressed
    relayoutBusy = true;
    Plotly.relayout(v.div, {"yaxis.range": v.yrange.slice()}).then(() => { relayoutBusy = false; });
    if (state.drag === "zoom" || v.kind !== "heatmap" || at === undefined) return;
    [t0, t1] = [at, at + v.width];
  }
  if (y0 === undefined) { y0 = v.yrange[0]; y1 = v.yrange[1]; }      // a flat drag: every value
  if (v.live.axis === "log") { y0 = Math.pow(10, y0); y1 = Math.pow(10, y1); }   // axis ranges are logs
  state.band = {name: v.spec.name, t0, t1, lo: y0 * v.live.scale, hi: y1 * v.live.scale};
  writeState(true);
  band(v, state.band);
}

// The rectangle of a band on view v, and its drill-down.
function band(v, b) {
  views.forEach(w => { w.shapes = (w.shapes || []).filter(s => s.type !== "rect"); });
  v.shapes = v.shapes.concat([{type: "rect", xref: "x2", yref: "y", x0: isoLocal(b.t0), x1: isoLocal(b.t1),
    y0: yOf(v, b.lo), y1: yOf(v, b.hi), line: {color: "#00a", width: 2}, fillcolor: "rgba(0,0,170,0.08)"}]);
  views.forEach(w => {
    relayoutBusy = true;
    const back = w === v ? {"xaxis2.range": v.xrange.slice(), "yaxis.range": v.yrange.slice()} : {};
    Plotly.relayout(w.div, Object.assign(back, {shapes: w.shapes})).then(() => { relayoutBusy = false; });
  });
  const asked = JSON.stringify(b);
  if (asked !== drilled) { drilled = asked; drill(v, b); }
}

// After a load: the band and the selected time the address holds (a band drilled already is
// not asked again); without them, the panels' hints.
let drilled = "";
function restorePointing() {
  const v = state.band && views.find(w => w.kind === "heatmap" && w.spec.name === state.band.name);
  if (v) band(v, state.band);
  else {
    drilled = "";
    document.getElementById("drill").innerHTML = "<h3>Drill-down</h3><p class='hint'>Drag a rectangle on a heat map.</p>";
  }
  if (state.at !== undefined) selectTime(state.at);
  else document.getElementById("at").innerHTML = "<h3>Selected time</h3><p class='hint'>Click a time on a view.</p>";
}

async function drill(v, asked) {
  const box = document.getElementById("drill");
  box.innerHTML = "<h3>Drill-down</h3><p class='hint'>…</p>";
  let b;
  try {
    b = await api("/api/drill", Object.assign({view: {name: v.spec.name, axis: state.axis}, x0: asked.t0, x1: asked.t1,
                                               y0: asked.lo, y1: asked.hi}, asked.by ? {by: asked.by} : {}));
  } catch (e) {
    box.innerHTML = "<h3>Drill-down</h3>";
    say(e.message);
    return;
  }
  say("");
  picked = {target: b.target, by: b.by, keys: []};
  const rows = b.table.map(r => `<tr><td><span class="key" data-key="${esc(r.key)}">${esc(r.key)}</span></td>` +
    `<td class="events">${r.events}</td><td>${(r.share || 0).toFixed(1)}%</td>` +
    `<td>${r.of_key === null || r.of_key === undefined ? "" : r.of_key.toFixed(1) + "%"}</td></tr>`).join("");
  box.innerHTML = `<h3>Drill-down: ${esc(b.target)}</h3>` +
    `<p class="hint">${esc(b.label)}, ${b.events} events · click a key for its view, shift-click to compare</p>` +
    `<table id="drill-table" data-since="${b.since}" data-until="${b.until}" data-range="${esc(b.range)}" ` +
    `data-target="${esc(b.target)}"><tr><th>${esc(b.by)}</th><th>events</th><th>share</th><th>of key</th></tr>` +
    rows + `</table><p class="cmd">${esc(b.command)}</p>`;
  if (b.choices && b.choices.length > 1) {        // break the band down by another field the archive holds
    box.querySelector("h3").insertAdjacentHTML("afterend", `<label>break down by <select id="drill-by">` +
      b.choices.map(f => `<option${f === b.by ? " selected" : ""}>${esc(f)}</option>`).join("") + "</select></label>");
    box.querySelector("#drill-by").onchange = e => {
      state.band = Object.assign({}, state.band, {by: e.target.value});
      writeState(true);
      band(v, state.band);
    };
  }
  box.querySelector("h3").insertAdjacentHTML("beforeend", ' <button id="drill-csv" title="the table as CSV">CSV</button>');
  box.querySelector("#drill-csv").onclick = () => download(`${b.target} ${b.range} ${b.since}-${b.until}.csv`,
    [[b.by, "events", "share %", "of key %"]].concat(b.table.map(r => [r.key, r.events, r.share, r.of_key])));
  box.querySelectorAll(".key").forEach(el => el.addEventListener("click", ev => onKey(ev, el)));
}

function filtered(target, key) {
  return target.replace(/\[([^\]=]+)\]$/, (_, by) => `[${by}=${key}]`);
}

function onKey(ev, el) {
  const key = el.dataset.key;
  if (!ev.shiftKey) {
    addView({name: filtered(picked.target, key)});
    return;
  }
  el.classList.toggle("picked");
  picked.keys = picked.keys.includes(key) ? picked.keys.filter(k => k !== key) : picked.keys.concat([key]);
  if (picked.keys.length < 2) return;
  const at = state.views.findIndex(s => s.compare && s.name === picked.target && s.drill === picked.stamp);
  picked.stamp = picked.stamp || Date.now();
  const spec = {name: picked.target, compare: picked.keys.slice(), drill: picked.stamp};
  if (at >= 0) { state.views[at] = spec; load(); } else addView(spec);
}

// A click (the button up within 4 px of where it went down) anywhere on a view's time axis,
// an empty cell or a gap included: every view's values at that time.
function onClick(v, ev) {
  if (!pressed || Math.abs(ev.clientX - pressed.x) > 4 || Math.abs(ev.clientY - pressed.y) > 4) return;
  const y = v.div._fullLayout && v.div._fullLayout.yaxis;
  const py = ev.clientY - v.div.getBoundingClientRect().top - (y ? y._offset : 0);
  const t = timeAt(v, ev.clientX);
  if (!y || py < 0 || py > y._length || !isFinite(t)) return;
  state.at = Math.floor(t);
  writeState();
  selectTime(state.at);
}

function selectTime(t) {
  const lines = [];
  for (const w of views) {
    const at = column(w, t);
    if (at === undefined) continue;
    const i = w.times.indexOf(at), data = w.div.data;
    if (w.kind === "heatmap") {
      const n = w.cells.reduce((s, row) => s + (row[i][2] || 0), 0);
      const noun = w.totals ? w.totals.noun : "events";
      lines.push(`<tr><td>${esc(w.spec.name)}</td><td class="value">${n.toLocaleString("en-US")}</td>` +
                 `<td>${esc(noun)}${w.width > 1 ? ` in ${w.width} s` : ""}</td></tr>`);
    } else {
      data.forEach(tr => lines.push(`<tr><td>${esc(w.spec.name)} ${esc(tr.name)}</td>` +
        `<td class="value">${tr.y[i] === null || tr.y[i] === undefined ? "–" : formatCount(Number(tr.y[i]))}</td>` +
        `<td>${esc(w.label)}</td></tr>`));
    }
    w.shapes = (w.shapes || []).filter(s => s.type !== "line").concat([{type: "line", xref: "x2", yref: "paper",
      x0: isoLocal(at), x1: isoLocal(at), y0: 0, y1: 1, line: {color: "#c00", width: 1}}]);
    relayoutBusy = true;
    Plotly.relayout(w.div, {shapes: w.shapes}).then(() => { relayoutBusy = false; });
  }
  document.getElementById("at").innerHTML = `<h3>Selected time: ${esc(isoLocal(t).replace("T", " "))} ` +
    `${esc(zoneLabel(t))}</h3><table id="at-table">${lines.join("")}</table>`;
}

// -- CSV -------------------------------------------------------------------------------------

function csvText(rows) {
  const cell = c => c === null || c === undefined ? ""
    : /[",\n]/.test(String(c)) ? `"${String(c).replace(/"/g, '""')}"` : String(c);
  return rows.map(r => r.map(cell).join(",")).join("\n") + "\n";
}
function download(name, rows) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([csvText(rows)], {type: "text/csv"}));
  a.download = name.replace(/[\/\\:*?"<>|\s]+/g, "_");
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}
// A view's columns as shown: a heat map's non-empty cells (each column's time, the cell's
// bounds, its events), a graph's keys side by side; times as unix seconds and UTC.
function viewRows(v) {
  const utc = t => new Date(t * 1000).toISOString().replace(".000Z", "Z"), data = v.div.data;
  if (v.kind === "heatmap") {
    const unit = v.live.label || v.live.unit, noun = v.totals ? v.totals.noun : "events";
    const rows = [["unix", "time (UTC)", `from (${unit})`, `to (${unit})`, noun]];
    v.times.forEach((t, i) => v.cells.forEach(row => {
      if (row[i][2]) rows.push([t, utc(t), row[i][0], row[i][1], row[i][2]]);
    }));
    return rows;
  }
  const p99 = v.live.p99 ? data : [];         // a time view: each component's p99 after the means
  const rows = [["unix", "time (UTC)"].concat(data.map(tr => `${tr.name} (${v.label})`),
                                               p99.map(tr => `${tr.name} p99 (${v.label})`))];
  v.times.forEach((t, i) => rows.push([t, utc(t)].concat(data.map(tr => tr.y[i]), p99.map(tr => tr.customdata[i]))));
  return rows;
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// -- toolbar, worksheets, datasets -------------------------------------------------------------

function syncToolbar() {
  document.getElementById("live").textContent = state.live ? "pause" : "live";
  document.getElementById("axis").value = state.axis;
  document.getElementById("crop").value = state.crop || "";
  document.getElementById("style").value = state.style || "";
  document.getElementById("drag").value = state.drag;
  document.getElementById("zone").value = state.zone;
  document.querySelectorAll("#spans button").forEach(b => b.classList.toggle("on", +b.dataset.last === span()));
  document.getElementById("status").textContent = state.live ? "live" : "paused";
  if (!state.live && state.since !== undefined) {
    document.getElementById("from").value = isoLocal(state.since).replace("T", " ");
    document.getElementById("until").value = isoLocal(state.until).replace("T", " ");
  }
}
function span() { return state.live || state.since === undefined ? state.last : state.until - state.since; }

function shift(by) {
  const width = span();
  const until = Math.floor((state.live || state.since === undefined ? Date.now() / 1000 : state.until) + by * width);
  Object.assign(state, {live: false, since: until - width, until});
  load(true);
}

async function refreshDatasets() {
  let d;
  try { d = await api("/api/datasets"); } catch (e) { say(e.message); return; }
  if (d.zone && d.zone !== serverZone) {
    serverZone = d.zone;
    if (state.zone === "server" && views.length) load();
  }
  const pick = document.getElementById("dataset-pick");
  pick.innerHTML = d.datasets.map(i => `<option>${esc(i.name)}</option>`)
    .concat((d.time_views || []).map(n => `<option title="where each op's time went">${esc(n)}</option>`)).join("");
  document.getElementById("ds-table").innerHTML = d.datasets.map(i =>
    `<tr data-name="${esc(i.name)}"><td>${esc(i.name)}</td><td class="state">${i.state}</td><td>` +
    `<button class="ds-act" data-act="${i.state === "active" ? "suspend" : "resume"}">` +
    `${i.state === "active" ? "suspend" : "resume"}</button></td></tr>`).join("");
  document.querySelectorAll(".ds-act").forEach(b => b.onclick = () =>
    change(b.dataset.act, b.closest("tr").dataset.name));
  if (!state.views.length && d.datasets.length && !document.body.dataset.started) {
    const heat = d.datasets.filter(i => i.kind === "heatmap" && !i.breakdown)[0] || d.datasets[0];
    state.views.push({name: heat.name});
    load();
  }
  document.body.dataset.started = "1";
}

async function change(action, name) {
  try {
    await api("/api/datasets", {action, name});
    say(`${action}: ${name}`);
  } catch (e) { say(e.message); }
  refreshDatasets();
}

async function refreshWorksheets() {
  try {
    const d = await api("/api/worksheets");
    document.getElementById("ws-open").innerHTML = '<option value="">open…</option>' +
      d.worksheets.map(w => `<option>${esc(w.name)}</option>`).join("");
  } catch (e) { /* an archive without worksheets */ }
}

function wire() {
  document.getElementById("add-view").onclick = () => addView({name: document.getElementById("dataset-pick").value});
  document.querySelectorAll("#spans button").forEach(b => b.onclick = () => {
    const wanted = +b.dataset.last;
    if (state.live || state.since === undefined) { state.last = wanted; }
    else { const mid = (state.since + state.until) / 2; state.since = Math.floor(mid - wanted / 2); state.until = state.since + wanted; }
    load(true);
  });
  document.getElementById("range").onclick = () => {      // a range typed in, in the zone chosen
    const t0 = unixOf(document.getElementById("from").value), t1 = unixOf(document.getElementById("until").value);
    if (!(t1 > t0)) { say("a range: from and until as YYYY-MM-DD HH:MM[:SS], until after from"); return; }
    Object.assign(state, {live: false, since: Math.floor(t0), until: Math.ceil(t1)});
    load(true);
  };
  document.getElementById("back").onclick = () => shift(-0.5);
  document.getElementById("forward").onclick = () => shift(0.5);
  document.getElementById("live").onclick = () => {
    if (state.live) { const now = Math.floor(Date.now() / 1000); Object.assign(state, {live: false, since: now - state.last, until: now}); }
    else { state.last = span(); Object.assign(state, {live: true}); delete state.since; delete state.until; }
    load(true);
  };
  document.getElementById("axis").onchange = e => { state.axis = e.target.value; load(); };
  document.getElementById("crop").onchange = e => { state.crop = e.target.value || null; load(); };
  document.getElementById("style").onchange = e => { state.style = e.target.value; load(); };
  document.getElementById("drag").onchange = e => { state.drag = e.target.value; writeState(); };
  document.getElementById("zone").onchange = e => { state.zone = e.target.value; load(); };
  document.getElementById("ws-save").onclick = async () => {
    const name = document.getElementById("ws-name").value;
    try { await api("/api/worksheets", {name, state}); say("saved " + name); refreshWorksheets(); }
    catch (e) { say(e.message); }
  };
  document.getElementById("ws-open").onchange = async e => {
    if (!e.target.value) return;
    try { state = Object.assign({}, DEFAULT, (await api("/api/worksheets/" + encodeURIComponent(e.target.value))).state);
          load(); }
    catch (err) { say(err.message); }
  };
  document.getElementById("ds-create").onclick = () => change("create", document.getElementById("ds-name").value);
}

wire();
if (state.views.length) load();        // the views asked first: the server reads in the order asked
refreshWorksheets();
refreshDatasets();
