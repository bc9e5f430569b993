// The viewer page: wires the state (state.js, held in the URL fragment), the back end (a Web
// Worker running prof's own aggregation compiled to wasm: backend.js, worker.js) and the views
// (views/*.js, one module per view, shown as tabs). Views read the state and ask the worker;
// they never talk to each other. Every number and text shown comes from the wasm module; this
// file only draws and handles input.

import { Backend } from "./backend.js";
import {
  clearMeta,
  renderFiles,
  renderMeta,
  renderSampleTypes,
  renderThreadStates,
  renderThreads,
} from "./header.js";
import { escapeHtml } from "./html-and-color.js";
import { Splitter } from "./splitter.js";
import { State, namesTransforms } from "./state.js";
import { initTheme } from "./theme.js";
import { TransformBar, TransformMenu } from "./transforms.js";
import { FlameView } from "./views/flame-graph.js";
import { CallTreeView } from "./views/call-tree.js";
import { StackChartView } from "./views/stack-chart.js";
import { SandwichView } from "./views/sandwich.js";
import { SourceView } from "./views/source.js";
import { AssemblyView } from "./views/assembly.js";
import { TableView } from "./views/top-functions.js";
import { ScopesView } from "./views/scopes.js";
import { DiffView } from "./views/diff.js";
import { Timeline } from "./views/timeline.js";

/** The views, in tab order. A view class has `id`, `label`, and instances `render(changed)`
 * (`changed`: the state keys that changed, and "samples" when every number did) and `clear()`;
 * its element is the `section.view[data-view=id]` in index.html. */
const VIEWS = [FlameView, CallTreeView, SandwichView, TableView, ScopesView, StackChartView, SourceView, AssemblyView, DiffView];

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
  processes: [],
  searchMask: null,
  highlighting: false, // whether a search or selection highlights functions
};

/** Asks the current backend; `null` when the question was overtaken by a newer file. */
async function ask(method, args) {
  const backend = page.backend;
  if (!backend) return null;
  try {
    return await backend.call(method, args);
  } catch (e) {
    if (backend !== page.backend || e.message === "superseded") return null;
    throw e;
  }
}

/** The shared tooltip: views hand it HTML built from the worker's texts. */
const tooltip = {
  hide() {
    $("tooltip").hidden = true;
  },
  show(html, event) {
    const tip = $("tooltip");
    tip.innerHTML = html;
    tip.hidden = false;
    const pad = 14;
    const x = Math.min(event.clientX + pad, window.innerWidth - tip.offsetWidth - 4);
    const y = event.clientY + pad + tip.offsetHeight > window.innerHeight
      ? event.clientY - tip.offsetHeight - pad
      : event.clientY + pad;
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${Math.max(4, y)}px`;
  },
  /** A frame's place (file:line) and module (the file name of the binary or library its code
   * is in), each when known (`info`: a worker's answer about the frame). */
  place(info) {
    return `${info.location ? `<div class="loc">${escapeHtml(info.location)}</div>` : ""}
${info.module ? `<div class="module">Module <span class="file">${escapeHtml(info.module)}</span></div>` : ""}`;
  },
  /** A call tree node's name, place, module, self and total (`info` from the worker's `node`). */
  node(info) {
    return `<div class="name">${escapeHtml(info.name)}</div>
${tooltip.place(info)}
<table>
<tr><td>Self</td><td>${escapeHtml(info.selfText)}</td><td>${escapeHtml(info.selfPct)}</td></tr>
<tr><td>Total</td><td>${escapeHtml(info.totalText)}</td><td>${escapeHtml(info.totalPct)}</td></tr>
</table>`;
  },
  /** A merged block of `count` sub-pixel frames (`texts` from the worker's `weightTexts`). */
  merged(count, texts) {
    return `<div class="name">${count} frames, each narrower than a pixel (click to zoom into the heaviest)</div>
<table><tr><td>Total</td><td>${escapeHtml(texts.weight)}</td><td>${escapeHtml(texts.share)}</td></tr></table>`;
  },
};

/** The transform stack's bar and the menu of transforms for a frame (transforms.js). */
const transformBar = new TransformBar($("transforms"), { state, ask });
const transformMenu = new TransformMenu({ state, ask });

/**
 * The key that `render(changed)` finds in its changed set when every number may have changed (a
 * profile loaded, another sample type or thread state shown): not a state key; views redraw
 * whole on it.
 */
const SAMPLES = "samples";

/** What views get: the state, the loaded profile's tables, the worker, the tooltip and the
 * transform menu (`transformMenu.open(x, y, {name, path, module})`). */
const ctx = { state, page, ask, tooltip, transformMenu };

/** The timeline above the views, shown on every tab. */
const timeline = new Timeline($("timeline"), ctx);
/** The timeline's height: its tracks scroll within what the splitter under it leaves them, at
 * least a track's worth, at most all of them (a small window gives the views the rest). */
const tracks = $("timeline").querySelector(".timeline-tracks");
const TRACKS_MIN = 24;
new Splitter($("timeline-splitter"), {
  key: "prof.timelineHeight",
  vertical: false,
  sign: 1,
  size: () => tracks.getBoundingClientRect().height,
  limits: () => ({ min: TRACKS_MIN, max: Math.max(TRACKS_MIN, tracks.scrollHeight) }),
  resize: (height) => {
    tracks.style.maxHeight = `${height}px`;
  },
});

const views = new Map();
for (const View of VIEWS) {
  const element = document.querySelector(`section.view[data-view="${View.id}"]`);
  views.set(View.id, new View(element, ctx));
  const tab = document.createElement("button");
  tab.type = "button";
  tab.role = "tab";
  tab.dataset.view = View.id;
  tab.textContent = View.label;
  tab.addEventListener("click", () => state.update({ view: View.id }));
  $("tabs").append(tab);
}

/** Views the page cannot offer: the Diff view in a single-file page of one profile, which has
 * nothing to compare it with; the Stack chart of a profile whose samples carry no times (pprof,
 * folded stacks: the timeline's place says so once), the Scopes view of one without scopes
 * or tasks, and the Assembly view of one prof did not record with its binaries (imports). A URL
 * naming one of them shows the first view. */
const unavailable = new Set();

/** Offers view `id` as a tab, or not. */
function offer(id, offered) {
  if (offered) unavailable.delete(id);
  else unavailable.add(id);
  $("tabs").querySelector(`[data-view="${id}"]`).hidden = !offered;
}

/** Offers the Diff view unless the page is a single file of one profile (nothing to compare
 * it with, until the user opens another). */
function offerDiff() {
  offer(DiffView.id, !(Boolean(window.profStandalone) && page.files.length < 2));
}

/** Offers the views that have something to show of the profile just loaded: the Stack chart
 * when its samples carry times, the Scopes view when it has scopes or tasks, the Assembly view
 * when prof recorded it with its binaries' mappings and its frames' addresses. */
function offerProfileViews(loaded) {
  offer(StackChartView.id, loaded.meta.timed);
  offer(ScopesView.id, loaded.hasScopes || loaded.hasTasks);
  offer(AssemblyView.id, loaded.hasCode);
}

/** Each file's transforms while another is shown: index → `{transforms, defaultsOff}`. */
const fileTransforms = new Map();

/** The state change that shows file `index`: what was chosen in the last file (zoom, selection,
 * threads, range, windows, scope, task, grouping) does not carry over to another profile, and
 * each file keeps its own transforms (a file shown for the first time starts with its
 * defaults). */
function switchTo(index) {
  const { file, transforms, defaultsOff } = state.current;
  fileTransforms.set(file, { transforms, defaultsOff });
  const kept = fileTransforms.get(index) ?? { transforms: [], defaultsOff: false };
  return {
    file: index,
    transforms: kept.transforms,
    defaultsOff: kept.defaultsOff,
    zoom: [],
    flameWindow: null,
    selected: null,
    node: [],
    threads: null,
    range: null,
    window: null,
    scope: null,
    task: null,
    groupBy: null,
    diffZoom: [],
    diffWindow: null,
  };
}

/** The view the state names (the first one when it names none, or one not offered). */
function activeView() {
  const named = unavailable.has(state.current.view) ? null : views.get(state.current.view);
  return named ?? views.get(VIEWS[0].id);
}

function showActiveView() {
  const active = activeView();
  for (const [id, view] of views) view.element.hidden = view !== active;
  for (const tab of $("tabs").children) {
    tab.setAttribute("aria-selected", String(tab.dataset.view === active.constructor.id));
  }
}

/** Shows an error instead of the views: never a blank page. */
function showError(title, error) {
  const message = error instanceof Error ? error.message : String(error);
  $("error").innerHTML = `<h2>${escapeHtml(title)}</h2>${escapeHtml(message)}`;
  $("error").hidden = false;
  // The last progress text ("… · decoding") is not what happened.
  $("progress").textContent = "";
  tooltip.hide();
  document.body.dataset.state = "error";
}

/** The views' sections and the timeline's: where a view's failure is shown. */
const VIEW_PLACES = "section.view, #timeline";

/** Shows `error` at the top of `place` (a view's section, or the timeline's), which the rest
 * of the page outlives: the other views, the tabs and the toolbar keep working. */
function showViewError(place, error) {
  const message = error instanceof Error ? error.message : String(error);
  let box = place.querySelector(":scope > .view-error");
  if (!box) {
    box = document.createElement("div");
    box.className = "view-error";
    box.setAttribute("role", "alert");
    place.prepend(box);
  }
  const name = place.getAttribute("aria-label") ?? "This view";
  box.innerHTML = `<b>${escapeHtml(name)} failed:</b> ${escapeHtml(message)}`;
  box.hidden = false;
  tooltip.hide();
}

/** Takes away the failure shown in `place`, once it has drawn again. */
function clearViewError(place) {
  const box = place.querySelector(":scope > .view-error");
  if (box) box.hidden = true;
}

/** Brings `view` (a view, or the timeline) up to date with `changed`; a failure shows in it. */
async function renderInPlace(view, changed) {
  try {
    await view.render(changed);
    clearViewError(view.element);
  } catch (e) {
    showViewError(view.element, e);
  }
}

/** The view or timeline section of the last input (pointer, wheel, key): an error raised while
 * a view handles its input is that view's. Null when it was elsewhere (the active view's). */
let inputPlace = null;
for (const type of ["pointerdown", "pointermove", "pointerup", "mousedown", "mousemove", "mouseup", "wheel", "click", "dblclick", "contextmenu", "keydown"]) {
  document.addEventListener(
    type,
    (e) => {
      inputPlace = e.target instanceof Element ? e.target.closest(VIEW_PLACES) : null;
    },
    { capture: true, passive: true },
  );
}

/** An exception no view caught: while a profile is shown, it is the failure of the view the
 * last input went to (the active view's otherwise), shown in that view, never instead of the
 * page; before, the page could not start. */
function uncaught(error) {
  if (!page.meta || document.body.dataset.state !== "ready") {
    showError("The viewer failed", error);
    return;
  }
  const place = inputPlace?.isConnected && !inputPlace.hidden ? inputPlace : activeView().element;
  showViewError(place, error);
}

window.addEventListener("error", (e) => {
  // Browsers report a benign ResizeObserver notice through the error event: not a failure.
  if (String(e.message).startsWith("ResizeObserver loop")) return;
  uncaught(e.error ?? e.message);
});
window.addEventListener("unhandledrejection", (e) => uncaught(e.reason));

/**
 * A backend started with the page, whose worker compiles the wasm module while the page gets
 * the file list: the first load takes it. The served page's was started by boot.js before this
 * module ran, and asked for the first file (`warmLoad`: `{index, id}`); the single-file page's
 * is started here, with the module's bytes from the file.
 */
let warmBackend = null;
let warmLoad = null;
function startWarmBackend() {
  const standalone = window.profStandalone;
  warmBackend = new Backend(undefined, standalone ? undefined : window.profBoot);
  if (!standalone) return;
  standalone
    .wasm()
    .then((bytes) => warmBackend?.call("init", { wasm: bytes }))
    .catch(() => {});
}

async function start() {
  startWarmBackend();
  try {
    if (window.profStandalone) {
      page.files = window.profStandalone.files;
    } else {
      page.files = await window.profBoot.files;
      warmLoad = await window.profBoot.first;
    }
    if (page.files.length === 0) throw new Error("no profile was given to prof serve");
    offerDiff();
    renderFiles($("file"), page.files);
    $("file").addEventListener("change", (e) => state.update(switchTo(Number(e.target.value))));
    state.listen((current, changed) => (page.lastChange = onStateChange(current, changed)));
    showActiveView();
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
  page.searchMask = null;
  page.highlighting = false;
  clearMeta($("meta"), $("threads"));
  transformBar.clear();
  transformMenu.close();
  for (const view of views.values()) view.clear();
  timeline.clear();
  showSearchResult("");
}

/**
 * Loads the file the state names, in a new worker. A newer load ends this one's worker, which
 * cancels its fetch and frees whatever it had read.
 */
async function loadFile() {
  const index = Math.min(state.current.file, page.files.length - 1);
  const file = page.files[index];
  dropProfile();
  // boot.js's load, when it is of this file; when it is not (the fragment changed meanwhile),
  // the warm worker is busy with another file and a fresh one starts.
  const early = warmLoad?.index === index && !file.local ? warmLoad : null;
  if (warmLoad && !early) {
    warmBackend?.end();
    warmBackend = null;
  }
  warmLoad = null;
  const backend = warmBackend ?? new Backend();
  warmBackend = null;
  backend.onProgress = (text) => {
    if (page.backend === backend) $("progress").textContent = text;
  };
  page.backend = backend;
  page.loadedFile = index;
  document.body.dataset.state = "loading";
  $("error").hidden = true;
  $("file").value = String(index);
  document.title = `prof: ${file.name}`;
  // The served page offers the single-file viewer of this profile (the file itself is one; a
  // file opened from this computer is not the server's to build).
  $("download").hidden = Boolean(window.profStandalone) || Boolean(file.local);
  $("download").href = `download/${index}`;
  $("progress").textContent = "";
  let loaded;
  try {
    const standalone = window.profStandalone;
    const wasm = standalone ? await standalone.wasm() : undefined;
    const args = file.local
      ? { file: file.local, wasm }
      : standalone
        ? { bytes: await standalone.session(index), wasm }
        : { url: new URL(file.url, location.href).href, size: file.size };
    loaded = await (early ? backend.answer(early.id) : backend.call("load", args));
  } catch (e) {
    if (page.backend !== backend) return;
    document.title = `prof: ${file.name} (error)`;
    showError(`Cannot show ${file.name}`, e);
    return;
  }
  if (page.backend !== backend) return;
  // The transforms `prof report` applies to this file by default (a wall session's scheduler
  // folded into the blocking call), unless the URL names the transforms or they were removed.
  // Before `page.meta`: the state's listener leaves the view to `applyView` below.
  const defaults = loaded.defaultTransforms ?? [];
  if (defaults.length && !state.current.defaultsOff && !namesTransforms(location.hash)) {
    state.update({ transforms: defaults }, { replace: true });
  }
  // The worker's times, on the page's clock.
  for (const [name, at] of Object.entries(loaded.times ?? {})) {
    performance.mark(`prof-${name}`, { startTime: at - performance.timeOrigin });
  }
  performance.mark("prof-parsed");
  page.meta = loaded.meta;
  offerProfileViews(loaded);
  page.names = loaded.names;
  page.threads = loaded.threads;
  page.processes = loaded.processes;
  renderSampleTypes($("sample-type"), loaded.sampleTypes, state.current.sampleType, (name) =>
    state.update({ sampleType: name === loaded.sampleTypes[0]?.name ? null : name }),
  );
  const groupBy = $("group-by");
  for (const [value, offered] of [["task", loaded.hasTasks], ["scope", loaded.hasScopes]]) {
    const option = groupBy.querySelector(`option[value="${value}"]`);
    option.hidden = !offered;
    option.disabled = !offered;
  }
  groupBy.parentElement.hidden = !loaded.hasTasks && !loaded.hasScopes;
  groupBy.value = state.current.groupBy ?? "";
  groupBy.onchange = () => state.update({ groupBy: groupBy.value || null, zoom: [], node: [] });
  renderThreadStates($("thread-state"), loaded.hasStates, state.current.threadState, (value) =>
    state.update({ threadState: value || null }),
  );
  $("version").textContent = `prof v${loaded.version}`;
  renderMeta($("meta"), page.meta);
  await applyView();
  $("search").value = state.current.search;
  await runSearch();
  const all = new Set([...Object.keys(state.current), SAMPLES]);
  const view = activeView();
  const rendered = Promise.all([renderInPlace(view, all), renderInPlace(timeline, all)]);
  // First paint: the frame after the flame graph is drawn (the table beside it may follow).
  const painted = view.settled?.() ?? rendered;
  painted.then(() => {
    if (performance.getEntriesByName("prof-first-paint").length === 0) {
      requestAnimationFrame(() => performance.mark("prof-first-paint"));
    }
  }, () => {});
  await rendered;
  document.body.dataset.state = "ready";
  $("progress").textContent = "";
}

/** Sends what selects the samples (threads, range, transforms) to the worker and redraws the
 * selector and the transform chips. */
async function applyView() {
  const chosen = state.current.threads;
  const valid = chosen?.filter((t) => t >= 0 && t < page.threads.length) ?? null;
  const { range, transforms, sampleType, threadState, scope, task, groupBy } = state.current;
  const answer = await ask("setView", {
    threads: valid,
    range,
    transforms,
    type: sampleType,
    state: threadState,
    scope,
    task,
    groupBy,
  });
  if (!answer) return;
  // Grouping by task adds root frames: their names come back.
  if (answer.names) page.names = answer.names;
  // The header comes back only when the sample type changed it; the threads' figures (what
  // every view shows of each) each time.
  if (answer.meta) {
    page.meta = answer.meta;
    renderMeta($("meta"), page.meta);
  }
  page.threads = answer.threads;
  transformBar.render(answer.chips, answer.filters);
  renderThreads($("threads"), page.threads, page.processes, valid, answer.label, answer.command, (threads) =>
    state.update({ threads, zoom: [], flameWindow: null }),
  );
}

async function onStateChange(current, changed) {
  if (changed.has("file") && current.file !== page.loadedFile) {
    // A fragment that names another file names the rest of its view too (a pasted link, an
    // edited hash, back or forward): the new file is shown with all of it.
    showActiveView();
    await loadFile();
    return;
  }
  if (changed.has("view")) showActiveView();
  if (!page.meta) return;
  const VIEW_KEYS = ["threads", "range", "transforms", "sampleType", "threadState", "scope", "task", "groupBy"];
  if (VIEW_KEYS.some((k) => changed.has(k))) await applyView();
  // Another sample type, thread state, scope or task changes every number: every view redraws.
  if (["sampleType", "threadState", "scope", "task", "groupBy"].some((k) => changed.has(k))) {
    changed = new Set([...Object.keys(current), SAMPLES]);
    // A tooltip shown now holds the old figures: the view under the pointer shows it again.
    tooltip.hide();
    $("sample-type").value = current.sampleType ?? $("sample-type").options[0]?.value ?? "";
    $("thread-state").value = current.threadState ?? "";
    $("group-by").value = current.groupBy ?? "";
  }
  if (changed.has("search") && $("search").value !== current.search) $("search").value = current.search;
  if ([...VIEW_KEYS, "search"].some((k) => changed.has(k))) await runSearch();
  else if (changed.has("selected")) await applyHighlight();
  // A view shown again may have missed changes made while it was hidden: it redraws whole.
  // The active view asks the worker first: the timeline's question waits behind its own.
  await Promise.all([
    renderInPlace(activeView(), changed.has("view") ? new Set(Object.keys(current)) : changed),
    renderInPlace(timeline, changed),
  ]);
}

/** Hands what to highlight (the selected function, else the search's matches) to the wasm
 * module, which marks it in every layout, merged slivers included. */
async function applyHighlight() {
  let mask = page.searchMask;
  const selected = state.current.selected;
  const func = selected === null ? -1 : page.names.indexOf(selected);
  if (func >= 0) {
    mask = new Uint8Array(page.names.length);
    mask[func] = 1;
  }
  page.highlighting = mask !== null;
  await ask("setHighlight", { mask });
}

/** Says what the search matched (or why it cannot run); its box may cut it: whole on hover. */
function showSearchResult(text) {
  $("search-result").textContent = text;
  $("search-result").title = text;
}

async function runSearch() {
  const input = $("search");
  const pattern = state.current.search;
  input.classList.remove("invalid");
  page.searchMask = null;
  showSearchResult("");
  if (pattern) {
    try {
      const result = await ask("search", { pattern });
      if (result) {
        page.searchMask = result.mask;
        showSearchResult(result.text);
      }
    } catch (e) {
      input.classList.add("invalid");
      showSearchResult(e instanceof Error ? e.message : String(e));
    }
  }
  await applyHighlight();
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
/** Input types whose keys are text (or move a caret): the shortcuts stay out of them. */
const TEXT_INPUTS = new Set(["text", "search", "email", "number", "password", "tel", "url"]);
/** The keys a focused drop-down acts on itself (picking an option); its other keys are the
 * page's shortcuts. */
const SELECT_KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown", "Enter", " "]);

/** Whether key event `e` belongs to the element it is typed into (a text field, or a
 * drop-down's own keys) rather than to the page's shortcuts. A checkbox or button keeps
 * focus after a click, yet takes no keys the shortcuts use. */
function isTyping(e) {
  const target = e.target;
  if (!(target instanceof Element)) return false;
  if (target.closest("textarea, [contenteditable]:not([contenteditable='false'])")) return true;
  if (target instanceof HTMLInputElement) return TEXT_INPUTS.has(target.type);
  if (target instanceof HTMLSelectElement) {
    return SELECT_KEYS.has(e.key) || (e.key.length === 1 && e.key !== "/" && e.key !== "?");
  }
  return false;
}

document.addEventListener("keydown", (e) => {
  if (!page.meta || e.ctrlKey || e.metaKey || e.altKey) return;
  const typing = isTyping(e);
  if (e.key === "Escape") {
    if ($("shortcuts").open) return; // the dialog closes itself
    // An open Threads popover closes first, and Escape does nothing else.
    if ($("threads").open) {
      $("threads").open = false;
      $("threads").querySelector("summary")?.focus();
      return;
    }
    // Escape clears the innermost state: on the Sandwich tab its graphs' pan and wheel zoom,
    // then the selection (and the call tree's selected node), the flame graph's pan and wheel
    // zoom, its zoom, then the time range, then the timeline's zoom.
    const c = state.current;
    if (c.view === "sandwich" && (c.callersWindow || c.calleesWindow)) {
      state.update({ callersWindow: null, calleesWindow: null });
    } else if (c.selected !== null || c.node.length) state.update({ selected: null, node: [] });
    else if (c.flameWindow) state.update({ flameWindow: null });
    else if (c.view === "diff" && c.diffWindow) state.update({ diffWindow: null });
    else if (c.view === "diff" && c.diffZoom.length) state.update({ diffZoom: [] });
    else if (c.zoom.length) state.update({ zoom: [] });
    else if (c.range) state.update({ range: null });
    else if (c.window) state.update({ window: null });
    return;
  }
  if (typing) return;
  if (e.key === "/") {
    e.preventDefault();
    $("search").focus();
    $("search").select();
  } else if (e.key === "?") {
    $("shortcuts").showModal();
  } else if (activeView().onKey?.(e)) {
    e.preventDefault();
  }
});

// For the browser tests, benchmarks and debugging.
window.profViewer = {
  page,
  state,
  views,
  /** The timeline above the views. */
  timeline,
  /** The flame graph's canvas component. */
  get flame() {
    return views.get("flame").flame;
  },
  /** Where the frames of function `name` are drawn in the flame graph, relative to its canvas. */
  framesNamed(name) {
    return views.get("flame").framesNamed(name);
  },
  /** The flame graph's current layout. */
  get layout() {
    return views.get("flame").layout;
  },
  /** Changes the state by `patch`; resolves once the page has caught up and the flame graph is
   * drawn (the benchmark times thread and range changes with it). */
  async update(patch) {
    state.update(patch);
    await page.lastChange;
    await views.get("flame").settled();
  },
  /** Zooms to the frame at `path` (function names from the root); resolves once drawn. */
  async zoomTo(path) {
    state.update({ zoom: path });
    await views.get("flame").settled();
  },
};

$("help").addEventListener("click", () => $("shortcuts").showModal());
// The theme (theme.js): style.css recolours the page; the canvases of the timeline and of the
// view shown draw again (a hidden view draws whole when it is shown).
initTheme($("theme"), () => {
  timeline.draw();
  activeView().redraw?.();
});
// The Threads popover closes when the pointer goes down anywhere else (a range drag on the
// timeline it covers, a view), as a menu does.
document.addEventListener("pointerdown", (e) => {
  const threads = $("threads");
  if (threads.open && !threads.contains(e.target)) threads.open = false;
});

/**
 * Opens `file` (a File from the picker or a drop) as a new entry of the file list and shows it.
 * The worker reads it: it never leaves the page.
 */
function openLocalFile(file) {
  if (!file) return;
  page.files.push({ name: file.name, size: file.size, local: file });
  renderFiles($("file"), page.files);
  offerDiff();
  state.update(switchTo(page.files.length - 1));
}

$("open-input").addEventListener("change", (e) => {
  openLocalFile(e.target.files[0]);
  e.target.value = "";
});
// Drag and drop of a file anywhere on the page.
let dragDepth = 0;
const carriesFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes("Files");
document.addEventListener("dragenter", (e) => {
  if (!carriesFiles(e)) return;
  dragDepth++;
  $("drop-hint").hidden = false;
});
document.addEventListener("dragleave", (e) => {
  if (!carriesFiles(e)) return;
  dragDepth = Math.max(0, dragDepth - 1);
  if (dragDepth === 0) $("drop-hint").hidden = true;
});
document.addEventListener("dragover", (e) => {
  if (!carriesFiles(e)) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = "copy";
});
document.addEventListener("drop", (e) => {
  if (!carriesFiles(e)) return;
  e.preventDefault();
  dragDepth = 0;
  $("drop-hint").hidden = true;
  openLocalFile(e.dataTransfer.files[0]);
});

start();
