// Scope bars (issue 22), shared by the timeline and the stack chart: each thread's spans as
// nested bars, its marks as thin ticks, and the polls of each task lane. The wasm module lays
// them out for the window and width a view asks for (`scopes` in the worker's answer: spans
// clipped, those narrower than a pixel merged); this draws them where the view places their
// lanes, finds the bar under the pointer, and builds a bar's tooltip from the worker's texts.

import { escapeHtml, scopeColor } from "./html-and-color.js";
import { canvasColors } from "./theme.js";

/** The kinds of bar in the worker's `columns` (viewer/src/scope_bars.rs). */
export const SPAN = 0;
export const POLL = 1;
export const MARK = 2;
const STRIDE = 7; // numbers per bar: kind, row, depth, x, width, label, count
const NONE = 0xffffffff; // the label of a merged bar
const LABEL_COLOR = "#102027"; // on a bar's own colour, light in both themes
const OUTLINE_COLOR = "#222";
const MARK_REACH = 3; // CSS pixels either side of a mark that point at it

export class ScopeBars {
  /** @param {object} scopes the `scopes` of the worker's `timeline` or `stackChart` answer */
  constructor(scopes) {
    this.scopes = scopes;
    this.columns = scopes.columns;
    this.count = this.columns.length / STRIDE;
    this.byLane = new Map(); // "kind:row:depth" -> bar indices, in the order they come (by x)
    for (let i = 0; i < this.count; i++) {
      const key = this.#key(this.kind(i), this.row(i), this.depth(i));
      let lane = this.byLane.get(key);
      if (!lane) this.byLane.set(key, (lane = []));
      lane.push(i);
    }
  }

  #key(kind, row, depth) {
    return `${kind}:${row}:${depth}`;
  }

  kind(i) {
    return this.columns[i * STRIDE];
  }

  row(i) {
    return this.columns[i * STRIDE + 1];
  }

  depth(i) {
    return this.columns[i * STRIDE + 2];
  }

  /** The lanes thread `thread` (an index into the session's threads) takes. */
  lanes(thread) {
    return this.scopes.lanes[thread] ?? 0;
  }

  /** The depths of thread `thread`'s nested scopes deeper than its lanes: not drawn. */
  deeper(thread) {
    return this.scopes.deeper?.[thread] ?? 0;
  }

  /** The text that says a thread's deeper scopes are not drawn, or null. */
  deeperText(thread) {
    const n = this.deeper(thread);
    return n > 0 ? `+${n} level${n === 1 ? "" : "s"} not shown` : null;
  }

  /** The name bar `i` shows: its scope's, mark's or task lane's; null for a merged bar. */
  name(i) {
    const label = this.columns[i * STRIDE + 5];
    if (label === NONE) return null;
    return this.kind(i) === POLL ? this.scopes.tasks[label]?.name ?? "" : this.scopes.sites[label] ?? "";
  }

  /** Where bar `i` is drawn across the graph (`left`, `width` CSS pixels): its x and width, at
   * least a pixel. */
  #span(i, left, width) {
    const o = i * STRIDE;
    return { x: left + this.columns[o + 3] * width, w: Math.max(this.columns[o + 4] * width, 1) };
  }

  /**
   * Paints every bar whose lane the view shows.
   * @param {CanvasRenderingContext2D} ctx
   * @param {object} o `left` and `width` of the graph (CSS pixels); `place(kind, row, depth)`:
   *   the lane's `{y, height}`, or null when not shown (for a mark, its thread's lanes: depth
   *   0 down to the last); `hidden(kind, row)`: whether the row's thread is hidden (greyed);
   *   `font` for the names in the bars.
   */
  paint(ctx, { left, width, place, hidden, font }) {
    ctx.save();
    const theme = canvasColors();
    ctx.font = font;
    ctx.textBaseline = "middle";
    const charWidth = ctx.measureText("m").width || 7;
    const colors = new Map();
    const marks = [];
    const labels = [];
    for (let i = 0; i < this.count; i++) {
      const kind = this.kind(i);
      if (kind === MARK) {
        marks.push(i);
        continue;
      }
      const lane = place(kind, this.row(i), this.depth(i));
      if (!lane) continue;
      const { x, w } = this.#span(i, left, width);
      const name = this.name(i);
      let color;
      if (hidden(kind, this.row(i))) color = theme.scopeHidden;
      else if (name === null) color = theme.scopeMerged;
      else {
        color = colors.get(name);
        if (!color) colors.set(name, (color = scopeColor(name)));
      }
      ctx.fillStyle = color;
      ctx.fillRect(x, lane.y, w > 2 ? w - 1 : w, lane.height);
      const chars = Math.floor((w - 6) / charWidth);
      if (name !== null && chars >= 3) {
        labels.push({ text: name.length <= chars ? name : `${name.slice(0, chars - 1)}…`, x, lane, color });
      }
    }
    ctx.fillStyle = theme.scopeMark;
    for (const i of marks) {
      const lane = place(MARK, this.row(i), 0);
      if (!lane) continue;
      const { x } = this.#span(i, left, width);
      ctx.fillRect(Math.floor(x), lane.y, 1, lane.height);
      // A small head, so a mark reads apart from a bar's edge.
      ctx.fillRect(Math.floor(x) - 1, lane.y, 3, 2);
    }
    // The bars' names last, each on its bar's colour: a mark's tick passes under a name, never
    // through it.
    for (const { text, x, lane, color } of labels) {
      ctx.fillStyle = color;
      ctx.fillRect(x + 2, lane.y + 2, ctx.measureText(text).width + 2, lane.height - 2);
      ctx.fillStyle = LABEL_COLOR;
      ctx.fillText(text, x + 3, lane.y + lane.height / 2);
    }
    ctx.restore();
  }

  /**
   * The bar at `x` CSS pixels in the lane of `kind`, `row` and `depth` (a mark within a few
   * pixels first), or -1.
   */
  at(x, kind, row, depth, { left, width }) {
    if (kind !== POLL) {
      for (const i of this.byLane.get(this.#key(MARK, row, 0)) ?? []) {
        if (Math.abs(this.#span(i, left, width).x - x) <= MARK_REACH) return i;
      }
    }
    const lane = this.byLane.get(this.#key(kind, row, depth)) ?? [];
    // Bars of a lane may overlap (guards dropped out of order, one task name polled on several
    // threads): the last drawn is on top.
    for (let k = lane.length - 1; k >= 0; k--) {
      const { x: bx, w } = this.#span(lane[k], left, width);
      if (x >= bx && x < bx + w) return lane[k];
    }
    return -1;
  }

  /** Where bar `i` is drawn, given `place` and the graph as for `paint`: `{index, kind, row,
   * depth, x, y, width, height}` in CSS pixels, or null when its lane is not shown. */
  rect(i, { left, width, place }) {
    const [kind, row, depth] = [this.kind(i), this.row(i), this.depth(i)];
    const lane = place(kind, row, depth);
    if (!lane) return null;
    const { x, w } = this.#span(i, left, width);
    return { index: i, kind, row, depth, x, y: lane.y, width: kind === MARK ? 1 : w, height: lane.height };
  }

  /** Where the bars named `name` are drawn (`rect`), in x order (for tests). */
  rectsNamed(name, geometry) {
    const out = [];
    for (let i = 0; i < this.count; i++) {
      const r = this.name(i) === name ? this.rect(i, geometry) : null;
      if (r) out.push(r);
    }
    return out.sort((a, b) => a.x - b.x);
  }

  /** Outlines bar `i` (the one under the pointer), marks excepted. */
  outline(ctx, i, geometry) {
    const r = i >= 0 && this.kind(i) !== MARK ? this.rect(i, geometry) : null;
    if (!r) return;
    ctx.strokeStyle = OUTLINE_COLOR;
    ctx.lineWidth = 1;
    ctx.strokeRect(r.x + 0.5, r.y + 0.5, Math.max(r.width - 2, 0.5), r.height - 1);
  }
}

/** A bar's tooltip (`info`: the worker's `scopeBar` answer). */
export function scopeBarTooltip(info) {
  let rows = "";
  for (let k = 0; k + 1 < info.lines.length; k += 2) {
    rows += `<tr><td>${escapeHtml(info.lines[k])}</td><td>${escapeHtml(info.lines[k + 1])}</td></tr>`;
  }
  const hint = info.from === null ? "" : '<div class="loc">Click to select its time</div>';
  return `<div class="name">${escapeHtml(info.name)}</div><table>${rows}</table>${hint}`;
}
