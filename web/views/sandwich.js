// The sandwich view: one function (the selected one, picked in any view) with its callers
// above and its callees below, each a flame graph of the function merged across all its call
// sites, meeting at the function; its self and total between them. Clicking a frame in either
// graph selects that function, which re-centres the sandwich on it. Layouts and texts come from
// the wasm module (the core's `CallTree::callers` and `callees`).

import { FlameGraph } from "../flame.js";
import { escapeHtml } from "../html-and-color.js";
import { fitName } from "../elide.js";

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
      });
    // Callers grow upwards from the function at the bottom (a flame graph); callees hang
    // down from it at the top (an icicle): both meet at the function.
    this.callers = graph("callers");
    this.callees = graph("callees");
    this.callees.setIcicle(true);
  }

  clear() {
    this.name = null;
    this.layouts = { callers: null, callees: null };
    this.callers.setLayout(null, 0, false);
    this.callees.setLayout(null, 0, false);
    this.summary.replaceChildren();
    this.#showEmpty("Select a function to see its callers and callees.");
  }

  async render(changed) {
    if (["samples", "threads", "range", "transforms", "selected", "view"].some((k) => changed.has(k))) {
      await this.#draw();
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
    const { ask, state, page } = this.ctx;
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
    const sides = [
      ["callers", this.callers],
      ["callees", this.callees],
    ];
    const layouts = await Promise.all(
      sides.map(([side, graph]) =>
        ask("sandwichLayout", {
          name,
          callers: side === "callers",
          width: Math.max(1, graph.scroller.clientWidth),
        }),
      ),
    );
    if (render !== this.renders || layouts.some((l) => !l)) return;
    sides.forEach(([side, graph], k) => {
      const layout = layouts[k];
      layout.names = page.names;
      this.layouts[side] = layout;
      graph.setLayout(layout, Math.max(1, graph.scroller.clientWidth), false);
    });
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
${info.location ? `<div class="loc">${escapeHtml(info.location)}</div>` : ""}
<table><tr><td>Through ${escapeHtml(this.name)}</td><td>${escapeHtml(info.totalText)}</td><td>${escapeHtml(info.totalPct)}</td></tr></table>`
        : tooltip.node(info);
    }
    const graph = side === "callers" ? this.callers : this.callees;
    if (this.layouts[side] !== layout || graph.hovered !== index) return;
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
    const graph = side === "callers" ? this.callers : this.callees;
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (l.names[l.func[i]] === name) out.push({ index: i, ...graph.frameRect(i) });
    }
    return out;
  }
}
