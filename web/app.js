// The viewer page: wires the state (state.js, held in the URL fragment), the back end (a Web
// Worker running prof's own aggregation compiled to wasm: backend.js, worker.js) and the views.
// Every number and text shown comes from the wasm module; this file only draws and handles
// input.

import { Backend } from "./backend.js";
import { FlameGraph } from "./flame.js";
import { TopTable } from "./table.js";
import { clearMeta, renderBreadcrumbs, renderFiles, renderMeta, renderThreads } from "./header.js";
import { escapeHtml } from "./format.js";
import { State } from "./state.js";

const TOP_ROWS = 50;
const $ = (id) => document.getElementById(id);

const state = new State();

/** What is loaded: the file list, and the profile's backend and tables. */
const page = {
  files: [],
  backend: null,
  loadedFile: null, // index of the file the backend holds
  meta: null,
  names: [],
  threads: [],
  layout: null,
  searchMask: null,
  renders: 0, // bumps on every render, so answers to older questions are dropped
  drawn: Promise.resolve(), // the newest flame graph draw
};

const flame = new FlameGraph($("flame"), {
  onHover: showTooltip,
  // A merged sliver's node is the heaviest of the frames it stands for (chosen by the wasm
  // module), so clicking it zooms into that one.
  onClick: async (i) => {
    const zoom = await ask("namePath", { node: page.layout.node[i] });
    if (zoom) state.update({ zoom });
  },
  onResize: () => page.meta && renderFlame(),
});
const table = new TopTable($("top-table"), {
  onSort: () => renderTable(),
  onSelect: (func) => state.update({ selected: func === null ? null : page.names[func] }),
});

/** Asks the current backend; `null` when the question was overtaken by a newer file. */
async function ask(method, args) {
  const backend = page.backend;
  try {
    return await backend.call(method, args);
  } catch (e) {
    if (backend !== page.backend || e.message === "superseded") return null;
    throw e;
  }
}

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
    const response = await fetch("sessions.json");
    if (!response.ok) throw new Error(`listing the profiles failed: HTTP ${response.status}`);
    page.files = await response.json();
    if (page.files.length === 0) throw new Error("no profile was given to prof serve");
    renderFiles($("file"), page.files);
    $("file").addEventListener("change", (e) =>
      state.update({ file: Number(e.target.value), zoom: [], selected: null, threads: null }),
    );
    state.listen(onStateChange);
    await loadFile();
  } catch (e) {
    showError("The viewer could not start", e);
  }
}

/** Forgets the shown profile and empties every view of it. */
function dropProfile() {
  page.backend?.end();
  page.backend = null;
  page.loadedFile = null;
  page.meta = null;
  page.layout = null;
  page.searchMask = null;
  clearMeta($("meta"), $("threads"));
  table.setRows([]);
  flame.setLayout(null, 0, false);
  $("breadcrumbs").replaceChildren();
  $("search-result").textContent = "";
}

/**
 * Loads the file the state names, in a new worker. A newer load ends this one's worker, which
 * cancels its fetch and frees whatever it had read.
 */
async function loadFile() {
  const index = Math.min(state.current.file, page.files.length - 1);
  const file = page.files[index];
  dropProfile();
  const backend = new Backend((text) => {
    if (page.backend === backend) $("progress").textContent = text;
  });
  page.backend = backend;
  page.loadedFile = index;
  document.body.dataset.state = "loading";
  $("error").hidden = true;
  $("file").value = String(index);
  document.title = `prof: ${file.name}`;
  $("progress").textContent = "";
  let loaded;
  try {
    loaded = await backend.call("load", { url: new URL(file.url, location.href).href, size: file.size });
  } catch (e) {
    if (page.backend !== backend) return;
    document.title = `prof: ${file.name} (error)`;
    showError(`Cannot show ${file.name}`, e);
    return;
  }
  if (page.backend !== backend) return;
  performance.mark("prof-parsed");
  page.meta = loaded.meta;
  page.names = loaded.names;
  page.threads = loaded.threads;
  $("version").textContent = `prof v${loaded.version}`;
  renderMeta($("meta"), page.meta);
  await applyThreads();
  $("search").value = state.current.search;
  $("icicle").checked = state.current.icicle;
  flame.setIcicle(state.current.icicle);
  await Promise.all([renderTable(), runSearch()]);
  document.body.dataset.state = "ready";
  $("progress").textContent = "";
  if (performance.getEntriesByName("prof-first-paint").length === 0) {
    requestAnimationFrame(() => performance.mark("prof-first-paint"));
  }
}

/** Sends the thread choice to the worker and redraws the selector. */
async function applyThreads() {
  const chosen = state.current.threads;
  const valid = chosen?.filter((t) => t >= 0 && t < page.threads.length) ?? null;
  const answer = await ask("setView", { threads: valid });
  if (!answer) return;
  renderThreads($("threads"), page.threads, valid, answer.label, (threads) =>
    state.update({ threads, zoom: [] }),
  );
}

async function onStateChange(current, changed) {
  if (changed.has("file") && current.file !== page.loadedFile) {
    await loadFile();
    return;
  }
  if (!page.meta) return;
  if (changed.has("threads")) {
    await applyThreads();
    await renderTable();
  }
  if (changed.has("icicle")) {
    $("icicle").checked = current.icicle;
    flame.setIcicle(current.icicle);
  }
  if (changed.has("search") && $("search").value !== current.search) $("search").value = current.search;
  if (changed.has("threads") || changed.has("search")) await runSearch();
  else if (changed.has("selected")) await applyHighlight();
  else if (changed.has("zoom")) await renderFlame();
}

async function renderTable() {
  const rows = await ask("top", { n: TOP_ROWS, sort: table.sortBy });
  if (rows) table.setRows(rows);
  const selected = state.current.selected;
  table.select(selected === null ? null : page.names.indexOf(selected));
}

/** Lays out and draws the flame graph; `page.drawn` settles when the newest draw is done. */
function renderFlame() {
  page.drawn = drawFlame();
  return page.drawn;
}

async function drawFlame() {
  const render = ++page.renders;
  const width = Math.max(1, $("flame").clientWidth);
  const layout = await ask("layout", { zoomPath: state.current.zoom, width });
  if (!layout || render !== page.renders) return;
  layout.names = page.names;
  page.layout = layout;
  const highlighting = page.searchMask !== null || state.current.selected !== null;
  flame.setLayout(layout, width, highlighting);
  renderBreadcrumbs($("breadcrumbs"), layout.path, (i) =>
    state.update({ zoom: layout.path.slice(1, i + 1).map((c) => c.name) }),
  );
}

/** Hands what to highlight (the selected row's function, else the search's) to the wasm
 * module, which marks it in the layout, merged slivers included, and redraws. */
async function applyHighlight() {
  let mask = page.searchMask;
  const selected = state.current.selected;
  const func = selected === null ? -1 : page.names.indexOf(selected);
  if (func >= 0) {
    mask = new Uint8Array(page.names.length);
    mask[func] = 1;
  }
  table.select(func >= 0 ? func : null);
  await ask("setHighlight", { mask });
  await renderFlame();
}

async function runSearch() {
  const input = $("search");
  const pattern = state.current.search;
  input.classList.remove("invalid");
  page.searchMask = null;
  $("search-result").textContent = "";
  if (pattern) {
    try {
      const result = await ask("search", { pattern });
      if (!result) return;
      page.searchMask = result.mask;
      $("search-result").textContent = result.text;
    } catch (e) {
      input.classList.add("invalid");
      $("search-result").textContent = e instanceof Error ? e.message : String(e);
    }
  }
  await applyHighlight();
}

async function showTooltip(index, event) {
  const tip = $("tooltip");
  if (index < 0 || !event) {
    tip.hidden = true;
    return;
  }
  const layout = page.layout;
  if (layout.func[index] === layout.merged) {
    const texts = await ask("weightTexts", { weight: layout.weight[index] });
    if (!texts || page.layout !== layout) return;
    tip.innerHTML = `<div class="name">${layout.mergedCount[index]} frames, each narrower than a pixel (click to zoom into the heaviest)</div>
<table><tr><td>Total</td><td>${escapeHtml(texts.weight)}</td><td>${escapeHtml(texts.share)}</td></tr></table>`;
  } else {
    const info = await ask("node", { node: layout.node[index] });
    if (!info || page.layout !== layout) return;
    tip.innerHTML = `<div class="name">${escapeHtml(info.name)}</div>
${info.location ? `<div class="loc">${escapeHtml(info.location)}</div>` : ""}
<table>
<tr><td>Self</td><td>${escapeHtml(info.selfText)}</td><td>${escapeHtml(info.selfPct)}</td></tr>
<tr><td>Total</td><td>${escapeHtml(info.totalText)}</td><td>${escapeHtml(info.totalPct)}</td></tr>
</table>`;
  }
  if (flame.hovered !== index) return;
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

$("search").addEventListener("input", (e) => state.update({ search: e.target.value }, { replace: true }));
$("search").addEventListener("keydown", (e) => {
  // Escape in the search box clears the search, and only the search.
  if (e.key !== "Escape") return;
  e.preventDefault();
  e.stopPropagation();
  e.target.value = "";
  state.update({ search: "" });
});
$("icicle").addEventListener("change", (e) => state.update({ icicle: e.target.checked }));
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || !page.meta) return;
  // Escape clears the innermost state: the selection first, then the zoom.
  if (state.current.selected !== null) state.update({ selected: null });
  else if (state.current.zoom.length) state.update({ zoom: [] });
});

// For the browser tests and for debugging: the state of the page and the flame graph.
window.profViewer = {
  page,
  state,
  flame,
  /** Zooms to the frame at `path` (function names from the root); resolves once drawn. */
  async zoomTo(path) {
    state.update({ zoom: path });
    await page.drawn;
  },
  /** Where the frames of function `name` are drawn, relative to the canvas. */
  framesNamed(name) {
    const l = page.layout;
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (l.names[l.func[i]] === name) out.push({ index: i, ...flame.frameRect(i) });
    }
    return out;
  },
};

start();
