// The view state, and the URL fragment that holds all of it: reload, back and forward restore
// a view, and a copied URL shows the same view while the server runs. Views read the state and
// ask for changes through `update`; they never talk to each other.
//
// Fragment keys (all optional): file (index), view (flame, table, ...), threads (comma-separated
// thread indices; absent: all), range (from-to, nanoseconds since the session started), zoom
// (function names from the root, joined by U+001F), fwin (the flame graph's visible part of the
// zoomed root, as fractions from-to), heavy (1: siblings heaviest first), search, selected (a
// function name), icicle (1), node (the call tree's selected node: function names from its
// root, joined by U+001F), inverted (1: the call tree is inverted), transforms (the transform
// stack: each transform is its kind and its arguments joined by U+001F, the transforms joined by
// U+001E: `focus-function\u001fparse`), window (from-to, nanoseconds: the time the timeline and
// stack chart show), type (the sample type shown; absent: the file's default), state (running
// or waiting: only samples whose thread was in that state), scope and task (only samples inside a
// scope of that name, or of a task of that name), group (task: each task's name as a root frame), base (index of the file the Diff view
// compares `file` with), cwin and ewin (the Sandwich view's visible parts of its callers' and its
// callees' graphs, as fwin; another selected function starts with the whole of both), dzoom (the Diff view's zoomed frame: function names from the root,
// joined by U+001F), dwin (the Diff view's visible part of its zoomed frame, as fwin), tsort (the Top functions table's order: its column, name, self or total,
// and asc or desc, `total-asc`; absent: self, heaviest first), tfilter (that table's filter
// text), tregex (1: the filter is a regular expression), defaults (0: the file's default
// transforms were removed; absent, a file whose URL names no transforms starts with them).

const SEP = "\u001f";
const TRANSFORM_SEP = "\u001e";

/** The argument each transform kind takes (the core's `TransformSpec`, as JSON). */
const TRANSFORM_ARGS = {
  "focus-function": "function",
  "focus-subtree": "path",
  merge: "function",
  drop: "function",
  "collapse-recursion": null,
  "collapse-module": "module",
  focus: "pattern",
  ignore: "pattern",
  hide: "pattern",
  "fold-scheduler": null,
};

/** Whether the fragment `hash` names the transforms (else the file's defaults apply). */
export function namesTransforms(hash) {
  return new URLSearchParams(hash.replace(/^#/, "")).has("transforms");
}

/** The transform specs in a `transforms` value; unknown kinds are left out. */
function parseTransforms(text) {
  const specs = [];
  for (const item of text.split(TRANSFORM_SEP)) {
    const [kind, ...args] = item.split(SEP);
    if (!(kind in TRANSFORM_ARGS)) continue;
    const key = TRANSFORM_ARGS[kind];
    if (key === null) specs.push({ kind });
    else if (key === "path") specs.push({ kind, path: args });
    else if (args.length === 1) specs.push({ kind, [key]: args[0] });
  }
  return specs;
}

/** The `transforms` value for a list of specs. */
function formatTransforms(specs) {
  return specs
    .map((spec) => {
      const key = TRANSFORM_ARGS[spec.kind];
      const args = key === null ? [] : key === "path" ? spec.path : [spec[key]];
      return [spec.kind, ...args].join(SEP);
    })
    .join(TRANSFORM_SEP);
}

/** The state with nothing chosen. */
function defaults() {
  return {
    file: 0,
    view: "flame",
    threads: null, // null: all threads; else an array of thread indices
    range: null, // null: the whole session; else [from_ns, to_ns)
    zoom: [], // function names from the root down to the zoomed frame
    flameWindow: null, // null: the whole zoomed frame; else [from, to) fractions of its width
    leftHeavy: false, // siblings heaviest first instead of by name
    search: "",
    selected: null, // a function name
    icicle: false,
    node: [], // the call tree's selected node: function names from its root
    inverted: false, // the call tree is inverted (roots are the functions with self time)
    transforms: [], // the transform stack: the core's TransformSpec objects, applied in order
    defaultsOff: false, // the file's default transforms were removed (not put back on reload)
    window: null, // null: the whole session; else [from_ns, to_ns) the time views show
    sampleType: null, // null: the file's default sample type; else its name
    threadState: null, // null: every sample; "running" or "waiting": those in that state
    scope: null, // null: every sample; else only samples inside a scope of this name
    task: null, // null: every sample; else only samples of tasks of this name
    groupBy: null, // null: stacks as recorded; "task": each task's name as a root frame;
    // "scope": each sample's open scopes as frames above its stack
    base: null, // null: no comparison; else the index of the file the Diff view compares with
    callersWindow: null, // as flameWindow, for the Sandwich view's callers graph
    calleesWindow: null, // as flameWindow, for the Sandwich view's callees graph
    diffZoom: [], // the Diff view's zoomed frame: function names from the root
    diffWindow: null, // as flameWindow, for the Diff view's flame graph
    tableSort: TABLE_SORT, // the Top functions table's order: {column, descending}
    tableFilter: "", // the Top functions table's filter text
    tableRegex: false, // the filter is a regular expression
  };
}

/** The Top functions table's order when none is chosen. */
const TABLE_SORT = { column: "self", descending: true };
const TABLE_COLUMNS = ["name", "self", "total"];

/** A time span `from-to` (nanoseconds, from < to) as [from, to), or null. */
function span(text) {
  const m = text?.match(/^(\d+)-(\d+)$/);
  return m && Number(m[1]) < Number(m[2]) ? [Number(m[1]), Number(m[2])] : null;
}

/** A part of a frame's width `from-to` (fractions, from < to) as [from, to), or null. */
function fractions(text) {
  const m = text?.match(/^([\d.]+)-([\d.]+)$/);
  return m && Number(m[1]) < Number(m[2]) ? [Number(m[1]), Number(m[2])] : null;
}

/** The text of a part of a frame's width. */
function formatFractions(window) {
  return window.map((f) => f.toFixed(6)).join("-");
}

/** The state a fragment (`#file=1&view=table...`) describes. */
export function parse(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const state = defaults();
  const file = Number(params.get("file"));
  if (Number.isInteger(file) && file >= 0) state.file = file;
  if (params.get("view")) state.view = params.get("view");
  const threads = params.get("threads");
  if (threads !== null) {
    state.threads = threads === "" ? [] : threads.split(",").map(Number).filter(Number.isInteger);
  }
  const range = params.get("range")?.match(/^(\d+)-(\d+)$/);
  if (range && Number(range[1]) < Number(range[2])) state.range = [Number(range[1]), Number(range[2])];
  const zoom = params.get("zoom");
  if (zoom) state.zoom = zoom.split(SEP);
  state.flameWindow = fractions(params.get("fwin"));
  state.leftHeavy = params.get("heavy") === "1";
  state.search = params.get("search") ?? "";
  state.selected = params.get("selected");
  state.icicle = params.get("icicle") === "1";
  const node = params.get("node");
  if (node) state.node = node.split(SEP);
  state.inverted = params.get("inverted") === "1";
  const transforms = params.get("transforms");
  if (transforms) state.transforms = parseTransforms(transforms);
  state.defaultsOff = params.get("defaults") === "0";
  state.window = span(params.get("window"));
  state.sampleType = params.get("type") || null;
  const threadState = params.get("state");
  if (threadState === "running" || threadState === "waiting") state.threadState = threadState;
  state.scope = params.get("scope") || null;
  state.task = params.get("task") || null;
  const group = params.get("group");
  if (group === "task" || group === "scope") state.groupBy = group;
  const base = params.get("base");
  if (base !== null && /^\d+$/.test(base)) state.base = Number(base);
  state.callersWindow = fractions(params.get("cwin"));
  state.calleesWindow = fractions(params.get("ewin"));
  const dzoom = params.get("dzoom");
  if (dzoom) state.diffZoom = dzoom.split(SEP);
  state.diffWindow = fractions(params.get("dwin"));
  const tsort = params.get("tsort")?.match(/^(\w+)-(asc|desc)$/);
  if (tsort && TABLE_COLUMNS.includes(tsort[1])) {
    state.tableSort = { column: tsort[1], descending: tsort[2] === "desc" };
  }
  state.tableFilter = params.get("tfilter") ?? "";
  state.tableRegex = params.get("tregex") === "1";
  return state;
}

/** The fragment for `state`, leaving out what is at its default. */
export function format(state) {
  const params = new URLSearchParams();
  if (state.file) params.set("file", String(state.file));
  if (state.view !== "flame") params.set("view", state.view);
  if (state.threads !== null) params.set("threads", state.threads.join(","));
  if (state.range) params.set("range", `${state.range[0]}-${state.range[1]}`);
  if (state.zoom.length) params.set("zoom", state.zoom.join(SEP));
  if (state.flameWindow) params.set("fwin", formatFractions(state.flameWindow));
  if (state.leftHeavy) params.set("heavy", "1");
  if (state.search) params.set("search", state.search);
  if (state.selected !== null) params.set("selected", state.selected);
  if (state.icicle) params.set("icicle", "1");
  if (state.node.length) params.set("node", state.node.join(SEP));
  if (state.inverted) params.set("inverted", "1");
  if (state.transforms.length) params.set("transforms", formatTransforms(state.transforms));
  if (state.defaultsOff) params.set("defaults", "0");
  if (state.window) params.set("window", `${state.window[0]}-${state.window[1]}`);
  if (state.sampleType) params.set("type", state.sampleType);
  if (state.threadState) params.set("state", state.threadState);
  if (state.scope) params.set("scope", state.scope);
  if (state.task) params.set("task", state.task);
  if (state.groupBy) params.set("group", state.groupBy);
  if (state.base !== null) params.set("base", String(state.base));
  if (state.callersWindow) params.set("cwin", formatFractions(state.callersWindow));
  if (state.calleesWindow) params.set("ewin", formatFractions(state.calleesWindow));
  if (state.diffZoom.length) params.set("dzoom", state.diffZoom.join(SEP));
  if (state.diffWindow) params.set("dwin", formatFractions(state.diffWindow));
  const sort = state.tableSort;
  if (sort.column !== TABLE_SORT.column || sort.descending !== TABLE_SORT.descending) {
    params.set("tsort", `${sort.column}-${sort.descending ? "desc" : "asc"}`);
  }
  if (state.tableFilter) params.set("tfilter", state.tableFilter);
  if (state.tableRegex) params.set("tregex", "1");
  const text = params.toString();
  return text ? `#${text}` : "";
}

/**
 * The page's state: `current` is read by views; `update(patch)` changes it, records it in the
 * URL (a new history entry unless `replace`), and tells every listener what changed.
 */
export class State {
  constructor() {
    this.current = parse(location.hash);
    this.listeners = [];
    window.addEventListener("popstate", () => this.#adopt(parse(location.hash)));
    window.addEventListener("hashchange", () => this.#adopt(parse(location.hash)));
  }

  /** Calls `listener(state, changedKeys)` after every change. */
  listen(listener) {
    this.listeners.push(listener);
  }

  /** Applies `patch`; `replace` keeps the current history entry (typing in the search box). */
  update(patch, { replace = false } = {}) {
    const next = { ...this.current, ...patch };
    // The Sandwich view's windows are parts of one function's graphs: another function's
    // sandwich starts whole.
    if ("selected" in patch && patch.selected !== this.current.selected) {
      if (!("callersWindow" in patch)) next.callersWindow = null;
      if (!("calleesWindow" in patch)) next.calleesWindow = null;
    }
    const hash = format(next);
    if (hash !== location.hash && !(hash === "" && location.hash === "#")) {
      const url = `${location.pathname}${location.search}${hash || "#"}`;
      if (replace) history.replaceState(null, "", url);
      else history.pushState(null, "", url);
    }
    this.#adopt(next);
  }

  #adopt(next) {
    const changed = Object.keys(next).filter(
      (k) => JSON.stringify(next[k]) !== JSON.stringify(this.current[k]),
    );
    if (changed.length === 0) return;
    this.current = next;
    for (const listener of this.listeners) listener(next, new Set(changed));
  }
}
