// The flame graph view: the canvas (flame.js), its zoom path, and the top functions beside it
// (its width set by a splitter, or hidden).
// It reads the state (zoom, selection, icicle) and asks the worker for layouts and rows.

import { FlameGraph } from "../flame.js";
import { leftHeavyToggle, showFrameTooltip, windowHandlers } from "../flame-window.js";
import { TopTable } from "../table.js";
import { renderBreadcrumbs } from "../header.js";
import { Splitter } from "../splitter.js";
import { isMenuKey } from "../transforms.js";

const TOP_ROWS = 50;
/** The narrowest the table beside the graph is made by its splitter, and the narrowest the
 * graph is left, in CSS pixels. */
const TABLE_MIN = 160;
const FLAME_MIN = 160;

export class FlameView {
  static id = "flame";
  static label = "Flame graph";

  /**
   * @param {HTMLElement} element the view's section
   * @param {object} ctx the page's context (app.js): state, page, ask, tooltip helpers
   */
  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    this.layout = null;
    this.renders = 0;
    this.drawn = Promise.resolve();
    const $ = (sel) => element.querySelector(sel);
    this.breadcrumbs = $("#breadcrumbs");
    this.icicle = $("#icicle");
    this.leftHeavy = $("#left-heavy");
    this.flame = new FlameGraph($("#flame"), {
      onHover: (i, event) => this.#hover(i, event),
      // A merged sliver's node is the heaviest of the frames it stands for (chosen by the wasm
      // module), so clicking it zooms into that one.
      onClick: (i) => this.#zoomInto(i),
      onAncestor: (k) => {
        const path = this.layout?.path;
        if (path) ctx.state.update({ zoom: path.slice(1, k + 1).map((c) => c.name), flameWindow: null });
      },
      onResize: () => ctx.page.meta && this.#draw(),
      ...windowHandlers(ctx.state, "flameWindow"),
    });
    this.leftHeavyToggle = leftHeavyToggle(this.leftHeavy, ctx.state);
    this.table = new TopTable($("#top-table"), {
      onSort: () => this.#renderTable(),
      onSelect: (func) =>
        ctx.state.update({ selected: func === null ? null : ctx.page.names[func] }),
    });
    this.icicle.addEventListener("change", (e) => ctx.state.update({ icicle: e.target.checked }));
    // The table beside the graph: its width set by the splitter (dragged, or its keys), or
    // hidden (the bar's button, or Enter on the splitter), the graph taking the rest.
    const top = $("#top");
    const body = element.querySelector(".view-body");
    const toggle = $("#top-toggle");
    this.topSplitter = new Splitter($("#top-splitter"), {
      key: "prof.topWidth",
      vertical: true,
      sign: -1,
      size: () => top.getBoundingClientRect().width,
      limits: () => ({ min: TABLE_MIN, max: Math.max(TABLE_MIN, body.clientWidth - FLAME_MIN) }),
      resize: (width) => {
        top.style.width = `${width}px`;
        top.style.maxWidth = `calc(100% - ${FLAME_MIN}px)`;
      },
      collapse: (collapsed) => {
        top.hidden = collapsed;
        toggle.textContent = collapsed ? "Show table" : "Hide table";
        toggle.setAttribute("aria-expanded", String(!collapsed));
      },
    });
    toggle.addEventListener("click", () => this.topSplitter.setCollapsed(!this.topSplitter.collapsed));
    // Transforms for a frame: right-click it, or the bar's button (the zoomed frame, else the
    // selected function).
    this.flame.canvas.addEventListener("contextmenu", (e) => {
      const l = this.layout;
      if (!l) return;
      const { frame, ancestor } = this.flame.hitTest(e.offsetX, e.offsetY);
      // A frame (not a merged sliver), or one of the dimmed ancestors of the zoomed frame.
      const node = frame >= 0 && l.func[frame] !== l.merged ? l.node[frame] : l.path[ancestor]?.node;
      if (node === undefined || node === l.path[0]?.node) return;
      e.preventDefault();
      this.ctx.tooltip.hide();
      this.#openMenu(e.clientX, e.clientY, node);
    });
    this.transformButton = $("#transform-frame");
    this.transformButton.addEventListener("click", (e) => {
      const rect = e.target.getBoundingClientRect();
      const { zoom, selected } = ctx.state.current;
      if (zoom.length && this.layout) this.#openMenu(rect.left, rect.bottom, this.layout.root);
      else if (selected !== null) ctx.transformMenu.open(rect.left, rect.bottom, { name: selected, path: null, module: null });
    });
  }

  /** Empties the view (no profile). */
  clear() {
    this.layout = null;
    this.table.setRows([]);
    this.flame.setLayout(null, 0, false);
    this.breadcrumbs.replaceChildren();
  }

  async #zoomInto(i) {
    const zoom = await this.ctx.ask("namePath", { node: this.layout.node[i] });
    if (zoom) this.ctx.state.update({ zoom, flameWindow: null });
  }

  /** Keyboard: arrows move between frames, Enter zooms into the focused one. Returns whether
   * the key was used. */
  onKey(event) {
    const moves = { ArrowLeft: "left", ArrowRight: "right", ArrowUp: "up", ArrowDown: "down" };
    if (moves[event.key]) {
      const i = this.flame.moveFocus(moves[event.key]);
      if (i >= 0) this.#hoverFocused(i);
      return true;
    }
    if (event.key === "Enter" && this.flame.focused >= 0 && this.layout) {
      this.#zoomInto(this.flame.focused);
      return true;
    }
    // The Menu key or Shift+F10: the focused frame's menu, beside it.
    const i = this.flame.focused;
    const l = this.layout;
    if (isMenuKey(event) && i >= 0 && l && l.func[i] !== l.merged) {
      const rect = this.flame.frameRect(i);
      const box = this.flame.canvas.getBoundingClientRect();
      this.ctx.tooltip.hide();
      this.#openMenu(box.left + Math.max(rect.x, 0) + 8, box.top + rect.y + rect.height, l.node[i]);
      return true;
    }
    return false;
  }

  /** Shows the tooltip of the keyboard-focused frame beside it. */
  #hoverFocused(i) {
    const rect = this.flame.frameRect(i);
    const box = this.flame.canvas.getBoundingClientRect();
    this.flame.hovered = i;
    this.#hover(i, { clientX: box.left + Math.max(rect.x, 0) + 8, clientY: box.top + rect.y + 8 });
  }

  /** Draws its canvas again, in the colours of the theme now shown (theme.js). */
  redraw() {
    this.flame.draw();
  }

  /**
   * Brings the view up to date with the state; `changed` is the set of state keys that changed
   * (everything, on a new profile). `highlighting` says whether a search or selection is shown.
   */
  async render(changed) {
    const current = this.ctx.state.current;
    const all = changed.has("samples");
    if (changed.has("icicle") || all) {
      this.icicle.checked = current.icicle;
      this.flame.setIcicle(current.icicle);
    }
    this.leftHeavyToggle.sync();
    this.transformButton.disabled = !current.zoom.length && current.selected === null;
    const tasks = [];
    // What changes the call tree: the samples chosen (threads, range) and the transforms.
    const samples = ["threads", "range", "transforms"].some((k) => changed.has(k));
    // The flame graph first: the worker answers in order, and it is what the page shows first.
    const drawn = ["zoom", "search", "selected", "view", "flameWindow", "leftHeavy"];
    if (all || samples || drawn.some((k) => changed.has(k))) {
      tasks.push(this.#draw());
    }
    if (all || samples || changed.has("view")) tasks.push(this.#renderTable());
    else {
      if (changed.has("selected")) this.#selectRow();
      if (changed.has("search")) this.table.mark(this.ctx.page.searchMask);
    }
    await Promise.all(tasks);
  }

  /** Resolves once the newest flame graph is drawn. */
  settled() {
    return this.drawn;
  }

  #draw() {
    this.drawn = this.#layoutAndDraw();
    return this.drawn;
  }

  async #layoutAndDraw() {
    const { ask, state, page } = this.ctx;
    const render = ++this.renders;
    const width = Math.max(1, this.flame.scroller.clientWidth);
    const { zoom, flameWindow, leftHeavy } = state.current;
    const layout = await ask("layout", { zoomPath: zoom, width, window: flameWindow, leftHeavy });
    if (!layout || render !== this.renders) return;
    layout.names = page.names;
    this.layout = layout;
    // The zoomed frame's ancestors stay in view, dimmed, below it.
    const ancestors = layout.path.slice(0, -1).map((c) => c.name);
    this.flame.setLayout(layout, width, page.highlighting, ancestors);
    this.flame.showWindow(flameWindow);
    renderBreadcrumbs(this.breadcrumbs, layout.path, (i) =>
      state.update({ zoom: layout.path.slice(1, i + 1).map((c) => c.name), flameWindow: null }),
    );
    // The current crumb is the last: keep it in view however long the path.
    this.breadcrumbs.lastElementChild?.scrollIntoView({ block: "nearest", inline: "end" });
  }

  async #renderTable() {
    const rows = await this.ctx.ask("top", { n: TOP_ROWS, sort: this.table.sortBy });
    if (rows) this.table.setRows(rows);
    this.#selectRow();
    this.table.mark(this.ctx.page.searchMask);
  }

  #selectRow() {
    const selected = this.ctx.state.current.selected;
    const func = selected === null ? -1 : this.ctx.page.names.indexOf(selected);
    this.table.select(func >= 0 ? func : null);
  }

  #hover(index, event) {
    return showFrameTooltip(this, index, event, {
      weightQuestion: "weightTexts",
      nodeQuestion: "node",
      nodeHtml: (info) => this.ctx.tooltip.node(info),
    });
  }

  /** Opens the frame menu for call tree node `node` at client pixels (`x`, `y`): its stack
   * is its path, and a link selects its function and node. */
  async #openMenu(x, y, node) {
    const { ask, transformMenu } = this.ctx;
    const [path, module] = await Promise.all([ask("namePath", { node }), ask("nodeModule", { node })]);
    if (!path || !path.length) return;
    const name = path[path.length - 1];
    transformMenu.open(x, y, { name, path, module, stack: path, link: { selected: name, node: path, inverted: false } });
  }

  /** Where the frames of function `name` are drawn, relative to the canvas (for tests). */
  framesNamed(name) {
    const l = this.layout;
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (l.names[l.func[i]] === name) out.push({ index: i, ...this.flame.frameRect(i) });
    }
    return out;
  }
}
