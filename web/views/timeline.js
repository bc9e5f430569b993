// The timeline, above every view: one track per thread, its samples over time as an activity
// graph (the wasm module buckets them: bar heights, each bucket's hottest function, and the share
// a search or selection matches), after the transforms and of the samples the Time (running or
// waiting), scope and task filters keep, like every view: samples they leave out are not drawn,
// and a track's label tells its weight in the window. Dragging across it selects a time range (state `range`), which
// every view follows; the chip shows the range and clears it; "Zoom to selection" narrows the
// window the timeline shows (state `window`). Clicking a thread's label shows or hides it.
// A session with scopes (issue 22) gets each thread's spans as nested bars under its track and
// its marks as ticks, and, with tasks, one lane per task name with its polls below the threads
// (scope-bars.js): hovering a bar tells what it is, clicking it selects its time.

import { functionColor, escapeHtml } from "../html-and-color.js";
import { showIfTimed } from "./untimed.js";
import { fitCanvas } from "../canvas.js";
import { canvasColors } from "../theme.js";
import { MARK, POLL, SPAN, ScopeBars, scopeBarTooltip } from "../scope-bars.js";
import { GUTTER, drawTicks, graphWidth } from "../time-axis.js";

const AXIS = 16; // CSS pixels for the time axis at the top
const TRACK = 24; // CSS pixels per thread
const FONT = "11px system-ui, sans-serif";
const MATCH_COLOR = "#d633ff";
/** The part of a bar its thread spent waiting (off CPU, wall mode): pale, under the colour of
 * the time it ran. */
const MIN_DRAG = 3; // CSS pixels a drag must span to select a range
const LANE = 13; // CSS pixels per scope lane under a thread's track, and per task lane
const LANES = 4; // scope lanes (nesting depths) at most under each thread
const TASK_LANES = 8; // task lanes at most; a last row says how many more task names there are
const TASK_HEADER = 16; // CSS pixels for the row that opens the task lanes
const BAR_FONT = "10px system-ui, sans-serif";

export class Timeline {
  /**
   * @param {HTMLElement} element the timeline's section (index.html)
   * @param {object} ctx the page's context (app.js): state, page, ask, tooltip helpers
   */
  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    const $ = (sel) => element.querySelector(sel);
    this.scroller = $(".timeline-tracks");
    this.canvas = $("canvas");
    this.chip = $("#range-chip");
    this.chipText = $("#range-chip .text");
    this.zoomButton = $("#zoom-range");
    this.resetButton = $("#zoom-reset");
    this.windowText = $("#window-text");
    this.bar = $(".timeline-bar");
    this.none = $(".timeline-none");
    this.data = null;
    this.bars = null; // the data's scope bars (ScopeBars), if the session has any
    this.rows = { tops: [], trackOf: [], tasksTop: 0, height: AXIS };
    this.hovered = -1; // the scope bar under the pointer
    this.drag = null; // {x0, x1} in CSS pixels while selecting
    this.renders = 0;
    this.lastDrawMs = 0;
    this.fetchedWidth = 0;
    this.drawn = Promise.resolve();
    $("#range-chip button").addEventListener("click", () => ctx.state.update({ range: null }));
    this.zoomButton.addEventListener("click", () => {
      const range = ctx.state.current.range;
      if (range) ctx.state.update({ window: range });
    });
    this.resetButton.addEventListener("click", () => ctx.state.update({ window: null }));
    // The axis is drawn at the top of what is in view (see draw).
    this.scroller.addEventListener("scroll", () => this.draw(), { passive: true });
    this.canvas.addEventListener("pointerdown", (e) => this.#pointerDown(e));
    this.canvas.addEventListener("pointermove", (e) => this.#pointerMove(e));
    this.canvas.addEventListener("pointerup", (e) => this.#pointerUp(e));
    this.canvas.addEventListener("pointercancel", () => {
      this.drag = null;
      this.draw();
    });
    this.canvas.addEventListener("mouseleave", () => {
      ctx.tooltip.hide();
      if (this.hovered >= 0) {
        this.hovered = -1;
        this.draw();
      }
    });
    let pending = 0;
    new ResizeObserver(() => {
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(() => {
        if (this.scroller.hidden) return;
        if (this.data && this.#graphWidth() !== this.fetchedWidth) this.#fetch();
        else this.draw();
      });
    }).observe(this.scroller);
  }

  /** Empties the timeline (no profile). */
  clear() {
    this.data = null;
    this.bars = null;
    this.bar.hidden = true;
    this.none.hidden = true;
    this.scroller.hidden = false;
    this.drag = null;
    this.chip.hidden = true;
    this.windowText.textContent = "";
    this.draw();
  }

  /** Brings the timeline up to date with the state; `changed` is the set of changed keys. */
  async render(changed) {
    if (!showIfTimed(this.ctx, this.scroller, this.none)) {
      this.data = null;
      this.bars = null;
      this.bar.hidden = true;
      this.drawn = Promise.resolve();
      return;
    }
    const tasks = [];
    if (changed.has("range") || changed.has("samples")) tasks.push(this.#renderChip());
    // The buckets cover every thread and the whole window, whatever threads and range are
    // chosen (those only dim and shade), but follow the transforms. What a search matches
    // depends on the threads and range shown (app.js runs it again), so with a highlight those
    // ask again too; without one they only redraw: passing over every sample again took most of
    // a thread change's time on 10M samples.
    const { highlighting } = this.ctx.page;
    const keys = ["samples", "window", "transforms", "search", "selected"];
    if (highlighting) keys.push("threads", "range");
    if (keys.some((k) => changed.has(k))) tasks.push(this.#fetch());
    else if (changed.has("threads") || changed.has("range")) this.draw();
    // The bar (window, range chip, zoom buttons) shows only when there is a range or a zoom, over
    // the top right of the tracks (style.css): it takes no room from the views, and showing it
    // moves nothing.
    const { range, window } = this.ctx.state.current;
    this.bar.hidden = range === null && window === null;
    await Promise.all(tasks);
  }

  /** Resolves once the newest timeline is drawn. */
  settled() {
    return this.drawn;
  }

  #graphWidth() {
    return graphWidth(this.scroller);
  }

  #fetch() {
    this.drawn = this.#fetchAndDraw();
    return this.drawn;
  }

  async #fetchAndDraw() {
    const render = ++this.renders;
    const width = this.#graphWidth();
    const data = await this.ctx.ask("timeline", {
      window: this.ctx.state.current.window,
      buckets: width,
      width,
      depth: LANES,
      tasks: TASK_LANES,
    });
    if (!data || render !== this.renders) return;
    this.fetchedWidth = width;
    this.data = data;
    this.bars = data.scopes ? new ScopeBars(data.scopes) : null;
    this.hovered = -1;
    this.#layRows();
    this.windowText.textContent = data.windowText;
    this.resetButton.disabled = this.ctx.state.current.window === null;
    this.draw();
  }

  async #renderChip() {
    const range = this.ctx.state.current.range;
    this.zoomButton.disabled = range === null;
    if (!range) {
      this.chip.hidden = true;
      return;
    }
    const text = await this.ctx.ask("rangeText", { range });
    if (text === null || this.ctx.state.current.range !== range) return;
    this.chipText.textContent = text;
    this.chip.hidden = false;
  }

  /** Which tracks' threads are shown (the thread set). */
  #shown(index) {
    const threads = this.ctx.state.current.threads;
    return threads === null || threads.includes(index);
  }

  /** The x of time `t` (ns) in CSS pixels, given the data's window. */
  xOfTime(t) {
    const d = this.data;
    return GUTTER + ((t - d.from) / (d.to - d.from)) * this.#graphWidth();
  }

  /** The time (ns, whole) at `x` CSS pixels, within the window. */
  timeAt(x) {
    const d = this.data;
    const f = Math.min(1, Math.max(0, (x - GUTTER) / this.#graphWidth()));
    return Math.round(d.from + f * (d.to - d.from));
  }

  /** Where track `i`'s activity graph is drawn, in CSS pixels relative to the canvas (for
   * tests); its scope lanes follow it. */
  trackRect(i) {
    return { x: GUTTER, y: this.rows.tops[i] ?? AXIS + i * TRACK, width: this.#graphWidth(), height: TRACK };
  }

  /** Each track's top (its scope lanes make it taller), each thread's track, and where the
   * task lanes start. */
  #layRows() {
    const d = this.data;
    const tops = [];
    const trackOf = [];
    let y = AXIS;
    for (let t = 0; d && t < d.threads.length; t++) {
      tops.push(y);
      trackOf[d.threads[t]] = t;
      y += this.#trackHeight(t);
    }
    const tasksTop = y;
    const tasks = this.bars?.scopes.tasks ?? [];
    if (tasks.length > 0) y += TASK_HEADER + (tasks.length + (this.bars.scopes.moreText ? 1 : 0)) * LANE;
    this.rows = { tops, trackOf, tasksTop, height: y };
  }

  /** The height of track `t`: its activity graph, and its scope lanes if it has any. */
  #trackHeight(t) {
    const lanes = this.bars ? this.bars.lanes(this.data.threads[t]) : 0;
    return TRACK + (lanes > 0 ? lanes * LANE + 2 : 0);
  }

  /** What is at `y` CSS pixels: `{track}` (a thread's track, `lane` set in its scope lanes),
   * `{task}` (a task lane; `more` for the row of task names not shown), `{header}`, or null. */
  #rowAt(y) {
    const { tops, tasksTop, height } = this.rows;
    // The axis covers the top of what is in view.
    if (y < this.scroller.scrollTop + AXIS || y >= height) return null;
    if (y < tasksTop) {
      let t = tops.length - 1;
      while (t > 0 && tops[t] > y) t--;
      const below = y - tops[t] - TRACK;
      return { track: t, lane: below >= 0 ? Math.min(Math.floor(below / LANE), this.bars.lanes(this.data.threads[t]) - 1) : -1 };
    }
    const k = Math.floor((y - tasksTop - TASK_HEADER) / LANE);
    if (k < 0) return { header: true };
    const tasks = this.bars.scopes.tasks;
    return k < tasks.length ? { task: k } : { more: true };
  }

  /** The graph's geometry and the lanes' places, as ScopeBars draws and hit-tests them. */
  #barGeometry() {
    const { tops, trackOf, tasksTop } = this.rows;
    const threads = this.data.threads;
    return {
      left: GUTTER,
      width: this.#graphWidth(),
      font: BAR_FONT,
      place: (kind, row, depth) => {
        if (kind === POLL) return { y: tasksTop + TASK_HEADER + row * LANE + 1, height: LANE - 2 };
        const t = trackOf[row];
        if (t === undefined) return null;
        const top = tops[t] + TRACK;
        if (kind === MARK) return { y: top, height: this.bars.lanes(threads[t]) * LANE };
        return { y: top + depth * LANE + 1, height: LANE - 2 };
      },
      hidden: (kind, row) => kind !== POLL && !this.#shown(row),
    };
  }

  /** Where the scope or task bars named `name` are drawn, in CSS pixels relative to the canvas
   * (for tests). */
  barsNamed(name) {
    return this.bars ? this.bars.rectsNamed(name, this.#barGeometry()) : [];
  }

  /** Redraws everything from the last data; sharp on high-DPI screens. */
  draw() {
    const start = performance.now();
    const d = this.data;
    const tracks = d ? d.threads.length : 0;
    const width = Math.max(1, this.scroller.clientWidth);
    const height = (d ? this.rows.height : AXIS) + 2;
    const ctx = fitCanvas(this.canvas, width, height);
    if (!d) return;
    const graph = this.#graphWidth();
    const barWidth = graph / d.buckets;
    const names = this.ctx.page.names;
    const highlighting = this.ctx.page.highlighting;
    const theme = canvasColors();
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    // The tracks: bars batched by colour (one path per colour).
    const paths = new Map();
    const path = (color) => {
      let p = paths.get(color);
      if (!p) paths.set(color, (p = new Path2D()));
      return p;
    };
    const colors = new Map();
    for (let t = 0; t < tracks; t++) {
      const top = this.rows.tops[t];
      const shown = this.#shown(d.threads[t]);
      const trackHeight = this.bars ? this.#trackHeight(t) : TRACK;
      ctx.fillStyle = shown ? theme.canvasBg : theme.canvasHiddenBg;
      ctx.fillRect(0, top, width, trackHeight - 1);
      ctx.fillStyle = theme.canvasRule;
      ctx.fillRect(0, top + trackHeight - 1, width, 1);
      ctx.fillStyle = shown ? theme.canvasText : theme.canvasFaint;
      ctx.fillText(ellipsize(ctx, d.labels[t], GUTTER - 10), 6, top + TRACK / 2);
      const deeper = this.bars?.deeperText(d.threads[t]);
      if (deeper) {
        // In the gutter beside the last lane: the scopes nested deeper are not drawn.
        const lanes = this.bars.lanes(d.threads[t]);
        ctx.fillStyle = theme.canvasMuted;
        ctx.fillText(ellipsize(ctx, deeper, GUTTER - 16), 12, top + TRACK + (lanes - 1) * LANE + LANE / 2);
      }
      const base = top + TRACK - 2;
      const full = TRACK - 5;
      for (let b = 0; b < d.buckets; b++) {
        const i = t * d.buckets + b;
        const h = d.height[i] * full;
        if (h <= 0) continue;
        const x = GUTTER + b * barWidth;
        const w = Math.max(barWidth, 1);
        let color;
        if (!shown) color = theme.trackHidden;
        else if (highlighting) color = theme.trackDim;
        else {
          const func = d.hottest[i];
          color = colors.get(func);
          if (!color) colors.set(func, (color = functionColor(names[func] ?? "")));
        }
        // The time spent waiting is the bar's pale upper part; the running part keeps its colour.
        const waiting = shown ? Math.min(d.waiting[i] * full, h) : 0;
        const running = h - waiting;
        if (running > 0) path(color).rect(x, base - Math.max(running, 1), w, Math.max(running, 1));
        if (waiting > 0) path(theme.trackWaiting).rect(x, base - h, w, Math.max(waiting, 1));
        const m = d.matched[i] * full;
        if (shown && highlighting && m > 0) path(MATCH_COLOR).rect(x, base - Math.max(m, 1), w, Math.max(m, 1));
      }
    }
    for (const [color, p] of paths) {
      if (color === MATCH_COLOR) continue;
      ctx.fillStyle = color;
      ctx.fill(p);
    }
    if (paths.has(MATCH_COLOR)) {
      ctx.fillStyle = MATCH_COLOR;
      ctx.fill(paths.get(MATCH_COLOR));
    }
    if (this.bars) this.#drawBars(ctx, width);
    // Each process's tracks, when there are several: a rule above them and its label.
    for (const group of d.groups ?? []) {
      const top = this.rows.tops[group.track];
      ctx.fillStyle = theme.canvasGroup;
      ctx.fillRect(0, top, width, 2);
      const text = ellipsize(ctx, group.label, graph / 2);
      const w = ctx.measureText(text).width + 8;
      ctx.fillStyle = theme.canvasGroupBg;
      ctx.fillRect(GUTTER + graph - w, top + 2, w, TRACK / 2 + 2);
      ctx.fillStyle = theme.canvasGroup;
      ctx.fillText(text, GUTTER + graph - w + 4, top + 2 + TRACK / 4 + 1);
    }
    // The selection: the range chosen, or the one being dragged.
    let sel = null;
    if (this.drag) sel = [Math.min(this.drag.x0, this.drag.x1), Math.max(this.drag.x0, this.drag.x1)];
    else if (this.ctx.state.current.range) {
      const [from, to] = this.ctx.state.current.range;
      sel = [this.xOfTime(from), this.xOfTime(to)];
    }
    if (sel) {
      const left = Math.max(GUTTER, Math.min(GUTTER + graph, sel[0]));
      const right = Math.max(GUTTER, Math.min(GUTTER + graph, sel[1]));
      ctx.fillStyle = theme.canvasShade;
      ctx.fillRect(GUTTER, AXIS, left - GUTTER, height - AXIS);
      ctx.fillRect(right, AXIS, GUTTER + graph - right, height - AXIS);
      ctx.fillStyle = theme.canvasFocus;
      if (sel[0] >= GUTTER && sel[0] <= GUTTER + graph) ctx.fillRect(left - 1, AXIS, 2, height - AXIS);
      if (sel[1] >= GUTTER && sel[1] <= GUTTER + graph) ctx.fillRect(right - 1, AXIS, 2, height - AXIS);
    }
    // The axis, last and at the top of what the scrolling box shows: scrolled down to the task
    // lanes, the tracks pass under it and the time ruler stays in view.
    const top = Math.min(this.scroller.scrollTop, Math.max(0, height - AXIS));
    ctx.fillStyle = theme.canvasBg;
    ctx.fillRect(0, top, width, AXIS);
    ctx.font = FONT;
    ctx.fillStyle = theme.canvasMuted;
    drawTicks(ctx, d.ticks, GUTTER, graph, top, AXIS, 4);
    this.lastDrawMs = performance.now() - start;
  }

  /** The task lanes' labels and rows, and the scope bars over the tracks. */
  #drawBars(ctx, width) {
    const theme = canvasColors();
    const { tasksTop, height } = this.rows;
    const { tasks, moreText } = this.bars.scopes;
    if (tasks.length > 0) {
      ctx.fillStyle = theme.canvasTasksBg;
      ctx.fillRect(0, tasksTop, width, height - tasksTop);
      ctx.fillStyle = theme.canvasGroup;
      ctx.fillRect(0, tasksTop, width, 2);
      ctx.fillText("Tasks", 6, tasksTop + TASK_HEADER / 2 + 1);
      ctx.fillStyle = theme.canvasText;
      for (let k = 0; k < tasks.length; k++) {
        const y = tasksTop + TASK_HEADER + k * LANE;
        ctx.fillText(ellipsize(ctx, tasks[k].name, GUTTER - 16), 12, y + LANE / 2);
      }
      if (moreText) {
        ctx.fillStyle = theme.canvasMuted;
        ctx.fillText(ellipsize(ctx, moreText, GUTTER - 16), 12, tasksTop + TASK_HEADER + tasks.length * LANE + LANE / 2);
      }
    }
    const geometry = this.#barGeometry();
    this.bars.paint(ctx, geometry);
    this.bars.outline(ctx, this.hovered, geometry);
  }

  /** The scope or task bar at (`x`, `y`) CSS pixels, or -1. */
  #barAt(x, y) {
    if (!this.bars || x < GUTTER) return -1;
    const row = this.#rowAt(y);
    if (!row) return -1;
    const geometry = this.#barGeometry();
    if (row.task !== undefined) return this.bars.at(x, POLL, row.task, 0, geometry);
    if (row.track !== undefined && row.lane >= 0) {
      return this.bars.at(x, SPAN, this.data.threads[row.track], row.lane, geometry);
    }
    return -1;
  }

  /** Selects the time of scope or task bar `i` (a mark has none). */
  async #selectBar(i) {
    const info = await this.#barInfo(i);
    if (info && info.from !== null) this.ctx.state.update({ range: [info.from, info.to] });
  }

  /** What the worker says of bar `i` of the bars drawn now (null once they are replaced). */
  async #barInfo(i) {
    const bars = this.bars;
    const info = await this.ctx.ask("scopeBar", { which: "timeline", serial: bars.scopes.serial, index: i });
    return this.bars === bars ? info : null;
  }

  #pointerDown(e) {
    if (!this.data || e.button !== 0) return;
    if (e.offsetX < GUTTER) {
      const row = this.#rowAt(e.offsetY);
      if (row?.track !== undefined) this.#toggleThread(row.track);
      return;
    }
    this.drag = { x0: e.offsetX, x1: e.offsetX };
    this.canvas.setPointerCapture(e.pointerId);
    e.preventDefault();
  }

  #pointerMove(e) {
    if (this.drag) {
      this.drag.x1 = e.offsetX;
      this.draw();
      return;
    }
    this.#hover(e);
  }

  #pointerUp(e) {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    drag.x1 = e.offsetX;
    if (Math.abs(drag.x1 - drag.x0) < MIN_DRAG) {
      // A click: on a scope or task bar, it selects the bar's time.
      const i = this.#barAt(drag.x0, e.offsetY);
      if (i >= 0) this.#selectBar(i);
      this.draw();
      return;
    }
    const from = this.timeAt(Math.min(drag.x0, drag.x1));
    const to = this.timeAt(Math.max(drag.x0, drag.x1));
    if (to > from) this.ctx.state.update({ range: [from, to] });
    else this.draw();
  }

  /** Shows or hides the thread of track `t`. */
  #toggleThread(t) {
    const d = this.data;
    if (t < 0 || t >= d.threads.length) return;
    const all = this.ctx.page.threads.map((u) => u.index);
    const current = this.ctx.state.current.threads ?? all;
    const thread = d.threads[t];
    this.ctx.tooltip.hide(); // it says what a click would do: no longer true
    const next = current.includes(thread)
      ? current.filter((i) => i !== thread)
      : all.filter((i) => i === thread || current.includes(i));
    this.ctx.state.update({ threads: next.length === all.length ? null : next, zoom: [] });
  }

  /** The hovered scope or task bar, the bucket's hottest function, or the label's thread or
   * task lane. */
  async #hover(e) {
    const d = this.data;
    const { tooltip, page } = this.ctx;
    const row = d ? this.#rowAt(e.offsetY) : null;
    const bar = this.#barAt(e.offsetX, e.offsetY);
    if (bar !== this.hovered) {
      this.hovered = bar;
      this.draw();
    }
    if (bar >= 0) {
      const info = await this.#barInfo(bar);
      if (info && this.hovered === bar) tooltip.show(scopeBarTooltip(info), e);
      return;
    }
    if (row?.task !== undefined && e.offsetX < GUTTER) {
      const task = this.bars.scopes.tasks[row.task];
      tooltip.show(`<div class="name">${escapeHtml(task.name)}</div><div class="loc">${escapeHtml(task.text)}</div>`, e);
      return;
    }
    const t = row?.track;
    if (t === undefined || (row.lane >= 0 && e.offsetX >= GUTTER)) {
      tooltip.hide();
      return;
    }
    if (e.offsetX < GUTTER) {
      const shown = this.#shown(d.threads[t]);
      tooltip.show(
        `<div class="name">${escapeHtml(d.labels[t])}</div><table><tr><td>Shown</td><td>${escapeHtml(d.totals[t])}</td></tr></table><div class="loc">Click to ${shown ? "hide" : "show"} this thread; drag across the tracks to select a time range</div>`,
        e,
      );
      return;
    }
    const b = Math.floor(((e.offsetX - GUTTER) / this.#graphWidth()) * d.buckets);
    const func = d.hottest[t * d.buckets + b];
    if (func === undefined || page.names[func] === undefined) {
      tooltip.hide();
      return;
    }
    tooltip.show(`<div class="loc">Hottest here</div><div class="name">${escapeHtml(page.names[func])}</div>`, e);
  }
}

/** `text` cut with an ellipsis to fit `width` CSS pixels in the context's font. */
function ellipsize(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(`${text.slice(0, n)}…`).width > width) n--;
  return `${text.slice(0, n)}…`;
}
