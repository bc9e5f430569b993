// The viewer page: fetches a session, hands its bytes to the wasm module built from viewer/
// (which runs prof's own aggregation), and wires the views together. Every number shown comes
// from the wasm module; this file only draws and handles input.

import init, { Profile, profVersion } from "./pkg/prof_viewer.js";
import { FlameGraph } from "./flame.js";
import { TopTable } from "./table.js";
import { clearMeta, renderBreadcrumbs, renderFiles, renderMeta, renderThreads } from "./header.js";
import { escapeHtml } from "./format.js";

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
  load: null, // the load in progress: {generation, controller}
  generation: 0,
};

const flame = new FlameGraph($("flame"), {
  onHover: showTooltip,
  // A merged sliver's node is the heaviest of the frames it stands for (chosen by the wasm
  // module), so clicking it zooms into that one.
  onClick: (i) => zoomTo(state.layout.node[i]),
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

/** Forgets the shown profile (freeing its wasm memory) and empties every view of it. */
function dropProfile() {
  state.profile?.free();
  state.profile = null;
  state.meta = null;
  state.layout = null;
  clearMeta($("meta"), $("thread"));
  table.setRows([]);
  flame.setLayout(null, 0, false);
  $("breadcrumbs").replaceChildren();
  $("search-result").textContent = "";
}

/**
 * Shows file `index`. A newer call supersedes an older one still loading: the older one's fetch
 * is aborted, and whatever it already read is freed instead of shown.
 */
async function loadFile(index) {
  const file = state.files[index];
  state.load?.controller.abort();
  const load = { generation: ++state.generation, controller: new AbortController() };
  state.load = load;
  const current = () => state.load === load;
  document.body.dataset.state = "loading";
  $("error").hidden = true;
  $("file").value = String(index);
  document.title = `prof: ${file.name}`;
  dropProfile();
  let profile;
  try {
    const response = await fetch(file.url, { signal: load.controller.signal });
    if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (!current()) return;
    performance.mark("prof-fetched");
    profile = Profile.load(bytes);
    performance.mark("prof-parsed");
  } catch (e) {
    if (!current()) return;
    state.load = null;
    document.title = `prof: ${file.name} (error)`;
    showError(`Cannot show ${file.name}`, e);
    return;
  }
  if (!current()) {
    profile.free();
    return;
  }
  state.load = null;
  state.profile = profile;
  const p = profile;
  state.meta = JSON.parse(p.metaJson());
  state.names = JSON.parse(p.functionNamesJson());
  renderMeta($("meta"), state.meta);
  renderThreads($("thread"), JSON.parse(p.threadsJson()), p.allThreadsLabel());
  state.zoom = null;
  state.selected = null;
  table.select(null);
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
    highlight: layout.highlight(),
    weight: layout.weight(),
    mergedCount: layout.mergedCount(),
    names: state.names,
  };
  layout.free();
  flame.setLayout(state.layout, width, state.searchMask !== null || state.selected !== null);
  renderBreadcrumbs($("breadcrumbs"), JSON.parse(p.pathJson(state.zoom ?? p.rootNode())), zoomTo);
}

function zoomTo(node) {
  state.zoom = node === state.profile.rootNode() ? null : node;
  renderFlame();
}

/** Hands what to highlight (the selected row's function, else the search's) to the wasm
 * module, which marks it in the layout, merged slivers included, and redraws. */
function applyHighlight() {
  let mask = state.searchMask;
  if (state.selected !== null) {
    mask = new Uint8Array(state.names.length);
    mask[state.selected] = 1;
  }
  if (mask) state.profile.setHighlight(mask);
  else state.profile.clearHighlight();
  renderFlame();
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
    $("search-result").textContent = result.text;
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
  const p = state.profile;
  if (state.layout.func[index] === state.layout.merged) {
    const weight = state.layout.weight[index];
    tip.innerHTML = `<div class="name">${state.layout.mergedCount[index]} frames, each narrower than a pixel (click to zoom into the heaviest)</div>
<table><tr><td>Total</td><td>${escapeHtml(p.weightText(weight))}</td><td>${escapeHtml(p.shareText(weight))}</td></tr></table>`;
    placeTooltip(tip, event);
    return;
  }
  const info = JSON.parse(p.nodeJson(state.layout.node[index]));
  tip.innerHTML = `<div class="name">${escapeHtml(info.name)}</div>
${info.location ? `<div class="loc">${escapeHtml(info.location)}</div>` : ""}
<table>
<tr><td>Self</td><td>${escapeHtml(info.selfText)}</td><td>${escapeHtml(info.selfPct)}</td></tr>
<tr><td>Total</td><td>${escapeHtml(info.totalText)}</td><td>${escapeHtml(info.totalPct)}</td></tr>
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
  if (!state.profile) return;
  state.profile.setThread(Number(e.target.value));
  state.zoom = null;
  refresh();
  runSearch();
});
$("search").addEventListener("input", () => state.profile && runSearch());
$("search").addEventListener("keydown", (e) => {
  // Escape in the search box clears the search, and only the search.
  if (e.key !== "Escape") return;
  e.preventDefault();
  e.stopPropagation();
  e.target.value = "";
  if (state.profile) runSearch();
});
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
