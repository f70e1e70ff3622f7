// The script and CSS of the clustered graph view (graph_page.h), kept apart from the C++ that
// writes its data. The script reads the JSON in #gv-data; the order of the fields in its arrays
// is documented in graph_page.cpp (writeOp, writeCluster).
#include "views/graph_page.h"

namespace spopt {

const char* const kGraphPageCss = R"CSS(
.gv-bar { margin: .4em 0; }
.gv-wrap { display: flex; gap: .5em; height: 78vh; }
#gv-svg { flex: 1; min-width: 0; border: 1px solid #ddd; border-radius: .4em; background: #fff; cursor: grab; outline: none; }
.gv-panel { width: 26em; overflow: auto; border: 1px solid #ddd; border-radius: .4em; padding: .4em .7em; font-size: .85em; }
.gv-panel h3 { margin: .2em 0; font-size: 1.1em; } .gv-panel h4 { margin: .7em 0 .2em; font-size: .95em; }
.gv-panel ul { padding-left: 1.1em; margin: .2em 0; } .gv-panel pre { background: #fafafa; border: 1px solid #eee; padding: .3em; white-space: pre-wrap; }
.gv-dim { color: #777; } .gv-p { color: #1f5fbf; } .gv-c { color: #8a2be2; }
.gv-t0 { font: bold 13px Helvetica, Arial, sans-serif; } .gv-t1 { font: 11px Helvetica, Arial, sans-serif; }
.gv-t2 { font: 11px Helvetica, Arial, sans-serif; fill: #333; } .gv-t3 { font: 9.5px Helvetica, Arial, sans-serif; fill: #555; }
.gv-el { font: 9px Helvetica, Arial, sans-serif; fill: #777; pointer-events: none; }
.gv-cluster, .gv-op, .gv-header, .gv-header-t { cursor: pointer; }
.gv-framebox { fill: #fafbfd; stroke: #9aa4b8; stroke-dasharray: 4,2; } .gv-header { fill: #e4e8f0; stroke: #9aa4b8; }
.gv-badge { transform-box: fill-box; transform-origin: center; transform: scale(var(--gv-inv, 1)); stroke: #333; stroke-width: .6; }
.gv-sel > rect, .gv-sel > polygon { stroke: #000 !important; stroke-width: 3 !important; }
.gv-prod > rect, .gv-prod > polygon { stroke: #1f5fbf !important; stroke-width: 3 !important; }
.gv-cons > rect, .gv-cons > polygon { stroke: #8a2be2 !important; stroke-width: 3 !important; }
)CSS";

const char* const kGraphPageScript = R"JS(
(function () {
'use strict';
// sp-opt clustered graph view. Data: the JSON in #gv-data (graph_page.cpp writes it; field order
// is listed there). The C++ side chose each cluster's layers and the order within them; this
// script only turns them into coordinates for the clusters that are open, draws them as SVG and
// handles the reader's clicks, keys and searches.
const META = JSON.parse(document.getElementById('gv-data').textContent);
const NS = 'http://www.w3.org/2000/svg';
const svg = document.getElementById('gv-svg'), root = document.getElementById('gv-root');
const panel = document.getElementById('gv-panel'), statusLine = document.getElementById('gv-status');
const rankPicker = document.getElementById('gv-rank'), searchBox = document.getElementById('gv-search');
const FILL = ['#eeeeee', '#ffe08a', '#b8ecb8', '#f5b8b8'], STROKE = ['#8c8c8c', '#d08700', '#1e8c1e', '#c81e1e'];
const STATUS = ['unchanged', 'changed', 'added', 'removed'];
const RING = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
const C = {name: 0, parent: 1, ops: 2, changed: 3, rings: 4, vin: 5, vout: 6, sin: 7, sout: 8, items: 9, layer: 10, order: 11, edges: 12};
const O = {type: 0, status: 1, block: 2, pos: 3, ins: 4, outs: 5, attrs: 6, dist: 7, comm: 8, ring: 9, notes: 10};
const PAD = 12, HEADER = 22, GAPX = 18, GAPY = 36;

let R = null;            // the shown rank's data
let open = new Set();    // open cluster ids (the root, 0, always is)
let view = {x: 20, y: 20, k: 1};
let placed = new Map();  // 'c12' / 'o345' -> {x, y, w, h, el} of what is drawn now
let selected = -1, index = null, searchHits = [], searchAt = 0, lastQuery = '';

const ringColour = (r) => RING[((r % 10) + 10) % 10];
const el = (tag, attrs, parent) => {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
};
const textWidth = (s, px) => s.length * px * 0.6;
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
const str = (i) => R.strings[i];
const varName = (v) => (v >= 0 ? R.vars[v][0] : '');
const opLabel = (o) => str(R.ops[o][O.type]);

// ---- sizes of what a cluster shows -----------------------------------------------------------
function clusterLines(c) {
  const cl = R.clusters[c];
  let sub = cl[C.ops] + ' op' + (cl[C.ops] === 1 ? '' : 's');
  if (META.diff && cl[C.changed]) sub += ' \u00b7 ' + cl[C.changed] + ' changed';
  const io = 'in ' + cl[C.vin] + ' \u00b7 out ' + cl[C.vout] + ' vars';
  const rings = cl[C.rings].map((r) => 'ring ' + r[0] + ' \u00d7' + r[1] + ' ' + r[2]);
  return {sub, io, rings};
}
function itemSize(it) {
  if (it < 0) {
    const c = -it - 1;
    if (open.has(c)) return layoutCluster(c);
    const l = clusterLines(c);
    let w = Math.max(150, textWidth(R.clusters[c][C.name], 13) + 24, textWidth(l.sub, 11) + 24, textWidth(l.io, 10) + 24);
    for (const r of l.rings) w = Math.max(w, textWidth(r, 10) + 44);
    return {w, h: 52 + 16 * l.rings.length};
  }
  const op = R.ops[it];
  const extra = op[O.comm] || (op[O.notes].length ? '~ ' + op[O.notes][0] : '');
  const w = Math.max(64, textWidth(opLabel(it), 11) + 20, textWidth(extra, 9) + 28);
  return {w, h: extra ? 38 : 26};
}

// ---- coordinates: rows from the precomputed layers, each item near its inputs ----------------
function layoutCluster(c) {
  const cl = R.clusters[c], items = cl[C.items], layer = cl[C.layer], order = cl[C.order];
  const sizes = items.map(itemSize);
  const rows = [];
  items.forEach((_, i) => { (rows[layer[i]] = rows[layer[i]] || [])[order[i]] = i; });
  const preds = items.map(() => []);
  for (const e of cl[C.edges]) if (layer[e[0]] < layer[e[1]]) preds[e[1]].push(e[0]);
  else if (layer[e[1]] < layer[e[0]]) preds[e[0]].push(e[1]);
  const cx = new Array(items.length).fill(0), pos = new Array(items.length);
  let y = c === 0 ? 0 : HEADER + PAD;
  for (const row of rows) {
    if (!row) continue;
    const r = row.filter((i) => i !== undefined);
    // Wanted centre: the mean of the inputs' centres; then pushed apart left to right and the
    // row moved back by the mean push, so that a chain stays straight and a fan stays centred.
    let run = -Infinity, shift = 0;
    const want = r.map((i, k) => (preds[i].length ? preds[i].reduce((s, p) => s + cx[p], 0) / preds[i].length : k * 40));
    const got = r.map((i, k) => {
      const x = Math.max(want[k], run + sizes[i].w / 2);
      run = x + sizes[i].w / 2 + GAPX;
      shift += x - want[k];
      return x;
    });
    shift /= r.length;
    let h = 0;
    r.forEach((i, k) => {
      cx[i] = got[k] - shift;
      h = Math.max(h, sizes[i].h);
    });
    r.forEach((i) => { pos[i] = {x: cx[i] - sizes[i].w / 2, y, w: sizes[i].w, h: sizes[i].h, inner: sizes[i].pos ? sizes[i] : null}; });
    y += h + GAPY;
  }
  let minX = Infinity, maxX = -Infinity;
  for (const p of pos) { minX = Math.min(minX, p.x); maxX = Math.max(maxX, p.x + p.w); }
  if (!pos.length) { minX = 0; maxX = 120; }
  const left = (c === 0 ? 0 : PAD) - minX;
  for (const p of pos) p.x += left;
  const w = Math.max(maxX - minX + (c === 0 ? 0 : 2 * PAD), textWidth(cl[C.name], 12) + 40);
  return {w, h: Math.max(y - GAPY + (c === 0 ? 0 : PAD), HEADER + PAD), pos};
}

// ---- drawing ----------------------------------------------------------------------------------
function hexagon(x, y, w, h, cut) {
  return [[x + cut, y], [x + w - cut, y], [x + w, y + h / 2], [x + w - cut, y + h], [x + cut, y + h], [x, y + h / 2]].map((p) => p.join(',')).join(' ');
}
function drawOp(o, x, y, w, h, g) {
  const op = R.ops[o], st = op[O.status], comm = op[O.comm];
  const n = el('g', {class: 'gv-op' + (comm ? ' gv-comm' : ''), 'data-op': o, 'data-type': opLabel(o)}, g);
  if (comm) el('polygon', {points: hexagon(x, y, w, h, 9), fill: META.diff ? FILL[st] : '#ffffff', stroke: ringColour(op[O.ring]), 'stroke-width': 2.5}, n);
  else el('rect', {x, y, width: w, height: h, rx: 5, fill: FILL[st], stroke: STROKE[st]}, n);
  el('text', {x: x + w / 2, y: y + 16, 'text-anchor': 'middle', class: 'gv-t1'}, n).textContent = opLabel(o);
  const extra = comm || (op[O.notes].length ? '~ ' + op[O.notes].join(', ') : '');
  if (extra) el('text', {x: x + w / 2, y: y + 30, 'text-anchor': 'middle', class: 'gv-t3'}, n).textContent = extra;
  el('title', {}, n).textContent = 'op ' + (op[O.block] ? op[O.block] + '.' : '') + op[O.pos] + ': ' + opLabel(o) + (META.diff ? ' (' + STATUS[st] + ')' : '');
  placed.set('o' + o, {x, y, w, h, el: n});
}
function drawCollapsed(c, x, y, w, h, g) {
  const cl = R.clusters[c], l = clusterLines(c);
  const changed = META.diff && cl[C.changed] > 0;
  const n = el('g', {class: 'gv-cluster', 'data-cluster': c, 'data-name': cl[C.name], 'data-path': clusterPath(c), 'data-open': 0}, g);
  el('rect', {x, y, width: w, height: h, rx: 8, fill: changed ? '#fff3cf' : '#eeeeee', stroke: changed ? STROKE[1] : '#777', 'stroke-width': changed ? 2 : 1.2}, n);
  el('text', {x: x + 12, y: y + 18, class: 'gv-t0'}, n).textContent = cl[C.name];
  el('text', {x: x + 12, y: y + 33, class: 'gv-t2'}, n).textContent = l.sub;
  el('text', {x: x + 12, y: y + 46, class: 'gv-t3'}, n).textContent = l.io;
  cl[C.rings].forEach((r, k) => {
    const by = y + 52 + 16 * k;
    el('polygon', {points: hexagon(x + 12, by, 16, 12, 4), fill: ringColour(r[0]), class: 'gv-badge'}, n);
    el('text', {x: x + 34, y: by + 10, class: 'gv-t3'}, n).textContent = l.rings[k];
  });
  const ins = cl[C.sin].map(varName).join(', '), outs = cl[C.sout].map(varName).join(', ');
  el('title', {}, n).textContent = clusterPath(c) + ': ' + l.sub + '\nin: ' + ins + (cl[C.vin] > cl[C.sin].length ? ', \u2026' : '') +
      '\nout: ' + outs + (cl[C.vout] > cl[C.sout].length ? ', \u2026' : '') + '\nclick to open';
  placed.set('c' + c, {x, y, w, h, el: n});
}
function drawEdge(a, b, e, g, span) {
  const st = e[4], vars = e[2], sameRow = !e[5] && Math.abs(a.y - b.y) < 1, back = !sameRow && (e[5] || b.y <= a.y);
  // An edge past more than one row (a layer's gradients to the optimizer) runs down the right
  // side instead of across the boxes in between.
  const long = !back && !sameRow && span > 1;
  let d;
  if (long) {
    const X = Math.max(a.x + a.w, b.x + b.w) + 16 + 5 * (span % 9);
    const y1 = a.y + a.h * 0.8, y2 = b.y + b.h * 0.4;  // clear of the back edges' ends at mid-height
    d = `M${a.x + a.w},${y1} C${X},${y1} ${X},${y2} ${b.x + b.w},${y2}`;
  } else if (sameRow) {
    const [l, r] = a.x < b.x ? [a, b] : [b, a], ya = l.y + l.h / 2;
    d = a === l ? `M${l.x + l.w},${ya} L${r.x},${ya}` : `M${r.x},${ya} L${l.x + l.w},${ya}`;
  } else if (back) {
    const X = Math.max(a.x + a.w, b.x + b.w) + 24 + Math.min(60, 6 * ((a.y + b.y) % 7));
    d = `M${a.x + a.w},${a.y + a.h / 2} C${X},${a.y + a.h / 2} ${X},${b.y + b.h / 2} ${b.x + b.w},${b.y + b.h / 2}`;
  } else {
    const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y, dy = Math.max(18, (y2 - y1) / 2);
    d = `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`;
  }
  const colour = st ? STROKE[st] : back ? '#b9b9d9' : '#9a9a9a';
  const p = el('path', {d, fill: 'none', stroke: colour, 'stroke-width': Math.min(4, 1 + Math.log2(vars)), 'marker-end': 'url(#gv-arrow)', class: 'gv-edge'}, g);
  if (st === 3 || back) p.setAttribute('stroke-dasharray', '5,3');
  const label = varName(e[3][0]) + (vars > 1 ? ' +' + (vars - 1) : '');
  el('title', {}, p).textContent = vars + ' var' + (vars > 1 ? 's' : '') + ': ' + e[3].map(varName).join(', ') +
      (vars > e[3].length ? ', \u2026' : '') + (back ? ' (flows back up)' : '');
  if (!back && !sameRow && !long) {
    const t = el('text', {x: (a.x + a.w / 2 + b.x + b.w / 2) / 2 + 4, y: (a.y + a.h + b.y) / 2 + 3, class: 'gv-el'}, g);
    t.textContent = label;
  }
}
function drawCluster(c, ox, oy, lay, g) {
  const cl = R.clusters[c], items = cl[C.items];
  if (c !== 0) {
    const f = el('g', {class: 'gv-frame', 'data-cluster': c, 'data-name': cl[C.name], 'data-path': clusterPath(c), 'data-open': 1}, g);
    el('rect', {x: ox, y: oy, width: lay.w, height: lay.h, rx: 10, class: 'gv-framebox'}, f);
    el('rect', {x: ox, y: oy, width: lay.w, height: HEADER, rx: 10, class: 'gv-header'}, f);
    el('text', {x: ox + 10, y: oy + 15, class: 'gv-t2 gv-header-t'}, f).textContent = '\u25be ' + cl[C.name] + ' (' + cl[C.ops] + ' ops)';
    placed.set('c' + c, {x: ox, y: oy, w: lay.w, h: lay.h, el: f});
  }
  const edges = el('g', {class: 'gv-edges'}, g), nodes = el('g', {}, g);
  const abs = lay.pos.map((p) => ({x: ox + p.x, y: oy + p.y, w: p.w, h: p.h}));
  items.forEach((it, i) => {
    const p = abs[i];
    if (it >= 0) drawOp(it, p.x, p.y, p.w, p.h, nodes);
    else if (open.has(-it - 1)) drawCluster(-it - 1, p.x, p.y, lay.pos[i].inner, nodes);
    else drawCollapsed(-it - 1, p.x, p.y, p.w, p.h, nodes);
  });
  const layer = cl[C.layer];
  for (const e of cl[C.edges]) drawEdge(abs[e[0]], abs[e[1]], e, edges, Math.abs(layer[e[1]] - layer[e[0]]));
}
function clusterPath(c) {
  const parts = [];
  for (let x = c; x > 0; x = R.clusters[x][C.parent]) parts.unshift(R.clusters[x][C.name]);
  return parts.join('/');
}
function render() {
  const t0 = performance.now();
  placed = new Map();
  root.textContent = '';
  const defs = el('defs', {}, root);
  const m = el('marker', {id: 'gv-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse'}, defs);
  el('path', {d: 'M0,0 L10,5 L0,10 z', fill: '#888'}, m);
  const lay = layoutCluster(0);
  drawCluster(0, 0, 0, lay, root);
  R.extent = lay;
  applyView();
  if (selected >= 0) highlight(selected);
  let shown = 0;
  for (const k of placed.keys()) shown += k[0] === 'o' || !open.has(+k.slice(1));
  statusLine.textContent = shown + ' boxes shown, ' + R.ops.length + ' ops in rank ' + R.rank + ' (' + (performance.now() - t0).toFixed(0) + ' ms)';
  svg.dataset.boxes = shown;
}
function applyView() {
  root.setAttribute('transform', `translate(${view.x},${view.y}) scale(${view.k})`);
  // Ring badges keep a readable size when zoomed out: collectives stay visible at every zoom.
  // (Only once labels are too small to read anyway: the badge then covers its text.)
  svg.style.setProperty('--gv-inv', String(Math.min(4, Math.max(1, 0.45 / view.k))));
}
function fit() {
  const r = svg.getBoundingClientRect(), e = R.extent;
  view.k = Math.min(1.2, (r.width - 40) / Math.max(e.w, 1), (r.height - 40) / Math.max(e.h, 1));
  // A tall graph (many layers) would shrink to nothing: fit its width instead, shown from the top.
  if (view.k < 0.35) view.k = Math.max(0.05, Math.min(1, (r.width - 40) / Math.max(e.w, 1)));
  view.x = (r.width - e.w * view.k) / 2;
  view.y = 20;
  applyView();
}
function centreOn(key) {
  const p = placed.get(key);
  if (!p) return;
  const r = svg.getBoundingClientRect();
  if (view.k < 0.6) view.k = 1;
  view.x = r.width / 2 - (p.x + p.w / 2) * view.k;
  view.y = r.height / 2 - (p.y + p.h / 2) * view.k;
  applyView();
}

// ---- details and highlights -------------------------------------------------------------------
function buildIndex() {
  // Writers and readers of each var, for highlights and search: built once per rank on demand.
  const writers = R.vars.map(() => []), readers = R.vars.map(() => []), clusterOf = new Array(R.ops.length);
  R.ops.forEach((op, o) => {
    for (let i = 1; i < op[O.ins].length; i += 2) readers[op[O.ins][i]].push(o);
    for (let i = 1; i < op[O.outs].length; i += 2) writers[op[O.outs][i]].push(o);
  });
  R.clusters.forEach((cl, c) => { for (const it of cl[C.items]) if (it >= 0) clusterOf[it] = c; });
  return {writers, readers, clusterOf};
}
function related(o) {
  index = index || buildIndex();
  const op = R.ops[o], prod = new Set(), cons = new Set();
  for (let i = 1; i < op[O.ins].length; i += 2) for (const w of index.writers[op[O.ins][i]]) if (w !== o) prod.add(w);
  for (let i = 1; i < op[O.outs].length; i += 2) for (const r of index.readers[op[O.outs][i]]) if (r !== o) cons.add(r);
  return {prod, cons};
}
function highlight(o) {
  for (const n of root.querySelectorAll('.gv-sel,.gv-prod,.gv-cons')) n.classList.remove('gv-sel', 'gv-prod', 'gv-cons');
  if (o < 0) return;
  const {prod, cons} = related(o);
  const mark = (x, cls) => {
    const p = placed.get('o' + x) || placed.get('c' + visibleCluster(x));
    if (p) p.el.classList.add(cls);
  };
  prod.forEach((x) => mark(x, 'gv-prod'));
  cons.forEach((x) => mark(x, 'gv-cons'));
  mark(o, 'gv-sel');
}
function visibleCluster(o) {
  // The outermost closed cluster on the op's path stands for it; -1 when the op itself shows.
  index = index || buildIndex();
  const path = [];
  for (let c = index.clusterOf[o]; c > 0; c = R.clusters[c][C.parent]) path.unshift(c);
  for (const c of path) if (!open.has(c)) return c;
  return -1;
}
function varLine(slot, v, others, word) {
  const [name, type, dist, persistable] = R.vars[v];
  let dims = '';
  if (dist >= 0 && R.texts[dist] && R.texts[dist].dims_mapping) dims = ' dims_mapping ' + JSON.stringify(R.texts[dist].dims_mapping);
  const links = others.map((o) => `<a href="#" data-goto="${o}">${esc(opLabel(o))} (op ${R.ops[o][O.pos]})</a>`).join(', ');
  return `<li><b>${esc(slot)}</b> ${esc(name)} <span class="gv-dim">${esc(type)}${esc(dims)}${persistable ? ' persistable' : ''}</span>` +
      (links ? `<br><span class="gv-dim">${word}:</span> ${links}` : '') + '</li>';
}
function showOp(o) {
  selected = o;
  highlight(o);
  const op = R.ops[o];
  index = index || buildIndex();
  const rows = (list, table, word) => {
    let h = '';
    for (let i = 0; i < list.length; i += 2) h += varLine(str(list[i]), list[i + 1], table[list[i + 1]].filter((x) => x !== o).slice(0, 8), word);
    return h || '<li class="gv-dim">none</li>';
  };
  let h = `<h3>${esc(opLabel(o))}</h3><p class="gv-dim">op ${op[O.block] ? op[O.block] + '.' : ''}${op[O.pos]} in ${esc(clusterPath(index.clusterOf[o]))}` +
      (META.diff ? ` \u00b7 <b style="color:${STROKE[op[O.status]]}">${STATUS[op[O.status]]}</b>` : '') + '</p>';
  if (op[O.comm]) h += `<p><b style="color:${ringColour(op[O.ring])}">\u2b22</b> ${esc(op[O.comm])}</p>`;
  if (op[O.notes].length) h += '<p>changed: ' + op[O.notes].map(esc).join(', ') + '</p>';
  h += '<h4>inputs</h4><ul>' + rows(op[O.ins], index.writers, '<span class="gv-p">produced by</span>') + '</ul>';
  h += '<h4>outputs</h4><ul>' + rows(op[O.outs], index.readers, '<span class="gv-c">read by</span>') + '</ul>';
  h += '<h4>attrs</h4><pre>' + esc(JSON.stringify(R.texts[op[O.attrs]], null, 1)) + '</pre>';
  if (op[O.dist] >= 0) h += '<h4>dist_attr</h4><pre>' + esc(JSON.stringify(R.texts[op[O.dist]], null, 1)) + '</pre>';
  panel.innerHTML = h;
  panel.dataset.op = o;
}
function showCluster(c) {
  const cl = R.clusters[c], l = clusterLines(c);
  let h = `<h3>${esc(clusterPath(c) || '(program)')}</h3><p>${esc(l.sub)}</p>`;
  if (l.rings.length) h += '<ul>' + l.rings.map((r, k) => `<li><b style="color:${ringColour(cl[C.rings][k][0])}">\u2b22</b> ${esc(r)}</li>`).join('') + '</ul>';
  h += `<h4>in: ${cl[C.vin]} vars</h4><p>${cl[C.sin].map((v) => esc(varName(v))).join(', ')}${cl[C.vin] > cl[C.sin].length ? ', \u2026' : ''}</p>`;
  h += `<h4>out: ${cl[C.vout]} vars</h4><p>${cl[C.sout].map((v) => esc(varName(v))).join(', ')}${cl[C.vout] > cl[C.sout].length ? ', \u2026' : ''}</p>`;
  panel.innerHTML = h;
}

// ---- opening, searching, ranks ------------------------------------------------------------------
function toggle(c) {
  if (open.has(c)) {
    open.delete(c);
    for (const x of [...open]) { for (let y = x; y > 0; y = R.clusters[y][C.parent]) if (y === c) { open.delete(x); break; } }
  } else {
    open.add(c);
  }
  showCluster(c);
  render();
}
function reveal(o) {
  index = index || buildIndex();
  for (let c = index.clusterOf[o]; c > 0; c = R.clusters[c][C.parent]) open.add(c);
  render();
  centreOn('o' + o);
  showOp(o);
}
function search(q) {
  q = q.trim();
  if (!q) return;
  index = index || buildIndex();
  if (q !== lastQuery) {
    lastQuery = q;
    searchAt = 0;
    const hits = [], seen = new Set(), lower = q.toLowerCase();
    const add = (o) => { if (o !== undefined && !seen.has(o)) { seen.add(o); hits.push(o); } };
    const opNumber = /^op\s*(\d+)$/i.exec(q);
    if (opNumber) R.ops.forEach((op, o) => { if (op[O.pos] === +opNumber[1]) add(o); });
    R.vars.forEach((v, i) => { if (v[0] === q) { index.writers[i].forEach(add); index.readers[i].forEach(add); } });
    R.ops.forEach((op, o) => { if (str(op[O.type]) === q) add(o); });
    R.vars.forEach((v, i) => { if (hits.length < 500 && v[0].toLowerCase().includes(lower)) add(index.writers[i][0] ?? index.readers[i][0]); });
    R.ops.forEach((op, o) => { if (hits.length < 500 && str(op[O.type]).toLowerCase().includes(lower)) add(o); });
    searchHits = hits;
  }
  if (!searchHits.length) { statusLine.textContent = 'no op or var matches \u201c' + q + '\u201d'; return; }
  const o = searchHits[searchAt++ % searchHits.length];
  reveal(o);
  statusLine.textContent += ' \u00b7 match ' + (((searchAt - 1) % searchHits.length) + 1) + ' of ' + searchHits.length + ' (Enter: next)';
}
function openChanged() {
  // A diff starts with the clusters that hold changes open, widest first, within a box budget.
  let shown = R.clusters[0][C.items].length;
  const queue = [0];
  while (queue.length) {
    const c = queue.shift();
    for (const it of R.clusters[c][C.items]) {
      if (it >= 0) continue;
      const x = -it - 1, cl = R.clusters[x];
      if (!cl[C.changed] || shown + cl[C.items].length - 1 > META.openBudget) continue;
      open.add(x);
      shown += cl[C.items].length - 1;
      queue.push(x);
    }
  }
  // Too many boxes for any of them: open the path to the first change all the same, so that the
  // reader sees one right away.
  for (let c = 0; open.size === 1 || c !== 0;) {
    const next = R.clusters[c][C.items].find((it) => it < 0 && R.clusters[-it - 1][C.changed]);
    if (next === undefined || R.clusters[-next - 1][C.items].length > META.openBudget) break;
    c = -next - 1;
    open.add(c);
  }
}
function showRank(i) {
  R = META.ranks[i];
  open = new Set([0]);
  selected = -1;
  index = null;
  lastQuery = '';
  panel.innerHTML = '<p class="gv-dim">Click a cluster to open it, an op for its details. ' +
      (META.diff ? 'Clusters with changes are amber and start open; changed ops are coloured.' : '') + '</p>';
  if (META.diff) openChanged();
  render();
  fit();
}

// ---- input --------------------------------------------------------------------------------------
let drag = null, dragged = false;
svg.addEventListener('mousedown', (e) => { drag = {x: e.clientX, y: e.clientY, vx: view.x, vy: view.y}; dragged = false; });
window.addEventListener('mousemove', (e) => {
  if (!drag) return;
  const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
  if (Math.abs(dx) + Math.abs(dy) > 3) dragged = true;
  view.x = drag.vx + dx;
  view.y = drag.vy + dy;
  applyView();
});
window.addEventListener('mouseup', () => { drag = null; });
svg.addEventListener('click', (e) => {
  if (dragged) { dragged = false; return; }
  const op = e.target.closest('[data-op]'), cl = e.target.closest('[data-cluster]');
  if (op) showOp(+op.dataset.op);
  // A closed box opens from anywhere on it; an open one closes from its header only, so that a
  // click on empty space inside it does nothing.
  else if (cl && (cl.dataset.open === '0' || e.target.closest('.gv-header, .gv-header-t'))) toggle(+cl.dataset.cluster);
});
function zoomAt(f, px, py) {
  const k = Math.min(8, Math.max(0.02, view.k * f));
  view.x = px - ((px - view.x) * k) / view.k;
  view.y = py - ((py - view.y) * k) / view.k;
  view.k = k;
  applyView();
}
svg.addEventListener('wheel', (e) => {
  e.preventDefault();
  const r = svg.getBoundingClientRect();
  zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
}, {passive: false});
document.addEventListener('keydown', (e) => {
  if (e.target.closest && e.target.closest('input, select, textarea')) return;
  const r = svg.getBoundingClientRect(), step = 80;
  const keys = {ArrowLeft: () => (view.x += step), ArrowRight: () => (view.x -= step), ArrowUp: () => (view.y += step), ArrowDown: () => (view.y -= step),
    '+': () => zoomAt(1.25, r.width / 2, r.height / 2), '=': () => zoomAt(1.25, r.width / 2, r.height / 2),
    '-': () => zoomAt(0.8, r.width / 2, r.height / 2), '0': fit};
  if (!keys[e.key]) return;
  e.preventDefault();
  keys[e.key]();
  applyView();
});
panel.addEventListener('click', (e) => {
  const a = e.target.closest('[data-goto]');
  if (!a) return;
  e.preventDefault();
  reveal(+a.dataset.goto);
});
searchBox.addEventListener('keydown', (e) => { if (e.key === 'Enter') search(searchBox.value); });
document.getElementById('gv-fit').addEventListener('click', fit);
document.getElementById('gv-collapse').addEventListener('click', () => { open = new Set([0]); render(); fit(); });
META.jobRanks.forEach((r) => {
  const i = META.ranks.findIndex((x) => x.rank === r);
  const o = document.createElement('option');
  o.value = i;
  o.textContent = 'rank ' + r + (i < 0 ? ' (not embedded)' : '');
  if (i < 0) o.title = 'run sp-opt with --rank ' + r + ' to draw it';
  o.disabled = i < 0;
  rankPicker.appendChild(o);
});
rankPicker.addEventListener('change', () => showRank(+rankPicker.value));

// ---- start: the first embedded rank, then what the URL's #hash asks for ------------------------
// #rank=R, #expand=NAME[,NAME] (a cluster name or path), #search=TEXT, #zoom=K, and #click=NAME,
// which dispatches a real click event on that collapsed cluster (the browser test uses it).
rankPicker.value = 0;
showRank(0);
const byName = (name) => { for (let c = 1; c < R.clusters.length; ++c) if (R.clusters[c][C.name] === name || clusterPath(c) === name) return c; return -1; };
for (const part of decodeURIComponent(location.hash.slice(1)).split('&')) {
  const [key, value] = [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)];
  if (key === 'rank') {
    const i = META.ranks.findIndex((x) => String(x.rank) === value);
    if (i >= 0) { rankPicker.value = i; showRank(i); }
  } else if (key === 'expand') {
    for (const n of value.split(',')) { const c = byName(n); if (c > 0) { for (let x = c; x > 0; x = R.clusters[x][C.parent]) open.add(x); } }
    render();
  } else if (key === 'click') {
    const c = byName(value), box = c > 0 && placed.get('c' + c);
    if (box) box.el.querySelector(open.has(c) ? '.gv-header' : 'rect').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  } else if (key === 'zoom') {
    zoomAt(+value / view.k, 20, 20);
  } else if (key === 'search') {
    search(value);
  }
}
document.body.dataset.readyMs = performance.now().toFixed(0);
document.body.dataset.ready = 'ready';
})();
)JS";

}  // namespace spopt
