// The stack chart view: per shown thread, the stacks in time order (x: time, y: depth, the
// outermost frame at the top). The wasm module lays the boxes out for the time window shown
// (state `window`, else the selected `range`, else the whole session), merging those narrower
// than a pixel. The wheel zooms the time axis around the pointer, dragging pans it; hovering
// shows a box's frame and span, clicking selects its function (state `selected`), right-clicking
// opens its menu (copy its name, stack or a link; its transforms). A session
// with scopes (issue 22) gets each thread's spans as nested bars above its stacks, and its marks
// as ticks (scope-bars.js): hovering a bar tells what it is, clicking it selects its time.
// Its threads come in the timeline's order and its time axis is the timeline's (time-axis.js:
// the same label column and graph width), so a moment shown in both lines up vertically.

import { escapeHtml, functionColor } from "../html-and-color.js";
import { showIfTimed } from "./untimed.js";
import { fitCanvas } from "../canvas.js";
import { canvasColors } from "../theme.js";
import { MARK, SPAN, ScopeBars, scopeBarTooltip } from "../scope-bars.js";
import { GUTTER, drawTicks, graphWidth } from "../time-axis.js";

const AXIS = 18; // CSS pixels for the time axis at the top
const HEADER = 18; // CSS pixels for each thread's label row
const ROW = 16; // CSS pixels per stack level
const PAD = 1;
const FONT = "11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
const MATCH_COLOR = "#d633ff"; // frames' own fills are light in both themes, their labels dark
const FRAME_TEXT = "#111";
const HOVER_OUTLINE = "#222";
const MIN_SPAN = 1000; // ns: the narrowest window the wheel zooms to
const MIN_DRAG = 3; // CSS pixels a pointer must move to pan rather than click
const LANES = 16; // scope lanes (nesting depths) at most above each thread's stacks

export class StackChartView {
  static id = "stack-chart";
  static label = "Stack chart";

  /**
   * @param {HTMLElement} element the view's section
   * @param {object} ctx the page's context (app.js): state, page, ask, tooltip helpers
   */
  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    this.scroller = element.querySelector(".stack-chart-scroller");
    this.canvas = element.querySelector("canvas");
    this.none = element.querySelector(".timeline-none");
    this.layout = null;
    this.bars = null; // the layout's scope bars (ScopeBars), if the session has any
    this.hoveredBar = -1;
    this.tops = []; // each track's top, CSS pixels
    this.lanes = []; // each track's scope lanes, above its stacks
    this.byRow = new Map(); // "track:depth" -> box indices in increasing x
    this.hovered = -1;
    this.renders = 0;
    this.lastDrawMs = 0;
    this.drawn = Promise.resolve();
    this.pan = null;
    this.pendingWindow = null;
    this.canvas.addEventListener("wheel", (e) => this.#wheel(e), { passive: false });
    this.canvas.addEventListener("pointerdown", (e) => this.#pointerDown(e));
    this.canvas.addEventListener("pointermove", (e) => this.#pointerMove(e));
    this.canvas.addEventListener("pointerup", (e) => this.#pointerUp(e));
    // A box's menu: right-click it (not a merged box: it stands for several functions).
    this.canvas.addEventListener("contextmenu", (e) => {
      const i = this.hitTest(e.offsetX, e.offsetY);
      const l = this.layout;
      if (i < 0 || !l || l.func[i] === 0xffffffff) return;
      e.preventDefault();
      this.#openMenu(e.clientX, e.clientY, l, i);
    });
    this.canvas.addEventListener("mouseleave", () => {
      this.#setHoveredBar(-1, null);
      this.#setHovered(-1, null);
    });
    let pending = 0;
    new ResizeObserver(() => {
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(() => {
        if (this.element.hidden || !ctx.page.meta || this.scroller.hidden) return;
        if (this.layout && graphWidth(this.scroller) !== this.layoutWidth) this.#fetch();
        else this.draw();
      });
    }).observe(this.scroller);
  }

  /** Empties the view (no profile). */
  clear() {
    this.layout = null;
    this.bars = null;
    this.hovered = -1;
    this.hoveredBar = -1;
    this.draw();
  }

  /** Draws its canvas again, in the colours of the theme now shown (theme.js). */
  redraw() {
    this.draw();
  }

  /** Brings the view up to date with the state; `changed` is the set of changed keys. */
  async render(changed) {
    if (!showIfTimed(this.ctx, this.scroller, this.none)) {
      this.layout = null;
      this.drawn = Promise.resolve();
      return;
    }
    const keys = ["samples", "view", "window", "range", "threads", "transforms", "search", "selected"];
    if (keys.some((k) => changed.has(k))) await this.#fetch();
  }

  /** Resolves once the newest stack chart is drawn. */
  settled() {
    return this.drawn;
  }

  /** The window shown: the state's `window`, else the selected range, else everything. */
  #window() {
    const { window, range } = this.ctx.state.current;
    return window ?? range ?? null;
  }

  #fetch() {
    this.drawn = this.#fetchAndDraw();
    return this.drawn;
  }

  async #fetchAndDraw() {
    const render = ++this.renders;
    const width = graphWidth(this.scroller);
    const layout = await this.ctx.ask("stackChart", { window: this.#window(), width, depth: LANES });
    if (!layout || render !== this.renders) return;
    this.layout = layout;
    this.layoutWidth = width;
    this.bars = layout.scopes ? new ScopeBars(layout.scopes) : null;
    // The hovered box is gone with the old layout, and so is its tooltip.
    if (this.hovered >= 0 || this.hoveredBar >= 0) this.ctx.tooltip.hide();
    this.hovered = -1;
    this.hoveredBar = -1;
    this.#index();
    this.draw();
  }

  /** Track tops and the boxes of each row, for drawing and hit tests. */
  #index() {
    const l = this.layout;
    this.tops = [];
    this.lanes = [];
    let y = AXIS;
    for (let t = 0; t < l.threads.length; t++) {
      this.tops.push(y);
      const lanes = this.bars ? this.bars.lanes(l.threads[t]) : 0;
      this.lanes.push(lanes);
      y += HEADER + (lanes + l.maxDepth[t] + 1) * ROW + 4;
    }
    this.height = y;
    this.byRow = new Map();
    for (let i = 0; i < l.count; i++) {
      const key = `${l.track[i]}:${l.depth[i]}`;
      let row = this.byRow.get(key);
      if (!row) this.byRow.set(key, (row = []));
      row.push(i);
    }
    for (const row of this.byRow.values()) row.sort((a, b) => l.x[a] - l.x[b]);
  }

  /** Where box `i` is drawn, in CSS pixels relative to the canvas. */
  boxRect(i) {
    const l = this.layout;
    const width = this.layoutWidth;
    return {
      x: GUTTER + l.x[i] * width,
      y: this.#stacksTop(l.track[i]) + l.depth[i] * ROW,
      width: l.width[i] * width,
      height: ROW - PAD,
    };
  }

  /** Where track `t`'s stacks start: under its label and its scope lanes. */
  #stacksTop(t) {
    return this.tops[t] + HEADER + (this.lanes[t] ?? 0) * ROW;
  }

  /** The scope bars' geometry and lanes' places, as ScopeBars draws and hit-tests them. */
  #barGeometry() {
    const l = this.layout;
    const trackOf = new Map(Array.from(l.threads, (thread, t) => [thread, t]));
    return {
      left: GUTTER,
      width: this.layoutWidth,
      font: FONT,
      place: (kind, row, depth) => {
        const t = trackOf.get(row);
        if (t === undefined) return null;
        const top = this.tops[t] + HEADER;
        if (kind === MARK) return { y: top, height: this.lanes[t] * ROW - PAD };
        return { y: top + depth * ROW, height: ROW - PAD };
      },
      hidden: () => false,
    };
  }

  /** Where the scope bars named `name` are drawn, in CSS pixels relative to the canvas (for
   * tests). */
  barsNamed(name) {
    return this.bars && this.layout ? this.bars.rectsNamed(name, this.#barGeometry()) : [];
  }

  /** The scope bar at (`x`, `y`) CSS pixels from the canvas's top left, or -1. */
  barAt(x, y) {
    if (!this.bars || !this.layout) return -1;
    let t = this.tops.length - 1;
    while (t >= 0 && this.tops[t] > y) t--;
    if (t < 0) return -1;
    const lane = Math.floor((y - this.tops[t] - HEADER) / ROW);
    if (lane < 0 || lane >= this.lanes[t]) return -1;
    return this.bars.at(x, SPAN, this.layout.threads[t], lane, this.#barGeometry());
  }

  /** Where the boxes of function `name` are drawn, in time order (for tests). */
  boxesNamed(name) {
    const l = this.layout;
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (this.ctx.page.names[l.func[i]] === name) out.push({ index: i, track: l.track[i], ...this.boxRect(i) });
    }
    return out.sort((a, b) => a.x - b.x);
  }

  /** Redraws the last layout; sharp on high-DPI screens. */
  draw() {
    const start = performance.now();
    const l = this.layout;
    const width = Math.max(1, this.scroller.clientWidth);
    const height = Math.max(this.scroller.clientHeight, l ? this.height : 0);
    const ctx = fitCanvas(this.canvas, width, height);
    if (!l) return;
    const theme = canvasColors();
    const lw = this.layoutWidth;
    const names = this.ctx.page.names;
    const highlighting = this.ctx.page.highlighting;
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    ctx.fillStyle = theme.canvasMuted;
    drawTicks(ctx, l.ticks, GUTTER, lw, 0, AXIS, 5);
    for (let t = 0; t < l.threads.length; t++) {
      ctx.fillStyle = theme.canvasHeader;
      ctx.fillRect(0, this.tops[t], width, HEADER - 2);
      ctx.fillStyle = theme.canvasText;
      ctx.fillText(l.labels[t], 6, this.tops[t] + HEADER / 2 - 1);
      const deeper = this.bars?.deeperText(l.threads[t]);
      if (deeper) {
        // After the thread's name: its scopes nested deeper than the lanes are not drawn.
        ctx.fillStyle = theme.canvasMuted;
        ctx.fillText(deeper, 18 + ctx.measureText(l.labels[t]).width, this.tops[t] + HEADER / 2 - 1);
      }
    }
    const charWidth = ctx.measureText("m").width || 7;
    const colors = new Map();
    for (let i = 0; i < l.count; i++) {
      const x = GUTTER + l.x[i] * lw;
      const w = l.width[i] * lw;
      const y = this.#stacksTop(l.track[i]) + l.depth[i] * ROW;
      const func = l.func[i];
      let color;
      if (highlighting) color = l.highlight[i] ? MATCH_COLOR : theme.frameDim;
      else if (func === 0xffffffff) color = theme.frameMerged;
      else {
        color = colors.get(func);
        if (!color) colors.set(func, (color = functionColor(names[func] ?? "")));
      }
      ctx.fillStyle = color;
      ctx.fillRect(x, y, Math.max(w - PAD, 0.5), ROW - PAD);
      if (i === this.hovered) {
        ctx.strokeStyle = HOVER_OUTLINE;
        ctx.lineWidth = 1;
        ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - PAD - 1, 0.5), ROW - PAD - 1);
      }
      const chars = Math.floor((w - 6) / charWidth);
      if (chars >= 3 && func !== 0xffffffff) {
        const name = names[func] ?? "";
        ctx.fillStyle = highlighting && !l.highlight[i] ? theme.frameDimText : FRAME_TEXT;
        ctx.fillText(name.length <= chars ? name : `${name.slice(0, chars - 1)}…`, x + 3, y + ROW / 2);
      }
    }
    if (this.bars) {
      const geometry = this.#barGeometry();
      this.bars.paint(ctx, geometry);
      this.bars.outline(ctx, this.hoveredBar, geometry);
    }
    this.lastDrawMs = performance.now() - start;
  }

  /** The box at (`x`, `y`) CSS pixels from the canvas's top left, or -1. */
  hitTest(x, y) {
    const l = this.layout;
    if (!l) return -1;
    let t = this.tops.length - 1;
    while (t >= 0 && this.tops[t] > y) t--;
    if (t < 0) return -1;
    const depth = Math.floor((y - this.#stacksTop(t)) / ROW);
    const row = this.byRow.get(`${t}:${depth}`);
    if (!row) return -1;
    const fx = (x - GUTTER) / this.layoutWidth;
    let lo = 0;
    let hi = row.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const i = row[mid];
      if (fx < l.x[i]) hi = mid - 1;
      else if (fx >= l.x[i] + l.width[i]) lo = mid + 1;
      else return i;
    }
    return -1;
  }

  /** The window the layout shows, and the session's extent, in ns. */
  #span() {
    const l = this.layout;
    return { from: l.from, to: l.to, extent: l.extent };
  }

  /** Sets the window (kept within the session), a whole-session window as none. */
  #setWindow(from, to, replace) {
    const { extent } = this.#span();
    const span = Math.max(MIN_SPAN, to - from);
    if (span >= extent[1] - extent[0]) {
      this.ctx.state.update({ window: null }, { replace });
      return;
    }
    let f = Math.round(Math.max(extent[0], Math.min(from, extent[1] - span)));
    this.ctx.state.update({ window: [f, f + Math.round(span)] }, { replace });
  }

  #wheel(e) {
    if (!this.layout) return;
    e.preventDefault();
    const { from, to } = this.#span();
    const fx = Math.min(1, Math.max(0, (e.offsetX - GUTTER) / this.layoutWidth));
    const anchor = from + fx * (to - from);
    const factor = Math.exp(Math.max(-5, Math.min(5, e.deltaY * 0.002)));
    const span = Math.max(MIN_SPAN, (to - from) * factor);
    const left = (anchor - from) / (to - from);
    this.#setWindow(anchor - left * span, anchor - left * span + span, false);
  }

  #pointerDown(e) {
    if (!this.layout || e.button !== 0) return;
    const { from, to } = this.#span();
    this.pan = { x0: e.offsetX, from, to, moved: false };
    this.canvas.setPointerCapture(e.pointerId);
  }

  #pointerMove(e) {
    const pan = this.pan;
    if (!pan) {
      const bar = this.barAt(e.offsetX, e.offsetY);
      this.#setHoveredBar(bar, e);
      if (bar < 0) this.#setHovered(this.hitTest(e.offsetX, e.offsetY), e);
      else this.#setHovered(-1, null, false);
      return;
    }
    const dx = e.offsetX - pan.x0;
    if (!pan.moved && Math.abs(dx) < MIN_DRAG) return;
    pan.moved = true;
    const shift = (-dx / this.layoutWidth) * (pan.to - pan.from);
    this.#setWindow(pan.from + shift, pan.to + shift, true);
  }

  #pointerUp(e) {
    const pan = this.pan;
    this.pan = null;
    if (!pan || pan.moved) return;
    const bar = this.barAt(e.offsetX, e.offsetY);
    if (bar >= 0) {
      // A scope bar: select its time (which the chart then shows, as it shows any range).
      this.#barInfo(bar).then((info) => {
        if (info && info.from !== null) this.ctx.state.update({ range: [info.from, info.to] });
      });
      return;
    }
    const i = this.hitTest(e.offsetX, e.offsetY);
    if (i < 0) return;
    const l = this.layout;
    const name = this.ctx.page.names[l.func[i]];
    if (l.func[i] === 0xffffffff) {
      // A merged box: zoom into the time it spans.
      this.ctx.ask("stackBox", { serial: l.serial, index: i }).then((info) => {
        if (info && this.layout === l) this.#setWindow(info.from, info.to, false);
      });
    } else if (name !== undefined) this.ctx.state.update({ selected: name });
  }

  /** Opens the frame menu of box `i` of layout `l` at client pixels (`x`, `y`): its stack is
   * the boxes above it, and a link selects its function. */
  async #openMenu(x, y, l, i) {
    const { ask, tooltip, transformMenu } = this.ctx;
    const [info, stack] = await Promise.all([
      ask("stackBox", { serial: l.serial, index: i }),
      ask("stackBoxStack", { serial: l.serial, index: i }),
    ]);
    if (!info || !stack || this.layout !== l) return;
    tooltip.hide();
    transformMenu.open(x, y, { name: info.name, path: null, module: null, stack, link: { selected: info.name } });
  }

  /** What the worker says of scope bar `i` of the bars drawn now (null once replaced). */
  async #barInfo(i) {
    const bars = this.bars;
    const info = await this.ctx.ask("scopeBar", { which: "stackChart", serial: bars.scopes.serial, index: i });
    return this.bars === bars ? info : null;
  }

  /** Outlines scope bar `i` (-1: none) and shows its tooltip. */
  async #setHoveredBar(i, event) {
    if (i !== this.hoveredBar) {
      this.hoveredBar = i;
      this.draw();
    }
    if (i < 0 || !event) return;
    const info = await this.#barInfo(i);
    if (info && this.hoveredBar === i) this.ctx.tooltip.show(scopeBarTooltip(info), event);
  }

  /** Outlines box `i` (-1: none) and shows its tooltip (hides it for none, unless `hide` is
   * false: a scope bar's is shown). */
  async #setHovered(i, event, hide = true) {
    const { ask, tooltip } = this.ctx;
    if (i !== this.hovered) {
      this.hovered = i;
      this.draw();
    }
    if (i < 0 || !event) {
      if (hide) tooltip.hide();
      return;
    }
    const l = this.layout;
    const info = await ask("stackBox", { serial: l.serial, index: i });
    if (!info || this.layout !== l || this.hovered !== i) return;
    tooltip.show(
      `<div class="name">${escapeHtml(info.name)}</div>
${tooltip.place(info)}
<div class="span">${escapeHtml(info.spanText)}</div>`,
      event,
    );
  }
}
