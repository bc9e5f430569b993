// The viewer page: fetches a session, hands its bytes to the wasm module built from viewer/
// (which runs prof's own aggregation), and wires the views together. Every number shown comes
// from the wasm module; this file only draws and handles input.

import init, { Profile, profVersion } from "./pkg/prof_viewer.js";
import { FlameGraph } from "./flame.js";
import { TopTable } from "./table.js";
import { renderBreadcrumbs, renderFiles, renderMeta, renderThreads } from "./header.js";
import { escapeHtml, formatPercent, formatWeight } from "./format.js";

const TOP_ROWS = 50;
const $ = (id) => document.getElementById(id);

const state = {
  files: [],
  profile: null,
  meta: null,
  names: [],
  zoom: null, // node id of the zoomed frame, null for the root
  searchMask: null,
  selected: null, // function id chosen in the table
  layout: null,
};

const flame = new FlameGraph($("flame"), {
  onHover: showTooltip,
  onClick: (i) => {
    // A merged sliver stands for several frames: there is nothing single to zoom into.
    if (state.layout.func[i] !== state.layout.merged) zoomTo(state.layout.node[i]);
  },
  onResize: () => state.profile && renderFlame(),
});
const table = new TopTable($("top-table"), {
  onSort: () => renderTable(),
  onSelect: (func) => {
    state.selected = func;
    applyHighlight();
  },
});

/** Shows an error instead of the views: never a blank page. */
function showError(title, error) {
  const message = error instanceof Error ? error.message : String(error);
  $("error").innerHTML = `<h2>${escapeHtml(title)}</h2>${escapeHtml(message)}`;
  $("error").hidden = false;
  $("tooltip").hidden = true;
  document.body.dataset.state = "error";
}

window.addEventListener("error", (e) => {
  // Browsers report a benign ResizeObserver notice through the error event: not a failure.
  if (String(e.message).startsWith("ResizeObserver loop")) return;
  showError("The viewer failed", e.error ?? e.message);
});
window.addEventListener("unhandledrejection", (e) => showError("The viewer failed", e.reason));

async function start() {
  try {
    // Fetch the list while the wasm module compiles.
    const list = fetch("sessions.json");
    await init({ module_or_path: new URL("./pkg/prof_viewer_bg.wasm", import.meta.url) });
    performance.mark("prof-wasm-ready");
    $("version").textContent = `prof v${profVersion()}`;
    const response = await list;
    if (!response.ok) throw new Error(`listing the profiles failed: HTTP ${response.status}`);
    state.files = await response.json();
    if (state.files.length === 0) throw new Error("no profile was given to prof serve");
    renderFiles($("file"), state.files);
    $("file").addEventListener("change", (e) => loadFile(Number(e.target.value)));
    await loadFile(0);
  } catch (e) {
    showError("The viewer could not start", e);
  }
}

async function loadFile(index) {
  const file = state.files[index];
  document.body.dataset.state = "loading";
  $("error").hidden = true;
  state.profile?.free();
  state.profile = null;
  try {
    const response = await fetch(file.url);
    // 422: the file could not be loaded; the body is the one line `prof report` would print.
    if (response.status === 422) throw new Error(await response.text());
    if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
    const bytes = new Uint8Array(await response.arrayBuffer());
    performance.mark("prof-fetched");
    state.profile = Profile.load(bytes);
    performance.mark("prof-parsed");
  } catch (e) {
    showError(`Cannot show ${file.name}`, e);
    return;
  }
  const p = state.profile;
  state.meta = JSON.parse(p.metaJson());
  state.names = JSON.parse(p.functionNamesJson());
  renderMeta($("meta"), state.meta);
  renderThreads($("thread"), JSON.parse(p.threadsJson()), state.meta.samples);
  state.zoom = null;
  state.selected = null;
  table.select(null);
  document.title = `prof: ${file.name}`;
  refresh();
  runSearch();
  document.body.dataset.state = "ready";
  if (performance.getEntriesByName("prof-first-paint").length === 0) {
    requestAnimationFrame(() => performance.mark("prof-first-paint"));
  }
}

/** Recomputes the views after the thread changed. */
function refresh() {
  renderTable();
  renderFlame();
}

function renderTable() {
  const rows = JSON.parse(state.profile.topJson(TOP_ROWS, table.sortBy));
  table.setRows(rows);
}

function renderFlame() {
  const p = state.profile;
  const width = Math.max(1, $("flame").clientWidth);
  const layout = p.layout(state.zoom ?? p.rootNode(), width);
  state.layout = {
    count: layout.count,
    maxDepth: layout.maxDepth,
    merged: layout.merged,
    x: layout.x(),
    width: layout.width(),
    depth: layout.depth(),
    func: layout.func(),
    node: layout.node(),
    weight: layout.weight(),
    mergedCount: layout.mergedCount(),
    names: state.names,
  };
  layout.free();
  flame.setLayout(state.layout, width);
  renderBreadcrumbs($("breadcrumbs"), JSON.parse(p.pathJson(state.zoom ?? p.rootNode())), zoomTo);
}

function zoomTo(node) {
  state.zoom = node === state.profile.rootNode() ? null : node;
  renderFlame();
}

function applyHighlight() {
  let mask = state.searchMask;
  if (state.selected !== null) {
    mask = new Uint8Array(state.names.length);
    mask[state.selected] = 1;
  }
  flame.setHighlight(mask);
}

function runSearch() {
  const input = $("search");
  const pattern = input.value;
  input.classList.remove("invalid");
  if (!pattern) {
    state.searchMask = null;
    $("search-result").textContent = "";
    applyHighlight();
    return;
  }
  try {
    const result = state.profile.search(pattern);
    state.searchMask = result.mask();
    const matched = formatWeight(result.matchedWeight, state.meta.unit);
    $("search-result").textContent = `matched ${formatPercent(result.fraction)} (${matched})`;
    result.free();
  } catch (e) {
    input.classList.add("invalid");
    state.searchMask = null;
    $("search-result").textContent = e instanceof Error ? e.message : String(e);
  }
  applyHighlight();
}

function showTooltip(index, event) {
  const tip = $("tooltip");
  if (index < 0 || !event) {
    tip.hidden = true;
    return;
  }
  const unit = state.meta.unit;
  if (state.layout.func[index] === state.layout.merged) {
    const whole = JSON.parse(state.profile.nodeJson(state.profile.rootNode())).total;
    const weight = state.layout.weight[index];
    tip.innerHTML = `<div class="name">${state.layout.mergedCount[index]} frames, each narrower than a pixel</div>
<table><tr><td>Total</td><td>${formatWeight(weight, unit)}</td><td>${formatPercent(whole ? weight / whole : 0)}</td></tr></table>`;
    placeTooltip(tip, event);
    return;
  }
  const info = JSON.parse(state.profile.nodeJson(state.layout.node[index]));
  tip.innerHTML = `<div class="name">${escapeHtml(info.name)}</div>
${info.location ? `<div class="loc">${escapeHtml(info.location)}</div>` : ""}
<table>
<tr><td>Self</td><td>${formatWeight(info.self, unit)}</td><td>${formatPercent(info.selfFraction)}</td></tr>
<tr><td>Total</td><td>${formatWeight(info.total, unit)}</td><td>${formatPercent(info.totalFraction)}</td></tr>
</table>`;
  placeTooltip(tip, event);
}

function placeTooltip(tip, event) {
  tip.hidden = false;
  const pad = 14;
  const x = Math.min(event.clientX + pad, window.innerWidth - tip.offsetWidth - 4);
  const y = event.clientY + pad + tip.offsetHeight > window.innerHeight
    ? event.clientY - tip.offsetHeight - pad
    : event.clientY + pad;
  tip.style.left = `${Math.max(4, x)}px`;
  tip.style.top = `${Math.max(4, y)}px`;
}

$("thread").addEventListener("change", (e) => {
  state.profile.setThread(Number(e.target.value));
  state.zoom = null;
  refresh();
  runSearch();
});
$("search").addEventListener("input", runSearch);
$("icicle").addEventListener("change", (e) => flame.setIcicle(e.target.checked));
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || !state.profile) return;
  state.selected = null;
  table.select(null);
  applyHighlight();
  zoomTo(state.profile.rootNode());
});
// For the browser tests and for debugging: the state of the page and the flame graph.
window.profViewer = {
  state,
  flame,
  zoomTo,
  /** Where the frames of function `name` are drawn, relative to the canvas. */
  framesNamed(name) {
    const l = state.layout;
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (l.names[l.func[i]] === name) out.push({ index: i, ...flame.frameRect(i) });
    }
    return out;
  },
};

start();
