// The sandwich view: one function (the selected one, picked in any view) with its callers
// above and its callees below, each a flame graph of the function merged across all its call
// sites, meeting at the function; its self and total between them. Clicking a frame in either
// graph selects that function, which re-centres the sandwich on it. The wheel zooms and a drag
// pans either graph, as in the flame graph (the visible parts are the state's `callersWindow`
// and `calleesWindow`). Layouts and texts come from the wasm module (the core's
// `CallTree::callers` and `callees`). Right-click a frame for its menu (copy its name, stack or
// a link; its transforms).

import { FlameGraph } from "../flame.js";
import { windowHandlers } from "../flame-window.js";
import { escapeHtml } from "../html-and-color.js";
import { fitName } from "../elide.js";

/** The state key holding each side's visible part. */
const WINDOW_KEYS = { callers: "callersWindow", callees: "calleesWindow" };

export class SandwichView {
  static id = "sandwich";
  static label = "Sandwich";

  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    const $ = (sel) => element.querySelector(sel);
    this.empty = $(".sandwich-empty");
    this.content = $(".sandwich-content");
    this.summary = $(".sandwich-function");
    this.name = null; // the function shown
    this.layouts = { callers: null, callees: null };
    this.renders = 0;
    this.drawn = Promise.resolve();
    const graph = (side) =>
      new FlameGraph($(`.sandwich-${side}`), {
        onHover: (i, event) => this.#hover(side, i, event),
        onClick: (i) => this.#click(side, i),
        onResize: () => this.name !== null && this.#draw(),
        ...windowHandlers(ctx.state, WINDOW_KEYS[side]),
      });
    // Callers grow upwards from the function at the bottom (a flame graph); callees hang
    // down from it at the top (an icicle): both meet at the function.
    this.callers = graph("callers");
    this.callees = graph("callees");
    this.callees.setIcicle(true);
    // A frame's menu: right-click it.
    for (const side of ["callers", "callees"]) {
      const graph = this.#graph(side);
      graph.canvas.addEventListener("contextmenu", (e) => {
        const l = this.layouts[side];
        const { frame } = graph.hitTest(e.offsetX, e.offsetY);
        if (!l || frame < 0 || l.func[frame] === l.merged) return;
        e.preventDefault();
        this.#openMenu(e.clientX, e.clientY, side, l.node[frame]);
      });
    }
  }

  /** Opens the frame menu of node `node` of one side at client pixels (`x`, `y`): its stack
   * is the part through this function, and a link shows the Sandwich of its function. */
  async #openMenu(x, y, side, node) {
    const { ask, tooltip, transformMenu } = this.ctx;
    const name = this.name;
    const callers = side === "callers";
    const [info, stack] = await Promise.all([
      ask("sandwichNode", { name, callers, node }),
      ask("sandwichStack", { name, callers, node }),
    ]);
    if (!info || !stack || this.name !== name) return;
    tooltip.hide();
    transformMenu.open(x, y, {
      name: info.name,
      path: null,
      module: null,
      stack,
      link: { selected: info.name },
    });
  }

  clear() {
    this.name = null;
    this.layouts = { callers: null, callees: null };
    this.callers.setLayout(null, 0, false);
    this.callees.setLayout(null, 0, false);
    this.summary.replaceChildren();
    this.#showEmpty("Select a function to see its callers and callees.");
  }

  /** Draws its canvases again, in the colours of the theme now shown (theme.js). */
  redraw() {
    this.callers.draw();
    this.callees.draw();
  }

  async render(changed) {
    if (["samples", "threads", "range", "transforms", "selected", "view"].some((k) => changed.has(k))) {
      await this.#draw();
    } else if ([...Object.values(WINDOW_KEYS), "search"].some((k) => changed.has(k)) && this.name !== null) {
      // A wheel zoom, a pan or a search: the graphs are laid out again, the summary stays.
      this.drawn = this.#drawSides(++this.renders, this.name, Object.keys(WINDOW_KEYS));
      await this.drawn;
    }
  }

  /** Resolves once the newest sandwich is drawn. */
  settled() {
    return this.drawn;
  }

  #draw() {
    this.drawn = this.#layoutAndDraw();
    return this.drawn;
  }

  #showEmpty(text) {
    this.empty.textContent = text;
    this.empty.hidden = false;
    this.content.hidden = true;
  }

  async #layoutAndDraw() {
    const { ask, state } = this.ctx;
    const render = ++this.renders;
    const name = state.current.selected;
    if (name === null) {
      this.name = null;
      this.#showEmpty(
        "No function is selected. Pick one by clicking a row of the Top functions or the Call tree, " +
          "or a function in the side table of the Flame graph, and its callers and callees show here.",
      );
      return;
    }
    const summary = await ask("sandwichSummary", { name });
    if (render !== this.renders) return;
    if (!summary) {
      this.name = null;
      this.#showEmpty(`${name} has no samples in what is shown (threads and range).`);
      return;
    }
    this.empty.hidden = true;
    this.content.hidden = false;
    this.name = name;
    this.summary.innerHTML = `<span class="name" title="${escapeHtml(summary.name)}">${escapeHtml(summary.name)}</span>
<span class="fact">Self <b class="self-time">${escapeHtml(summary.selfText)}</b> <span class="self-pct">${escapeHtml(summary.selfPct)}</span></span>
<span class="fact">Total <b class="total-time">${escapeHtml(summary.totalText)}</b> <span class="total-pct">${escapeHtml(summary.totalPct)}</span></span>`;
    const label = this.summary.querySelector(".name");
    fitName(label, summary.name, label.clientWidth);
    await this.#drawSides(render, name, ["callers", "callees"]);
  }

  /** Lays out and draws `sides` of function `name`'s sandwich, each showing the part of it its
   * state key holds; nothing when a newer render (`render`) started meanwhile. */
  async #drawSides(render, name, sides) {
    const { ask, state, page } = this.ctx;
    const graphs = sides.map((side) => this.#graph(side));
    const windows = sides.map((side) => state.current[WINDOW_KEYS[side]]);
    // A search's matches are marked as in the flame graph. The selection is not: it is the
    // function the sandwich is of.
    const mask = page.searchMask;
    const layouts = await Promise.all(
      sides.map((side, k) =>
        ask("sandwichLayout", {
          name,
          callers: side === "callers",
          width: Math.max(1, graphs[k].scroller.clientWidth),
          window: windows[k],
          mask,
        }),
      ),
    );
    if (render !== this.renders || layouts.some((l) => !l)) return;
    sides.forEach((side, k) => {
      const layout = layouts[k];
      layout.names = page.names;
      this.layouts[side] = layout;
      graphs[k].setLayout(layout, Math.max(1, graphs[k].scroller.clientWidth), mask !== null);
      graphs[k].showWindow(windows[k]);
    });
  }

  #graph(side) {
    return side === "callers" ? this.callers : this.callees;
  }

  async #hover(side, index, event) {
    const { ask, tooltip } = this.ctx;
    const layout = this.layouts[side];
    if (index < 0 || !event || !layout) {
      tooltip.hide();
      return;
    }
    let html;
    if (layout.func[index] === layout.merged) {
      const texts = await ask("weightTexts", { weight: layout.weight[index] });
      if (!texts) return;
      html = tooltip.merged(layout.mergedCount[index], texts);
    } else {
      const info = await ask("sandwichNode", { name: this.name, callers: side === "callers", node: layout.node[index] });
      if (!info) return;
      // A caller's own time is not what it spends through this function: total only.
      html = side === "callers"
        ? `<div class="name">${escapeHtml(info.name)}</div>
${tooltip.place(info)}
<table><tr><td>Through ${escapeHtml(this.name)}</td><td>${escapeHtml(info.totalText)}</td><td>${escapeHtml(info.totalPct)}</td></tr></table>`
        : tooltip.node(info);
    }
    if (this.layouts[side] !== layout || this.#graph(side).hovered !== index) return;
    tooltip.show(html, event);
  }

  /** Selects the function of a clicked frame (a merged sliver: its heaviest frame's). */
  async #click(side, index) {
    const layout = this.layouts[side];
    if (!layout) return;
    const info = await this.ctx.ask("sandwichNode", {
      name: this.name,
      callers: side === "callers",
      node: layout.node[index],
    });
    if (!info || info.name === this.name) return;
    this.ctx.tooltip.hide();
    this.ctx.state.update({ selected: info.name });
  }

  /** Where the frames of function `name` are drawn in one side's graph (for tests). */
  framesNamed(side, name) {
    const l = this.layouts[side];
    const graph = this.#graph(side);
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (l.names[l.func[i]] === name) out.push({ index: i, ...graph.frameRect(i) });
    }
    return out;
  }
}
