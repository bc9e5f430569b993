// The page's back end, in a Web Worker: fetches a session, decodes it with prof's own reader
// (the wasm module built from viewer/) and answers the views' questions, so the page never
// freezes while a large profile loads. One worker holds one profile: switching files ends this
// worker (which frees all its memory at once) and starts another.
//
// Messages in: {id, method, args}. Out: {id, result} or {id, error}, and {progress} while
// loading. Every number and text in a result was computed and formatted by the wasm module.
//
// The single-file page (`prof convert --to html`, serve/standalone.rs) runs this file as a
// classic worker: it replaces the module header below, up to its end marker, with the wasm
// module's glue, so nothing above the marker may be needed by the code after it but `init`,
// the glue's exports and `WASM_URL`.

import init, {
  Profile,
  SessionBytes,
  loadProgressText,
  profVersion,
  wasmMemoryBytes,
} from "./pkg/prof_viewer.js";

const WASM_URL = new URL("./pkg/prof_viewer_bg.wasm", import.meta.url);
// end of the module header

let profile = null;
/** The Diff view's comparison: the base file's index, its profile (`profile` itself when the
 * file is compared with itself) and the wasm `Diff`, or why the two cannot be compared. */
let comparison = null;
let stackChart = null; // the last stack chart laid out, for its tooltips
let stackChartSerial = 0;
/** The last scope bars laid out for the timeline and for the stack chart, for their tooltips
 * and clicks: `{serial, bars}` each. */
const scopeBars = { timeline: null, stackChart: null };
let scopeBarsSerial = 0;
/** Whether the loaded session has scopes, marks or tasks: only then are bars laid out. */
let hasScopeBars = false;
let ready = null;
/** The sample type of the last `setView` (`undefined`: none since the load): the header and the
 * threads' figures change only with it. */
let viewType;
/** The grouping of the last `setView` ("task" or null). */
let viewGroupBy = null;

/** Set once the wasm module is ready: its exports may be called. */
let wasmReady = false;

/** Compiles the wasm module once: from `wasm` (its bytes) when given, else from the server. */
function initOnce(wasm) {
  ready ??= init({ module_or_path: wasm ?? WASM_URL }).then((exports) => {
    wasmReady = true;
    return exports;
  });
  return ready;
}
/** The bytes of `file` (a File the user opened in the page). */
async function readFile(file) {
  return new Uint8Array(await file.arrayBuffer());
}

/** Answers built from the current call tree, kept while it stays (see `dropTrees`). */
const trees = { table: new Map(), sandwich: null };

/** Forgets what was built from the call tree: call whenever `profile.tree` changes. */
function dropTrees() {
  for (const table of trees.table.values()) table.free();
  trees.table.clear();
  trees.sandwich?.value?.free();
  trees.sandwich = null;
}

/** The call tree table, inverted or not, built once per call tree. */
function treeTable(inverted) {
  let table = trees.table.get(inverted);
  if (!table) {
    table = profile.treeTable(inverted);
    trees.table.set(inverted, table);
  }
  return table;
}

/** The sandwich of function `name` (`undefined` when no sample shown has it). */
function sandwich(name) {
  if (trees.sandwich?.name !== name) {
    trees.sandwich?.value?.free();
    trees.sandwich = { name, value: profile.sandwich(name) };
  }
  return trees.sandwich.value;
}

/** A flame layout's columns as plain data (typed arrays are transferred). */
function layoutData(layout) {
  const out = {
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
  };
  layout.free();
  return out;
}

/** The scope bars of `window` ([from, to) ns, null: the whole session) `width` pixels wide for
 * view `which` (`timeline`: every thread and the task lanes; `stackChart`: the shown threads),
 * kept for `scopeBar`; null for a session without scopes, marks or tasks. */
function layScopeBars(which, window, width, { shown, depth, tasks }) {
  if (!hasScopeBars) return null;
  const start = performance.now();
  const bars = profile.scopeBars(window?.[0] ?? -1, window?.[1] ?? -1, width, shown, depth, tasks);
  scopeBars[which]?.bars.free();
  scopeBars[which] = { serial: ++scopeBarsSerial, bars };
  return {
    serial: scopeBarsSerial,
    columns: bars.columns(),
    ...JSON.parse(bars.textsJson(profile)),
    computeMs: performance.now() - start,
  };
}

/** Reads the answer to `request` (a `fetch` promise) into the wasm module's memory (each chunk
 * copied in once), reporting progress against `size` (the uncompressed length, if known). While
 * the module is still compiling, the chunks wait in JavaScript and go in when it is ready: the
 * download does not wait for the compilation. */
async function fetchBytes(request, size) {
  const response = await request;
  // 422: the file could not be loaded; the body is the one line `prof report` would print.
  if (response.status === 422) throw new Error(await response.text());
  if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
  let bytes = null;
  let waiting = [];
  const push = (chunk) => {
    if (!bytes && wasmReady) {
      bytes = new SessionBytes(size ?? 0);
      for (const early of waiting) bytes.push(early);
      waiting = null;
    }
    if (bytes) bytes.push(chunk);
    else waiting.push(chunk);
  };
  let received = 0;
  if (!response.body) {
    push(new Uint8Array(await response.arrayBuffer()));
  } else {
    const reader = response.body.getReader();
    let lastReport = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      push(value);
      received += value.length;
      const now = performance.now();
      // The progress text is the wasm module's: reported once it is ready.
      if (wasmReady && now - lastReport > 50) {
        lastReport = now;
        postMessage({ progress: loadProgressText(received, size ?? 0) });
      }
    }
  }
  await initOnce();
  push(new Uint8Array(0));
  return bytes;
}

/** A whole file's `bytes` gathered into the wasm module's memory for the reader, as
 * `fetchBytes` gathers a download. A gzip file (it starts with 1f 8b) is decompressed on the
 * way by the browser's own DecompressionStream, so the module carries no inflater, and is left
 * as soon as it grows past the largest session the reader takes. */
async function gathered(bytes) {
  const out = new SessionBytes(bytes.length);
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    out.push(bytes);
    return out;
  }
  const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!out.push(value)) {
        await reader.cancel();
        break;
      }
    }
  } catch (e) {
    out.undecompressed(String(e?.message ?? e));
  }
  return out;
}

/** Now on the clock every page shares (ms since the epoch), to mark worker times in the page. */
const now = () => performance.timeOrigin + performance.now();

/** The views' questions. Each returns plain data (typed arrays are transferred). */
const methods = {
  /** Compiles the wasm module ahead of the first load (`wasm`: its bytes, for the single-file
   * page), so that it happens while the page fetches the file list. */
  async init({ wasm }) {
    await initOnce(wasm);
  },
  /** The wasm module's memory size in bytes (its peak: it never shrinks). */
  memoryBytes() {
    return wasmMemoryBytes();
  },
  /** Loads the session at `url` (its `download`, started when the message arrived), or given
   * as `bytes` (the single-file page, which also hands over the `wasm` module's bytes). */
  async load({ url, size, bytes: given, file, wasm, download }) {
    await initOnce(wasm);
    const times = { compiled: now() };
    // A file opened in the page (a File) is read here, never sent anywhere.
    if (file) given = await readFile(file);
    const bytes = given ? await gathered(given) : await (download ?? fetchBytes(fetch(url), size));
    times.fetched = now();
    postMessage({ progress: loadProgressText(bytes.length, bytes.length) + " · decoding" });
    dropTrees();
    dropComparison();
    viewType = undefined;
    viewGroupBy = null;
    profile = file ? Profile.loadOpened(bytes, file.name) : Profile.fromBytes(bytes);
    times.decoded = now();
    const contexts = JSON.parse(profile.contextsJson());
    hasScopeBars = contexts.scopes || contexts.tasks;
    for (const which of Object.keys(scopeBars)) {
      scopeBars[which]?.bars.free();
      scopeBars[which] = null;
    }
    return {
      times,
      meta: JSON.parse(profile.metaJson()),
      names: JSON.parse(profile.functionNamesJson()),
      threads: JSON.parse(profile.threadsJson()),
      processes: JSON.parse(profile.processesJson()),
      sampleTypes: JSON.parse(profile.sampleTypesJson()),
      hasStates: profile.hasStates(),
      defaultTransforms: JSON.parse(profile.defaultTransformsJson()),
      hasTasks: contexts.tasks,
      hasScopes: contexts.scopes,
      hasCode: profile.hasCode(),
      version: profVersion(),
    };
  },
  /** What selects the samples: `{threads, range, transforms, type, state}` as the state holds
   * them. The threads' figures (`threads`: what every view shows of each) come back each time;
   * the header (`meta`) when the sample type changed, the only thing that changes it. */
  setView(view) {
    dropTrees();
    profile.setView(JSON.stringify(view));
    const out = {
      label: profile.threadsLabel(),
      command: profile.reportCommand(),
      chips: JSON.parse(profile.transformChipsJson()),
      filters: JSON.parse(profile.filterChipsJson()),
      threads: JSON.parse(profile.threadsJson()),
    };
    const type = view.type ?? null;
    if (type !== viewType) {
      viewType = type;
      out.meta = JSON.parse(profile.metaJson());
    }
    // Grouping by task adds the task:NAME root frames to the function names.
    const groupBy = view.groupBy ?? null;
    if (groupBy !== viewGroupBy) {
      viewGroupBy = groupBy;
      out.names = JSON.parse(profile.functionNamesJson());
    }
    return out;
  },
  /** A transform's chip text, or an error saying why it cannot apply. */
  checkTransform({ spec }) {
    return profile.checkTransform(JSON.stringify(spec));
  },
  /** The module of a call tree node's frame, or null. */
  nodeModule({ node }) {
    return profile.nodeModule(node) ?? null;
  },
  setHighlight({ mask }) {
    if (mask) profile.setHighlight(mask);
    else profile.clearHighlight();
  },
  /** The flame graph of the frame at `zoomPath` (names), `width` pixels wide, showing the
   * `window` [from, to) fractions of it, siblings heaviest first when `leftHeavy`. */
  layout({ zoomPath, width, window, leftHeavy }) {
    const root = profile.nodeByPath(JSON.stringify(zoomPath ?? []));
    const [from, to] = window ?? [0, 1];
    const layout = profile.layout(root, width, from, to, Boolean(leftHeavy));
    return { root, ...layoutData(layout), path: JSON.parse(profile.pathJson(root)) };
  },
  top({ n, sort }) {
    return JSON.parse(profile.topJson(n, sort));
  },
  node({ node }) {
    return JSON.parse(profile.nodeJson(node));
  },
  namePath({ node }) {
    return JSON.parse(profile.pathJson(node)).slice(1).map((c) => c.name);
  },
  weightTexts({ weight }) {
    return { weight: profile.weightText(weight), share: profile.shareText(weight) };
  },
  /** The call tree table's rows, fully expanded: node, depth and subtree size of each. */
  callTree({ inverted }) {
    const table = treeTable(inverted);
    return { order: table.order(), depth: table.depth(), size: table.size() };
  },
  /** Texts of the call tree rows for `nodes`. */
  callTreeRows({ inverted, nodes }) {
    return JSON.parse(treeTable(inverted).rowsJson(profile, Uint32Array.from(nodes)));
  },
  /** The function names from the outermost row down to `node`. */
  callTreePath({ inverted, node }) {
    return JSON.parse(treeTable(inverted).pathJson(profile, node));
  },
  /** The node that a path of names leads to (as far as it leads; 0 for none). */
  callTreeNode({ inverted, path }) {
    return treeTable(inverted).nodeByPath(profile, JSON.stringify(path));
  },
  /** Self and total of function `name` (null when no sample shown has it). */
  sandwichSummary({ name }) {
    const value = sandwich(name);
    return value ? JSON.parse(value.summaryJson(profile)) : null;
  },
  /** The callers' (`callers`) or callees' flame graph of function `name`, `width` pixels wide,
   * showing the `window` [from, to) fractions of it, the functions `mask` marks (a search's
   * matches, one byte per function id; null: none) highlighted. */
  sandwichLayout({ name, callers, width, window, mask }) {
    const value = sandwich(name);
    const [from, to] = window ?? [0, 1];
    return value ? layoutData(value.layout(callers, width, from, to, mask ?? undefined)) : null;
  },
  /** One frame of a sandwich side. */
  sandwichNode({ name, callers, node }) {
    const value = sandwich(name);
    return value ? JSON.parse(value.nodeJson(profile, callers, node)) : null;
  },
  /** The stack of a frame of a sandwich side, outermost first (function names). */
  sandwichStack({ name, callers, node }) {
    const value = sandwich(name);
    return value ? JSON.parse(value.stackJson(profile, callers, node)) : null;
  },
  /** The source lines of function `name` with their weights over what is shown. */
  sourceLines({ name }) {
    return JSON.parse(profile.sourceLinesJson(name));
  },
  /** Where the hottest code of function `name` lies ({mapping, offset, binary}), or {why}. */
  assemblyTarget({ name }) {
    return JSON.parse(profile.assemblyTargetJson(name));
  },
  /** The weights of function `name` at the instructions of mapping `mapping`'s file starting
   * at the offsets `starts`, the last ending at `end`. */
  assembly({ name, mapping, starts, end }) {
    return JSON.parse(profile.assemblyJson(name, mapping, Float64Array.from(starts), end));
  },
  /** The scope table over the shown threads and range, sorted by `column`; whether the
   * session has scopes and tasks. */
  scopes({ column, descending }) {
    return {
      has: JSON.parse(profile.contextsJson()),
      ...JSON.parse(profile.scopesJson(column, descending)),
      tasks: JSON.parse(profile.tasksJson()),
    };
  },
  /** The spread of scope `name`'s call durations in at most `buckets` bars, with its axis texts. */
  scopeDistribution({ name, buckets, calls }) {
    return {
      histogram: JSON.parse(profile.scopeDistributionJson(name, buckets)),
      calls: JSON.parse(profile.scopeCallsJson(name, calls)),
    };
  },
  /** Every function shown, filtered by name and sorted, with a summary line. */
  functionTable({ column, descending, filter, regex }) {
    return JSON.parse(profile.functionTableJson(column, descending, filter, regex));
  },
  search({ pattern }) {
    const result = profile.search(pattern);
    const out = { mask: result.mask(), text: result.text };
    result.free();
    return out;
  },
  /** The timeline of every thread over `window` ([from, to) ns, null: the whole session), and
   * its scope bars (`scopes`: at most `depth` lanes per thread, `tasks` task lanes) for
   * `width` pixels. */
  timeline({ window, buckets, width, depth, tasks }) {
    const start = performance.now();
    const data = profile.timeline(window?.[0] ?? -1, window?.[1] ?? -1, buckets);
    const out = {
      from: data.from,
      to: data.to,
      buckets: data.buckets,
      threads: data.threads(),
      height: data.height(),
      matched: data.matched(),
      waiting: data.waiting(),
      hottest: data.hottest(),
      ...JSON.parse(data.textsJson()),
      scopes: layScopeBars("timeline", window, width ?? buckets, { shown: false, depth, tasks }),
    };
    data.free();
    out.computeMs = performance.now() - start;
    return out;
  },
  /** The stack chart of the shown threads and range over `window`, `width` pixels wide, and
   * their scope bars (`scopes`, at most `depth` lanes per thread). */
  stackChart({ window, width, depth }) {
    const start = performance.now();
    stackChart?.free();
    stackChart = profile.stackChart(window?.[0] ?? -1, window?.[1] ?? -1, width);
    const out = {
      serial: ++stackChartSerial,
      from: stackChart.from,
      to: stackChart.to,
      count: stackChart.count,
      x: stackChart.x(),
      width: stackChart.width(),
      track: stackChart.track(),
      depth: stackChart.depth(),
      func: stackChart.func(),
      highlight: stackChart.highlight(),
      threads: stackChart.threads(),
      maxDepth: stackChart.maxDepth(),
      ...JSON.parse(stackChart.textsJson()),
      scopes: layScopeBars("stackChart", window, width, { shown: true, depth, tasks: 0 }),
    };
    out.computeMs = performance.now() - start;
    return out;
  },
  /** What scope bar `index` of the bars `serial` laid out for view `which` is, and the time a
   * click on it selects (null: not the last bars). */
  scopeBar({ which, serial, index }) {
    const laid = scopeBars[which];
    if (laid?.serial !== serial) return null;
    return JSON.parse(laid.bars.barJson(profile, index));
  },
  /** What the tooltip says about box `index` of stack chart `serial` (null: not the last). */
  stackBox({ serial, index }) {
    if (serial !== stackChartSerial) return null;
    return JSON.parse(stackChart.boxJson(profile, index));
  },
  /** The stack of box `index` of the stack chart `serial`, outermost first (function names). */
  stackBoxStack({ serial, index }) {
    if (serial !== stackChartSerial) return null;
    return JSON.parse(stackChart.stackJson(profile, index));
  },
  /** Compares the loaded profile (named `newName`, showing sample type `type`) with file
   * `index` (named `baseName`, fetched from `url`, or given as `bytes`; `same`: the loaded file
   * itself) in the same sample type when it has it, once per base and type.
   * Answers the title, or `refused`: the one line saying why the two cannot be compared. */
  async setBase({ index, url, size, bytes: given, file, same, baseName, newName, type }) {
    if (comparison?.index !== index || comparison.type !== type) {
      // The base stays loaded when only the shown sample type changed.
      let base = comparison?.index === index ? comparison.base : null;
      if (base) {
        comparison.diff?.free();
        comparison.diff = null;
      } else {
        dropComparison();
        base = profile;
        if (same) base = profile;
        else if (file) base = Profile.loadOpened(await gathered(await readFile(file)), file.name);
        else base = Profile.fromBytes(given ? await gathered(given) : await fetchBytes(fetch(url), size));
      }
      if (base !== profile) base.followSampleType(profile);
      comparison = { index, type, base, diff: null, refused: null };
      try {
        comparison.diff = profile.diffAgainst(base, baseName, newName);
      } catch (e) {
        comparison.refused = e instanceof Error ? e.message : String(e);
      }
    }
    const { diff, refused } = comparison;
    return refused ? { refused } : { title: diff.titleText() };
  },
  /** The differential flame graph from the frame at `zoomPath` (names), `width` pixels wide,
   * showing the `window` [from, to) fractions of it, siblings heaviest first when `leftHeavy`:
   * a layout with each frame's fill (`rgb`). */
  diffLayout({ zoomPath, width, window, leftHeavy }) {
    const diff = comparedDiff();
    const root = diff.nodeByPath(profile, JSON.stringify(zoomPath ?? []));
    const [from, to] = window ?? [0, 1];
    const out = layoutData(diff.layout(profile, root, width, from, to, Boolean(leftHeavy)));
    out.rgb = diff.colors(out.node);
    out.root = root;
    out.path = ["all", ...JSON.parse(diff.pathJson(profile, root))];
    return out;
  },
  /** What the tooltip says about frame `node` of the differential flame graph. */
  diffNode({ node }) {
    return JSON.parse(comparedDiff().nodeJson(profile, node));
  },
  /** A merged block's weight and share of the new profile. */
  diffWeight({ weight }) {
    return JSON.parse(comparedDiff().weightJson(weight));
  },
  /** The function names from the root down to frame `node` (the zoom path). */
  diffPath({ node }) {
    return JSON.parse(comparedDiff().pathJson(profile, node));
  },
  /** `prof diff`'s table (`by` self or total), ordered by `column`, its first `limit` rows. */
  diffTable({ by, column, descending, limit }) {
    const diff = comparedDiff();
    return JSON.parse(diff.tableJson(comparison.base, profile, by, column, descending, limit));
  },
  /** A time range as the range chip says it: `1.20 s – 2.45 s (1.25 s)`. */
  rangeText({ range }) {
    return profile.rangeText(range[0], range[1]);
  },
};

/** Frees the comparison (the base profile too, unless it is the loaded one). */
function dropComparison() {
  comparison?.diff?.free();
  if (comparison && comparison.base !== profile) comparison.base.free();
  comparison = null;
}

/** The comparison's `Diff`; an error when there is none to draw. */
function comparedDiff() {
  if (!comparison?.diff) throw new Error(comparison?.refused ?? "no profile to compare with");
  return comparison.diff;
}

/** Typed arrays in a result, to transfer rather than copy. */
function transferables(value) {
  if (!value || typeof value !== "object") return [];
  return Object.values(value)
    .filter((v) => ArrayBuffer.isView(v))
    .map((v) => v.buffer);
}

/** How long each question took in the worker, `[method, ms]`, oldest first (the last 200):
 * the benchmark reads it to say where the time of a redraw goes. */
const spent = [];
methods.spent = () => spent.splice(0);

// One question at a time, in order: a later question may depend on an earlier `setView`.
let queue = Promise.resolve();
self.onmessage = (event) => {
  const { id, method } = event.data;
  let args = event.data.args;
  // A load's download starts now, not when the questions before it (the compilation that
  // `init` waits for) are answered.
  if (method === "load" && args?.url && !args.bytes) {
    const download = fetchBytes(fetch(args.url), args.size);
    download.catch(() => {}); // reported when `load` awaits it, not as an unhandled rejection
    args = { ...args, download };
  }
  queue = queue.then(async () => {
    try {
      const handler = methods[method];
      if (!handler) throw new Error(`no such method: ${method}`);
      if (!["load", "init", "memoryBytes", "spent"].includes(method) && !profile) throw new Error("no profile is loaded");
      const start = performance.now();
      const result = await handler(args ?? {});
      spent.push([method, performance.now() - start]);
      if (spent.length > 200) spent.shift();
      postMessage({ id, result }, transferables(result));
    } catch (e) {
      postMessage({ id, error: e instanceof Error ? e.message : String(e) });
    }
  });
};
