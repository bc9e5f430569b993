// The call tree view: a table of the call tree with expand and collapse, total and self
// columns (each weight with its share and its samples), the module of each frame, an inverted
// mode (roots are the functions that spend the time themselves: "who
// spends it"), a Calls column for scope frames when grouped by scope, and the path of the
// selected node. The rows (order, depth, subtree sizes) and
// every text come from the wasm module; this view keeps only what is expanded, and draws only
// the rows on screen.
//
// A new tree (not inverted) opens along its heaviest path: the heaviest root, its heaviest
// child, and so on.
//
// A row's menu (right-click, or the Menu key or Shift+F10 on the selected row) copies its name,
// stack or a link, and offers its transforms.
//
// Keyboard (on the table): Up and Down move, Right expands (or steps into the first child),
// Left collapses (or steps out to the parent), Enter expands or collapses, `*` expands every
// row below the selected one (everything when none is), Home, End, Page Up and Page Down.

import { escapeHtml } from "../html-and-color.js";
import { fitName, fontOf, fontProbe } from "../elide.js";
import { VirtualRows } from "../rows.js";
import { isMenuKey } from "../transforms.js";

const ROW = 22; // CSS pixels per row
const INDENT = 14; // CSS pixels per level
const TWISTY = 14; // CSS pixels of the expand mark (style.css)

export class CallTreeView {
  static id = "calltree";
  static label = "Call tree";

  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    const $ = (sel) => element.querySelector(sel);
    this.body = $(".tree-rows");
    this.pathLine = $(".node-path");
    this.invertedBox = $(".tree-inverted");
    this.nameHead = $(".grid-head .name");
    this.callsHead = $(".grid-head .calls");
    this.withCalls = false; // grouped by scope (not inverted): the Calls column shows
    this.table = null; // {inverted, order, depth, size} from the worker
    this.expanded = new Set(); // node ids
    this.visible = new Uint32Array(0); // row indices (into table.order) shown, in order
    this.texts = new Map(); // node id -> its row's texts
    this.asking = new Set(); // node ids whose texts were asked for
    this.cursor = -1; // the selected node, or -1
    this.picks = 0; // rows picked by a key or a click so far
    this.loads = 0;
    this.probe = fontProbe(this.body);
    this.rows = new VirtualRows(this.body, { rowHeight: ROW, draw: (a, b) => this.#drawRows(a, b) });
    this.body.addEventListener("keydown", (e) => this.#key(e));
    this.body.addEventListener("click", (e) => {
      const row = e.target.closest(".row");
      if (!row) return;
      const node = Number(row.dataset.node);
      if (e.target.closest(".twisty")) this.#toggle(node);
      else this.#select(node);
    });
    this.body.addEventListener("dblclick", (e) => {
      const row = e.target.closest(".row");
      if (row && !e.target.closest(".twisty")) this.#toggle(Number(row.dataset.node));
    });
    // A row's menu: right-click it, or the Menu key or Shift+F10 on the selected row.
    this.body.addEventListener("contextmenu", (e) => {
      const row = e.target.closest(".row");
      if (!row) return;
      e.preventDefault();
      this.#openMenu(e.clientX, e.clientY, Number(row.dataset.node));
    });
    this.invertedBox.addEventListener("change", (e) =>
      ctx.state.update({ inverted: e.target.checked, node: [] }),
    );
  }

  clear() {
    this.table = null;
    this.expanded.clear();
    this.texts.clear();
    this.asking.clear();
    this.cursor = -1;
    this.visible = new Uint32Array(0);
    this.rows.setCount(0);
    this.pathLine.replaceChildren();
  }

  async render(changed) {
    const current = this.ctx.state.current;
    this.invertedBox.checked = current.inverted;
    // The rows depend on everything in the state but what only picks or shows within them, so
    // showing the tab again keeps what was expanded unless the tree itself changed.
    const { view, selected, node, zoom, search, icicle, ...tree } = current;
    const key = JSON.stringify(tree);
    const rebuild = !this.table || this.table.key !== key;
    if (rebuild) {
      // Grouped by scope, scope frames have calls (the inverted tree's paths are not scopes').
      this.withCalls = current.groupBy === "scope" && !current.inverted;
      this.callsHead.hidden = !this.withCalls;
      for (const cols of this.element.querySelectorAll(".tree-cols")) {
        cols.classList.toggle("with-calls", this.withCalls);
      }
      const load = ++this.loads;
      const table = await this.ctx.ask("callTree", { inverted: current.inverted });
      if (!table || load !== this.loads) return;
      table.inverted = current.inverted;
      table.key = key;
      this.table = table;
      this.rowOf = new Map();
      for (let i = 0; i < table.order.length; i++) this.rowOf.set(table.order[i], i);
      this.texts.clear();
      this.asking.clear();
      this.expanded.clear();
      this.cursor = -1;
    }
    if (rebuild || changed.has("node")) await this.#adoptPath(current.node, rebuild);
    else if (changed.has("selected") || changed.has("search")) this.rows.refresh();
    this.#renderPath();
  }

  /** Selects the node the state's path names, expanding the rows above it; on a `fresh` tree
   * with none named, opens the heaviest path. */
  async #adoptPath(path, fresh) {
    const table = this.table;
    const picks = this.picks;
    let node = -1;
    if (path.length) {
      const found = await this.ctx.ask("callTreeNode", { inverted: table.inverted, path });
      if (found === null || this.table !== table) return;
      // A row picked during the round trip wins over this path, though its own path may not be
      // in the state yet (showing the tab again adopts the path the state already holds).
      if (!fresh && this.picks !== picks) return;
      if (JSON.stringify(this.ctx.state.current.node) !== JSON.stringify(path)) return;
      node = found === 0 ? -1 : found;
    }
    this.cursor = node;
    // Nothing selected: a new tree opens along its heaviest path (each row's first child is its
    // heaviest, as the wasm module orders them), as the Firefox Profiler's does. The inverted
    // tree's roots are the list of who spends the time: it opens as that list.
    if (node < 0 && fresh && !table.inverted) {
      for (let row = 0; row < table.order.length && table.size[row] > 1; row++) {
        this.expanded.add(table.order[row]);
      }
    }
    if (node >= 0) {
      // Expand the ancestors: the rows before it with smaller depths, nearest first.
      let row = this.rowOf.get(node);
      let depth = table.depth[row];
      for (let i = row - 1; i >= 0 && depth > 1; i--) {
        if (table.depth[i] < depth) {
          this.expanded.add(table.order[i]);
          depth = table.depth[i];
        }
      }
    }
    this.#layout();
    if (node >= 0) this.rows.reveal(this.#visibleIndex(node));
  }

  /** Recomputes which rows show (the expanded ones' children) and redraws. */
  #layout() {
    const { order, size } = this.table ?? { order: [], size: [] };
    const visible = new Uint32Array(order.length);
    let n = 0;
    for (let i = 0; i < order.length; ) {
      visible[n++] = i;
      i += this.expanded.has(order[i]) ? 1 : size[i];
    }
    this.visible = visible.subarray(0, n);
    this.rows.setCount(n);
  }

  #visibleIndex(node) {
    const row = this.rowOf.get(node);
    // `visible` is increasing: binary search.
    let lo = 0;
    let hi = this.visible.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.visible[mid] < row) lo = mid + 1;
      else if (this.visible[mid] > row) hi = mid - 1;
      else return mid;
    }
    return -1;
  }

  #drawRows(first, last) {
    const table = this.table;
    if (!table) return [];
    const selected = this.ctx.state.current.selected;
    // The name cell's padding (style.css: 6px each side), and a pixel to spare.
    const nameWidth = this.nameHead.getBoundingClientRect().width - 13;
    const missing = [];
    const out = [];
    let font = null;
    for (let v = first; v < last; v++) {
      const i = this.visible[v];
      const node = table.order[i];
      const depth = table.depth[i];
      const parent = table.size[i] > 1;
      const open = parent && this.expanded.has(node);
      const texts = this.texts.get(node);
      if (!texts && !this.asking.has(node)) missing.push(node);
      const row = document.createElement("div");
      row.className = "row";
      row.role = "row";
      row.id = `calltree-node-${node}`;
      row.dataset.node = String(node);
      row.setAttribute("aria-level", String(depth));
      if (parent) row.setAttribute("aria-expanded", String(open));
      if (node === this.cursor) row.classList.add("cursor");
      if (texts && texts.name === selected) row.classList.add("selected");
      if (texts && this.ctx.page.searchMask?.[texts.func]) row.classList.add("match");
      row.innerHTML = texts
        ? `<span role="gridcell" class="num total-time">${escapeHtml(texts.totalText)}</span>
<span role="gridcell" class="num total-pct">${escapeHtml(texts.totalPct)}</span>
<span role="gridcell" class="num count total-count">${escapeHtml(texts.totalCount)}</span>
<span role="gridcell" class="num self-time">${escapeHtml(texts.selfText)}</span>
<span role="gridcell" class="num self-pct">${escapeHtml(texts.selfPct)}</span>
<span role="gridcell" class="num count self-count">${escapeHtml(texts.selfCount)}</span>
${this.withCalls ? `<span role="gridcell" class="num calls">${escapeHtml(texts.calls ?? "")}</span>` : ""}
<span role="gridcell" class="name"><span class="twisty">${parent ? (open ? "▾" : "▸") : ""}</span><span class="label"></span></span>
<span role="gridcell" class="module">${escapeHtml(texts.module ?? "")}</span>`
        : `<span role="gridcell" class="num"></span><span class="num"></span><span class="num count"></span><span class="num"></span><span class="num"></span><span class="num count"></span>${this.withCalls ? '<span class="num"></span>' : ""}
<span role="gridcell" class="name"><span class="twisty">${parent ? (open ? "▾" : "▸") : ""}</span><span class="label">…</span></span><span class="module"></span>`;
      const name = row.querySelector(".name");
      name.style.paddingLeft = `${(depth - 1) * INDENT}px`;
      if (texts) {
        const label = row.querySelector(".label");
        font ??= fontOf(this.probe);
        fitName(label, texts.name, nameWidth - (depth - 1) * INDENT - TWISTY, font);
        // The hover: the full name, and its place and module when known (the worker's texts).
        label.dataset.name = texts.name;
        label.title = [texts.name, texts.location, texts.module && `Module ${texts.module}`].filter(Boolean).join("\n");
      }
      out.push(row);
    }
    if (this.cursor >= 0) this.body.setAttribute("aria-activedescendant", `calltree-node-${this.cursor}`);
    else this.body.removeAttribute("aria-activedescendant");
    if (missing.length) this.#fetchTexts(missing);
    return out;
  }

  async #fetchTexts(nodes) {
    const table = this.table;
    for (const n of nodes) this.asking.add(n);
    const rows = await this.ctx.ask("callTreeRows", { inverted: table.inverted, nodes });
    if (!rows || this.table !== table) return;
    for (const row of rows) this.texts.set(row.node, row);
    this.rows.schedule();
  }

  #toggle(node) {
    const row = this.rowOf.get(node);
    if (this.table.size[row] <= 1) return;
    if (this.expanded.has(node)) this.expanded.delete(node);
    else this.expanded.add(node);
    this.#layout();
  }

  /** Expands every row below `node` (every row, for -1). */
  #expandAll(node) {
    const { order, size } = this.table;
    const start = node < 0 ? 0 : this.rowOf.get(node);
    const end = node < 0 ? order.length : start + size[start];
    for (let i = start; i < end; i++) if (size[i] > 1) this.expanded.add(order[i]);
    this.#layout();
  }

  /** Makes `node` the selected row: its path goes in the state, its function is selected. */
  async #select(node) {
    this.picks++;
    this.cursor = node;
    this.rows.refresh();
    this.rows.reveal(this.#visibleIndex(node));
    const table = this.table;
    const path = await this.ctx.ask("callTreePath", { inverted: table.inverted, node });
    if (!path || this.table !== table || this.cursor !== node) return;
    this.ctx.state.update({ node: path, selected: path[path.length - 1] }, { replace: true });
  }

  /** Opens the frame menu of `node` at client pixels (`x`, `y`): its stack runs from the
   * outermost caller down (an inverted tree's path runs up from the leaf), and a link selects
   * its function and this node. */
  async #openMenu(x, y, node) {
    const table = this.table;
    if (!table) return;
    const inverted = table.inverted;
    // The tree's nodes are the profile's call tree's when not inverted: its module is known.
    const [path, module] = await Promise.all([
      this.ctx.ask("callTreePath", { inverted, node }),
      inverted ? null : this.ctx.ask("nodeModule", { node }),
    ]);
    if (!path?.length || this.table !== table) return;
    const name = path[path.length - 1];
    this.ctx.tooltip.hide();
    this.ctx.transformMenu.open(x, y, {
      name,
      path: inverted ? null : path,
      module,
      stack: inverted ? [...path].reverse() : path,
      link: { selected: name, node: path },
    });
  }

  #key(e) {
    if (!this.table || this.visible.length === 0) return;
    if (isMenuKey(e) && this.cursor >= 0) {
      e.preventDefault();
      e.stopPropagation();
      const row = this.body.querySelector(`#calltree-node-${this.cursor}`) ?? this.body;
      const rect = row.getBoundingClientRect();
      this.#openMenu(rect.left + 40, rect.bottom, this.cursor);
      return;
    }
    const { order, depth, size } = this.table;
    const v = this.cursor >= 0 ? this.#visibleIndex(this.cursor) : -1;
    const at = (index) => order[this.visible[Math.max(0, Math.min(this.visible.length - 1, index))]];
    let handled = true;
    switch (e.key) {
      case "ArrowDown":
        this.#select(at(v + 1));
        break;
      case "ArrowUp":
        this.#select(at(v < 0 ? 0 : v - 1));
        break;
      case "Home":
        this.#select(at(0));
        break;
      case "End":
        this.#select(at(this.visible.length - 1));
        break;
      case "PageDown":
        this.#select(at(v + this.rows.pageRows()));
        break;
      case "PageUp":
        this.#select(at(v - this.rows.pageRows()));
        break;
      case "ArrowRight":
      case "ArrowLeft": {
        if (v < 0) {
          this.#select(at(0));
          break;
        }
        const row = this.visible[v];
        const node = order[row];
        const open = this.expanded.has(node);
        if (e.key === "ArrowRight") {
          if (size[row] > 1 && !open) this.#toggle(node);
          else if (size[row] > 1) this.#select(order[row + 1]);
        } else if (open) {
          this.#toggle(node);
        } else {
          for (let i = row - 1; i >= 0; i--) {
            if (depth[i] < depth[row]) {
              this.#select(order[i]);
              break;
            }
          }
        }
        break;
      }
      case "Enter":
        if (v >= 0) this.#toggle(this.cursor);
        break;
      case "*":
        this.#expandAll(this.cursor);
        break;
      default:
        handled = false;
    }
    if (handled) {
      e.preventDefault();
      e.stopPropagation();
    }
  }

  /** The selected node's path, as a line of names above the table. */
  #renderPath() {
    const path = this.ctx.state.current.node;
    this.pathLine.replaceChildren();
    if (!path.length) {
      this.pathLine.textContent = "Select a row (click, or the arrow keys) to see its path.";
      this.pathLine.classList.add("hint");
      return;
    }
    this.pathLine.classList.remove("hint");
    path.forEach((name, i) => {
      if (i) {
        const sep = document.createElement("span");
        sep.className = "sep";
        sep.textContent = this.ctx.state.current.inverted ? " ← " : " → ";
        this.pathLine.append(sep);
      }
      const step = document.createElement("span");
      step.className = "step";
      step.textContent = name;
      this.pathLine.append(step);
    });
  }

  /** The rows on screen, as the table shows them (for tests). */
  shownRows() {
    return [...this.body.querySelectorAll(".row")].map((row) => ({
      node: Number(row.dataset.node),
      level: Number(row.getAttribute("aria-level")),
      expanded: row.getAttribute("aria-expanded"),
      name: row.querySelector(".label").dataset.name ?? row.querySelector(".label").title,
      cells: [...row.querySelectorAll(".num:not(.count)")].map((c) => c.textContent),
      counts: [...row.querySelectorAll(".num.count")].map((c) => c.textContent),
      module: row.querySelector(".module").textContent,
    }));
  }
}
