// The flame graph: draws a layout computed by the wasm module on a canvas and turns pointer and
// keyboard input into hover, click, pan, zoom and focus events. It computes no weights of its
// own.
//
// The zoomed frame's ancestors are drawn below it (above it when icicle), dimmed and full
// width, so the context is never lost; clicking one zooms out to it.

import { functionColor } from "./html-and-color.js";
import { fitCanvas } from "./canvas.js";
import { canvasColors } from "./theme.js";

const ROW = 18; // CSS pixels per stack level
const PAD = 1; // gap between neighbouring frames
const FONT = "12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
// A frame's own fill is light in both themes (its label dark); the rest is the theme's
// (theme.js, style.css).
const MATCH_COLOR = "#d633ff";
const FRAME_TEXT = "#111";
const HOVER_OUTLINE = "#222";
const DRAG_PIXELS = 4; // a press that moves less than this is a click, not a pan

export class FlameGraph {
  /**
   * @param {HTMLElement} scroller the scrolling box that holds the canvas
   * @param {object} handlers `onHover(i, event)` and `onClick(i)` get a frame index (-1:
   *   none), `onAncestor(k)` the index of a clicked ancestor (0: the root), `onResize(width)`
   *   the new width in CSS pixels, `onPan(dx)` a drag by `dx` of the view's width (fraction),
   *   `onWheel(factor, at)` a zoom by `factor` (< 1: in) around `at` (a fraction of the width).
   *   `onAncestor`, `onPan` and `onWheel` may be left out: the graph then does not take
   *   those inputs (the wheel scrolls the page).
   */
  constructor(scroller, handlers) {
    this.scroller = scroller;
    this.canvas = scroller.querySelector("canvas");
    this.ctx = this.canvas.getContext("2d");
    this.handlers = handlers;
    this.layout = null;
    this.ancestors = []; // names of the zoomed frame's ancestors, root first
    this.highlighting = false; // whether layout.highlight marks what to show, dimming the rest
    this.icicle = false;
    this.hovered = -1;
    this.focused = -1; // the frame the keyboard is on
    this.lastDrawMs = 0;
    this.layoutWidth = 0;
    this.pendingFrame = 0;
    this.drag = null;
    // Where the view is within the zoomed frame when a wheel zoom shows only part of it: a
    // thin bar over the graph's top edge, the shown part marked (hidden at full width).
    this.marker = document.createElement("div");
    this.marker.className = "flame-viewport";
    this.marker.hidden = true;
    this.markerPart = document.createElement("div");
    this.markerPart.className = "flame-viewport-part";
    this.marker.append(this.markerPart);
    scroller.prepend(this.marker);
    // How far the view is scrolled from the root's end of the canvas (the bottom, or the top
    // when icicle), in CSS pixels: kept when the canvas or its box changes height, so the root
    // stays where it was (in view, on a new layout) however the panes around it settle.
    this.fromRoot = 0;
    // The box's height and its content's when last drawn. A scroll event that comes after the
    // box or the canvas changed height, before the redraw, is the browser's (clamping, or a
    // programmatic scroll's event arriving late), not the user's: it would read the new height
    // against the old position as an offset the user chose, and the redraw would keep the root
    // out of view. The redraw puts it back instead.
    this.drawnBox = [-1, -1];
    scroller.addEventListener("scroll", () => {
      const box = this.scroller;
      if (box.clientHeight !== this.drawnBox[0] || box.scrollHeight !== this.drawnBox[1]) return;
      this.fromRoot = this.#scrolledFromRoot();
    });
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
    // The pointer over the canvas (null: elsewhere), so that a new layout drawn under a still
    // pointer (another sample type, thread state or range) shows the new frame's figures.
    this.pointer = null;
    this.canvas.addEventListener("mousemove", (e) => this.#move(e));
    this.canvas.addEventListener("mouseleave", () => {
      this.pointer = null;
      this.#setHovered(-1, null);
    });
    this.canvas.addEventListener("mousedown", (e) => {
      if (e.button === 0) this.drag = { x: e.clientX, last: e.clientX, moved: false };
    });
    window.addEventListener("mouseup", (e) => {
      const drag = this.drag;
      this.drag = null;
      if (!drag || drag.moved || e.target !== this.canvas) return;
      const hit = this.hitTest(e.offsetX, e.offsetY);
      if (hit.ancestor >= 0) this.handlers.onAncestor?.(hit.ancestor);
      else if (hit.frame >= 0) this.handlers.onClick(hit.frame);
    });
    this.canvas.addEventListener(
      "wheel",
      (e) => {
        if (!this.layout || e.deltaY === 0 || e.shiftKey || !this.handlers.onWheel) return;
        e.preventDefault();
        const at = e.offsetX / Math.max(1, this.scroller.clientWidth);
        this.handlers.onWheel(Math.exp(e.deltaY * 0.002), at);
      },
      { passive: false },
    );
    window.matchMedia?.("(resolution: 1dppx)")?.addEventListener?.("change", () => this.draw());
  }

  /**
   * Shows a new layout: typed arrays `x`, `width` (fractions of the view), `depth`, `func`
   * (function ids, for colour), `highlight` (1: highlighted, as the wasm module decided, merged
   * slivers included), optionally `rgb` (each frame's fill, three bytes), plus `count`,
   * `maxDepth`, `names` and `merged` (the function id that stands for merged slivers). With `highlighting`, unhighlighted frames are dimmed.
   * `ancestors` are the names of the laid-out root's ancestors, outermost first.
   */
  setLayout(layout, width, highlighting, ancestors = []) {
    const sameRoot = this.layout && layout && this.layout.root === layout.root;
    this.layout = layout;
    this.layoutWidth = width;
    this.highlighting = highlighting;
    this.ancestors = ancestors;
    this.byDepth = layout ? indexByDepth(layout) : [];
    this.hovered = -1;
    // A new root keeps keyboard focus (on the new root) only if the keyboard was in use.
    if (!sameRoot) this.focused = this.focused >= 0 && layout && layout.count > 0 ? 0 : -1;
    else if (this.focused >= (layout?.count ?? 0)) this.focused = -1;
    if (!layout) this.showWindow(null);
    // A new root opens in view.
    if (!sameRoot) this.fromRoot = 0;
    this.draw();
    // What is under a still pointer now: its tooltip tells the new layout's figures.
    const p = this.pointer;
    if (p && layout && !this.drag) {
      const box = this.canvas.getBoundingClientRect();
      this.hovered = -1;
      this.#setHovered(this.hitTest(p.clientX - box.left, p.clientY - box.top).frame, p);
    }
  }

  /** Marks the part `[from, to)` of the zoomed frame's width the view shows (null: all). */
  showWindow(window) {
    this.marker.hidden = !window;
    if (!window) return;
    const [from, to] = window;
    this.markerPart.style.left = `${from * 100}%`;
    this.markerPart.style.width = `${(to - from) * 100}%`;
  }

  /** Root at the top (icicle) instead of the bottom. */
  setIcicle(icicle) {
    this.icicle = icicle;
    this.fromRoot = 0;
    this.draw();
  }

  /** How far the box is scrolled from the root's end of the canvas. */
  #scrolledFromRoot() {
    const box = this.scroller;
    return this.icicle ? box.scrollTop : box.scrollHeight - box.clientHeight - box.scrollTop;
  }

  /** Scrolls the box to `top` and remembers it as the offset to keep. */
  #scrollTo(top) {
    const box = this.scroller;
    box.scrollTop = top;
    this.fromRoot = this.#scrolledFromRoot();
  }

  /** Scrolls the box back to the remembered offset from the root's end. */
  #keepRootOffset() {
    const box = this.scroller;
    const top = this.icicle ? this.fromRoot : box.scrollHeight - box.clientHeight - this.fromRoot;
    if (Math.abs(box.scrollTop - top) >= 1) box.scrollTop = Math.max(0, top);
    this.drawnBox = [box.clientHeight, box.scrollHeight];
  }

  /** The canvas size in CSS pixels for the current layout and box. */
  #size() {
    const width = Math.max(1, this.scroller.clientWidth);
    const rows = this.layout ? this.layout.maxDepth + 1 + this.ancestors.length : 0;
    const height = Math.max(this.scroller.clientHeight, rows * ROW + 4);
    return { width, height };
  }

  /** The top of row `row` (0: the bottom row, or the top one when icicle) in CSS pixels. */
  #rowTop(row, height) {
    return this.icicle ? row * ROW : height - (row + 1) * ROW;
  }

  /** Redraws everything; sharp on high-DPI screens. */
  draw() {
    const start = performance.now();
    const { width, height } = this.#size();
    const ctx = fitCanvas(this.canvas, width, height, this.ctx);
    this.#keepRootOffset();
    const layout = this.layout;
    if (!layout) return;
    const theme = canvasColors();
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    const charWidth = ctx.measureText("m").width || 7;
    const label = (text, x, w, y, color) => {
      const chars = Math.floor((w - 6) / charWidth);
      if (chars < 3) return;
      ctx.fillStyle = color;
      ctx.fillText(text.length <= chars ? text : `${text.slice(0, chars - 1)}…`, x + 3, y + ROW / 2);
    };
    this.ancestors.forEach((name, row) => {
      const y = this.#rowTop(row, height);
      ctx.fillStyle = theme.frameAncestor;
      ctx.fillRect(0, y, width - PAD, ROW - PAD);
      label(name, 0, width, y, theme.frameAncestorText);
    });
    const base = this.ancestors.length;
    const colors = new Map();
    for (let i = 0; i < layout.count; i++) {
      const x = layout.x[i] * width;
      const w = layout.width[i] * width;
      if (x + w < 0 || x > width) continue;
      const y = this.#rowTop(base + layout.depth[i], height);
      const func = layout.func[i];
      const name = layout.names[func] || "all";
      ctx.fillStyle = this.#color(i, func, name, colors, theme);
      ctx.fillRect(x, y, Math.max(w - PAD, 0.5), ROW - PAD);
      if (i === this.hovered || i === this.focused) {
        ctx.strokeStyle = i === this.focused ? theme.canvasFocus : HOVER_OUTLINE;
        ctx.lineWidth = i === this.focused ? 2 : 1;
        ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - PAD - 1, 0.5), ROW - PAD - 1);
      }
      if (func !== layout.merged) {
        // Keep the label in view when the frame starts left of the canvas.
        const left = Math.max(x, 0);
        const dimmed = this.highlighting && !layout.highlight[i];
        label(name, left, Math.min(x + w, width) - left, y, dimmed ? theme.frameDimText : FRAME_TEXT);
      }
    }
    this.lastDrawMs = performance.now() - start;
  }

  #color(i, func, name, cache, theme) {
    if (this.highlighting) return this.layout.highlight[i] ? MATCH_COLOR : theme.frameDim;
    if (func === this.layout.merged) return theme.frameMerged;
    // A layout may bring its own fills (the Diff view's): three bytes per frame.
    const rgb = this.layout.rgb;
    if (rgb) return `rgb(${rgb[3 * i]}, ${rgb[3 * i + 1]}, ${rgb[3 * i + 2]})`;
    let color = cache.get(func);
    if (!color) {
      color = functionColor(name);
      cache.set(func, color);
    }
    return color;
  }

  /**
   * What is at (`x`, `y`) CSS pixels from the canvas's top left: `{frame, ancestor}`, each -1
   * when it is not one.
   */
  hitTest(x, y) {
    const none = { frame: -1, ancestor: -1 };
    const layout = this.layout;
    if (!layout) return none;
    const { width, height } = this.#size();
    const row = this.icicle ? Math.floor(y / ROW) : Math.floor((height - y) / ROW);
    if (row < 0) return none;
    if (row < this.ancestors.length) return { frame: -1, ancestor: row };
    const frames = this.byDepth[row - this.ancestors.length];
    if (!frames) return none;
    const fx = x / width;
    let lo = 0;
    let hi = frames.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const i = frames[mid];
      if (fx < layout.x[i]) hi = mid - 1;
      else if (fx >= layout.x[i] + layout.width[i]) lo = mid + 1;
      else return { frame: i, ancestor: -1 };
    }
    return none;
  }

  /** Where frame `i` is drawn, in CSS pixels relative to the canvas. */
  frameRect(i) {
    const { width, height } = this.#size();
    const l = this.layout;
    return {
      x: l.x[i] * width,
      y: this.#rowTop(this.ancestors.length + l.depth[i], height),
      width: l.width[i] * width,
      height: ROW - PAD,
    };
  }

  /**
   * Moves the keyboard focus: "left"/"right" to the neighbouring frame in the row, "up"
   * towards the leaves (the widest callee), "down" towards the root (the caller). Returns the
   * newly focused frame, or -1.
   */
  moveFocus(direction) {
    const l = this.layout;
    if (!l || l.count === 0) return -1;
    if (this.focused < 0) {
      this.focused = 0;
      this.draw();
      return 0;
    }
    const at = this.focused;
    const depth = l.depth[at];
    const overlaps = (i) => l.x[i] < l.x[at] + l.width[at] && l.x[i] + l.width[i] > l.x[at];
    let next = -1;
    if (direction === "left" || direction === "right") {
      const row = this.byDepth[depth];
      const k = row.indexOf(at) + (direction === "left" ? -1 : 1);
      next = row[k] ?? -1;
    } else {
      // Up the screen is towards the leaves unless the graph is an icicle.
      const deeper = (direction === "up") !== this.icicle;
      const row = this.byDepth[deeper ? depth + 1 : depth - 1] ?? [];
      for (const i of row) {
        if (overlaps(i) && (next < 0 || l.width[i] > l.width[next])) next = i;
      }
    }
    if (next >= 0) {
      this.focused = next;
      this.draw();
      this.#scrollIntoView(next);
    }
    return next;
  }

  #scrollIntoView(i) {
    const r = this.frameRect(i);
    const box = this.scroller;
    if (r.y < box.scrollTop) this.#scrollTo(r.y);
    else if (r.y + ROW > box.scrollTop + box.clientHeight) this.#scrollTo(r.y + ROW - box.clientHeight);
  }

  #move(event) {
    const drag = this.drag;
    if (drag) {
      if (Math.abs(event.clientX - drag.x) >= DRAG_PIXELS) drag.moved = true;
      if (drag.moved) {
        const dx = (drag.last - event.clientX) / Math.max(1, this.scroller.clientWidth);
        drag.last = event.clientX;
        if (dx !== 0) this.handlers.onPan?.(dx);
        return;
      }
    }
    this.pointer = { clientX: event.clientX, clientY: event.clientY };
    this.#setHovered(this.hitTest(event.offsetX, event.offsetY).frame, event);
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
