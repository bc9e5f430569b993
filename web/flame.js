// The flame graph: draws a layout computed by the wasm module on a canvas and turns pointer
// input into hover and click events. It computes no weights of its own.

import { functionColor } from "./format.js";

const ROW = 18; // CSS pixels per stack level
const PAD = 1; // gap between neighbouring frames
const FONT = "12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
const MERGED_COLOR = "#c8c8c8";
const DIM_COLOR = "#e4e0dc";
const MATCH_COLOR = "#d633ff";

export class FlameGraph {
  /**
   * @param {HTMLElement} scroller the scrolling box that holds the canvas
   * @param {{onHover: Function, onClick: Function, onResize: Function}} handlers `onHover` and
   *   `onClick` get a frame index (-1: none), `onResize` the new width in CSS pixels
   */
  constructor(scroller, handlers) {
    this.scroller = scroller;
    this.canvas = scroller.querySelector("canvas");
    this.ctx = this.canvas.getContext("2d");
    this.handlers = handlers;
    this.layout = null;
    this.highlighting = false; // whether layout.highlight marks what to show, dimming the rest
    this.icicle = false;
    this.hovered = -1;
    this.lastDrawMs = 0;
    this.layoutWidth = 0;
    this.pendingFrame = 0;
    // Redraw on the next frame, not inside the observer: resizing the canvas can show or hide
    // the scrollbar, which would resize the box again within the same observation.
    this.resizeObserver = new ResizeObserver(() => {
      cancelAnimationFrame(this.pendingFrame);
      this.pendingFrame = requestAnimationFrame(() => {
        const width = this.scroller.clientWidth;
        // Frames narrower than a pixel are merged by the layout, so a new width needs a new one.
        if (this.layout && width !== this.layoutWidth) this.handlers.onResize(width);
        else this.draw();
      });
    });
    this.resizeObserver.observe(scroller);
    this.canvas.addEventListener("mousemove", (e) => this.#hover(e));
    this.canvas.addEventListener("mouseleave", () => this.#setHovered(-1, null));
    this.canvas.addEventListener("click", (e) => {
      const i = this.hitTest(e.offsetX, e.offsetY);
      if (i >= 0) this.handlers.onClick(i);
    });
    window.matchMedia?.("(resolution: 1dppx)")?.addEventListener?.("change", () => this.draw());
  }

  /**
   * Shows a new layout: typed arrays `x`, `width` (fractions of the view), `depth`, `func`
   * (function ids, for colour), `highlight` (1: highlighted, as the wasm module decided, merged
   * slivers included), plus `count`, `maxDepth`, `names` and `merged` (the function id that
   * stands for merged slivers). With `highlighting`, unhighlighted frames are dimmed.
   */
  setLayout(layout, width, highlighting) {
    this.layout = layout;
    this.layoutWidth = width;
    this.highlighting = highlighting;
    this.byDepth = layout ? indexByDepth(layout) : [];
    this.hovered = -1;
    this.draw();
    if (!this.icicle) this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** Root at the top (icicle) instead of the bottom. */
  setIcicle(icicle) {
    this.icicle = icicle;
    this.draw();
    this.scroller.scrollTop = icicle ? 0 : this.scroller.scrollHeight;
  }

  /** The canvas size in CSS pixels for the current layout and box. */
  #size() {
    const width = Math.max(1, this.scroller.clientWidth);
    const rows = this.layout ? this.layout.maxDepth + 1 : 0;
    const height = Math.max(this.scroller.clientHeight, rows * ROW + 4);
    return { width, height };
  }

  /** The top of a row in CSS pixels. */
  #rowTop(depth, height) {
    return this.icicle ? depth * ROW : height - (depth + 1) * ROW;
  }

  /** Redraws everything; sharp on high-DPI screens. */
  draw() {
    const start = performance.now();
    const { width, height } = this.#size();
    const dpr = window.devicePixelRatio || 1;
    const pixelWidth = Math.round(width * dpr);
    const pixelHeight = Math.round(height * dpr);
    if (this.canvas.width !== pixelWidth || this.canvas.height !== pixelHeight) {
      this.canvas.width = pixelWidth;
      this.canvas.height = pixelHeight;
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const layout = this.layout;
    if (!layout) return;
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    const charWidth = ctx.measureText("m").width || 7;
    const colors = new Map();
    for (let i = 0; i < layout.count; i++) {
      const x = layout.x[i] * width;
      const w = layout.width[i] * width;
      const y = this.#rowTop(layout.depth[i], height);
      const func = layout.func[i];
      const name = layout.names[func] || "all";
      ctx.fillStyle = this.#color(i, func, name, colors);
      ctx.fillRect(x, y, Math.max(w - PAD, 0.5), ROW - PAD);
      if (i === this.hovered) {
        ctx.strokeStyle = "#222";
        ctx.lineWidth = 1;
        ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - PAD - 1, 0.5), ROW - PAD - 1);
      }
      const chars = Math.floor((w - 6) / charWidth);
      if (chars >= 3 && func !== layout.merged) {
        const label = name.length <= chars ? name : `${name.slice(0, chars - 1)}…`;
        ctx.fillStyle = "#111";
        ctx.fillText(label, x + 3, y + ROW / 2);
      }
    }
    this.lastDrawMs = performance.now() - start;
  }

  #color(i, func, name, cache) {
    if (this.highlighting) return this.layout.highlight[i] ? MATCH_COLOR : DIM_COLOR;
    if (func === this.layout.merged) return MERGED_COLOR;
    let color = cache.get(func);
    if (!color) {
      color = functionColor(name);
      cache.set(func, color);
    }
    return color;
  }

  /** The index of the frame at (`x`, `y`) CSS pixels from the canvas's top left, or -1. */
  hitTest(x, y) {
    const layout = this.layout;
    if (!layout) return -1;
    const { width, height } = this.#size();
    const depth = this.icicle ? Math.floor(y / ROW) : Math.floor((height - y) / ROW);
    const row = this.byDepth[depth];
    if (!row) return -1;
    const fx = x / width;
    let lo = 0;
    let hi = row.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const i = row[mid];
      if (fx < layout.x[i]) hi = mid - 1;
      else if (fx >= layout.x[i] + layout.width[i]) lo = mid + 1;
      else return i;
    }
    return -1;
  }

  /** Where frame `i` is drawn, in CSS pixels relative to the canvas. */
  frameRect(i) {
    const { width, height } = this.#size();
    const l = this.layout;
    return {
      x: l.x[i] * width,
      y: this.#rowTop(l.depth[i], height),
      width: l.width[i] * width,
      height: ROW - PAD,
    };
  }

  #hover(event) {
    const i = this.hitTest(event.offsetX, event.offsetY);
    this.#setHovered(i, event);
  }

  #setHovered(i, event) {
    if (i !== this.hovered) {
      this.hovered = i;
      this.draw();
    }
    this.handlers.onHover(i, event);
  }
}

/** For each depth, the frame indices at that depth in increasing x. */
function indexByDepth(layout) {
  const rows = Array.from({ length: layout.maxDepth + 1 }, () => []);
  for (let i = 0; i < layout.count; i++) rows[layout.depth[i]].push(i);
  for (const row of rows) row.sort((a, b) => layout.x[a] - layout.x[b]);
  return rows;
}
