// The Diff view: the loaded profile (new) against another loaded file (base, chosen in the view
// and kept in the state as `base`): a differential flame graph in the new profile's shape, each
// frame coloured by how its share changed (red: grew, blue: shrank; the colours of `prof convert
// --to svg --diff`), and `prof diff`'s table of base, new and delta per function. Both sides are
// whole profiles; every colour, number and text comes from the wasm module (viewer/src/diff.rs).

import { FlameGraph } from "../flame.js";
import { leftHeavyToggle, showFrameTooltip, windowHandlers } from "../flame-window.js";
import { escapeHtml } from "../html-and-color.js";
import { fitName, fontOf } from "../elide.js";
import { SortHeaders } from "../sort.js";

/** The most table rows drawn (the summary says how many there are). */
const TABLE_ROWS = 500;

export class DiffView {
  static id = "diff";
  static label = "Diff";

  /**
   * @param {HTMLElement} element the view's section
   * @param {object} ctx the page's context (app.js): state, page, ask, tooltip helpers
   */
  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    const $ = (sel) => element.querySelector(sel);
    this.baseSelect = $(".diff-base");
    this.bySelect = $(".diff-by");
    this.title = $(".diff-title");
    this.message = $(".diff-message");
    this.body = $(".diff-body");
    this.summary = $(".diff-summary");
    this.head = $(".diff-table thead");
    this.rows = $(".diff-table tbody");
    this.layout = null;
    this.compared = null; // the comparison shown: "file/base", once the worker has it
    this.renders = 0;
    this.drawn = Promise.resolve();
    this.sort = { column: "change", descending: true }; // prof diff's order
    this.tableRows = [];
    this.flame = new FlameGraph($(".diff-flame"), {
      onHover: (i, event) => this.#hover(i, event),
      onClick: (i) => this.#zoomInto(i),
      onAncestor: (k) => {
        const path = this.layout?.path;
        if (path) ctx.state.update({ diffZoom: path.slice(1, k + 1), diffWindow: null });
      },
      onResize: () => this.compared && this.#draw(),
      // Wheel zoom and drag pan as in the Flame graph view, in the state as `diffWindow`.
      ...windowHandlers(ctx.state, "diffWindow"),
    });
    this.leftHeavy = leftHeavyToggle($(".diff-left-heavy"), ctx.state);
    this.baseSelect.addEventListener("change", (e) =>
      ctx.state.update({
        base: e.target.value === "" ? null : Number(e.target.value),
        diffZoom: [],
        diffWindow: null,
      }),
    );
    this.bySelect.addEventListener("change", () => this.#renderTable());
    this.headers = new SortHeaders(
      this.head,
      () => this.sort,
      (sort) => {
        this.sort = sort;
        this.#renderTable();
      },
    );
    // Names are cut in the middle to fit their column, so a new width needs them cut again.
    new ResizeObserver(() => this.#fitNames()).observe(this.rows.closest("table"));
  }

  /** Shows each name whole if it fits, else cut in the middle (keeping the crate and the
   * function apart), with the full name on hover. */
  #fitNames() {
    const cells = this.rows.querySelectorAll("td.name");
    if (!cells.length || cells[0].clientWidth === 0) return;
    const style = getComputedStyle(cells[0]);
    const width = cells[0].clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const font = fontOf(cells[0]);
    cells.forEach((cell, i) => fitName(cell, this.tableRows[i].name, width, font));
  }

  /** Empties the view (no profile). */
  clear() {
    this.layout = null;
    this.compared = null;
    this.tableRows = [];
    this.flame.setLayout(null, 0, false);
    this.rows.replaceChildren();
    this.summary.textContent = "";
    this.title.textContent = "";
    this.message.textContent = "";
    this.body.hidden = true;
  }

  /** Draws its canvas again, in the colours of the theme now shown (theme.js). */
  redraw() {
    this.flame.draw();
  }

  async render(changed) {
    const { state, page } = this.ctx;
    const current = state.current;
    this.leftHeavy.sync();
    this.#renderChoices();
    const key = `${page.loadedFile}/${current.base}/${current.sampleType}`;
    const all = ["samples", "view", "base", "sampleType"].some((k) => changed.has(k));
    if (all || this.compared !== key) {
      this.compared = null;
      if (!(await this.#compare())) return;
      this.compared = key;
      await Promise.all([this.#draw(), this.#renderTable()]);
      return;
    }
    const drawn = ["diffZoom", "diffWindow", "leftHeavy", "search", "selected"];
    if (drawn.some((k) => changed.has(k))) await this.#draw();
  }

  /** Resolves once the newest flame graph is drawn. */
  settled() {
    return this.drawn;
  }

  /** The "compare with" choices: every loaded file, the current one included. */
  #renderChoices() {
    const { page, state } = this.ctx;
    const options = [new Option("(choose a profile)", "")];
    page.files.forEach((file, i) => {
      const label = i === page.loadedFile ? `${file.name} (this profile)` : file.name;
      options.push(new Option(label, String(i)));
    });
    this.baseSelect.replaceChildren(...options);
    const base = state.current.base;
    this.baseSelect.value = base !== null && base < page.files.length ? String(base) : "";
  }

  /** Has the worker compare the loaded profile with the chosen base; false (with the reason
   * shown) when there is nothing to draw. */
  async #compare() {
    const { state, page, ask } = this.ctx;
    const base = state.current.base;
    const say = (text) => {
      this.message.textContent = text;
      this.title.textContent = "";
      this.body.hidden = true;
      return false;
    };
    if (base === null) return say("Choose a profile to compare this one with: the Diff view shows what changed from it.");
    if (base >= page.files.length) return say(`There is no profile ${base + 1}: ${page.files.length} are loaded.`);
    const file = page.files[base];
    const standalone = window.profStandalone;
    const same = base === page.loadedFile;
    const args = {
      index: base,
      same,
      baseName: file.name,
      newName: page.files[page.loadedFile].name,
      type: state.current.sampleType,
    };
    if (!same && file.local) args.file = file.local;
    else if (!same && standalone) args.bytes = await standalone.session(base);
    else if (!same) Object.assign(args, { url: new URL(file.url, location.href).href, size: file.size });
    this.message.textContent = `Loading ${file.name}…`;
    let answer;
    try {
      answer = await ask("setBase", args);
    } catch (e) {
      return say(`Cannot compare with ${file.name}: ${e instanceof Error ? e.message : String(e)}`);
    }
    // Fetching the base reported its progress in the page's progress line: done now.
    document.getElementById("progress").textContent = "";
    if (!answer || state.current.base !== base) return false;
    if (answer.refused) return say(answer.refused);
    this.message.textContent = "";
    this.title.textContent = answer.title;
    this.title.title = answer.title; // the whole text, when the bar cuts it
    this.body.hidden = false;
    return true;
  }

  #draw() {
    this.drawn = this.#layoutAndDraw();
    return this.drawn;
  }

  async #layoutAndDraw() {
    const { ask, state, page } = this.ctx;
    const render = ++this.renders;
    const width = Math.max(1, this.flame.scroller.clientWidth);
    const { diffZoom, diffWindow, leftHeavy } = state.current;
    const layout = await ask("diffLayout", { zoomPath: diffZoom, width, window: diffWindow, leftHeavy });
    if (!layout || render !== this.renders) return;
    layout.names = page.names;
    this.layout = layout;
    this.flame.setLayout(layout, width, page.highlighting, layout.path.slice(0, -1));
    this.flame.showWindow(diffWindow);
  }

  async #renderTable() {
    const answer = await this.ctx.ask("diffTable", {
      by: this.bySelect.value,
      ...this.sort,
      limit: TABLE_ROWS,
    });
    if (!answer) return;
    this.tableRows = answer.rows;
    this.summary.textContent = [...answer.summary, answer.cutText].join("\n").trim();
    this.headers.show(this.sort);
    const changeClass = (change) => (change > 0 ? "grew" : change < 0 ? "shrank" : "");
    this.rows.replaceChildren(
      ...answer.rows.map((r) => {
        const tr = document.createElement("tr");
        tr.innerHTML = `<td class="name" title="${escapeHtml(r.name)}">${escapeHtml(r.name)}</td>
<td>${escapeHtml(r.base)}</td><td>${escapeHtml(r.new)}</td>
<td class="${changeClass(r.change)}">${escapeHtml(r.delta)}</td>`;
        return tr;
      }),
    );
    this.#fitNames();
  }

  async #zoomInto(i) {
    const l = this.layout;
    if (!l) return;
    const path = await this.ctx.ask("diffPath", { node: l.node[i] });
    if (path) this.ctx.state.update({ diffZoom: path, diffWindow: null });
  }

  #hover(index, event) {
    return showFrameTooltip(this, index, event, {
      weightQuestion: "diffWeight",
      nodeQuestion: "diffNode",
      nodeHtml: (info) => {
        const rows = info.sides
          .map(
            (s) => `<tr><td>${escapeHtml(s.label)}</td><td>total ${escapeHtml(s.totalText)}</td>
<td>${escapeHtml(s.totalPct)}</td><td>self ${escapeHtml(s.selfText)}</td><td>${escapeHtml(s.selfPct)}</td></tr>`,
          )
          .join("");
        return `<div class="name">${escapeHtml(info.name)}</div><table>${rows}</table>`;
      },
    });
  }

  /** Where the frames of function `name` are drawn, relative to the canvas, with their fills
   * (for tests). */
  framesNamed(name) {
    const l = this.layout;
    const out = [];
    for (let i = 0; l && i < l.count; i++) {
      if (l.func[i] !== l.merged && l.names[l.func[i]] === name) {
        const rgb = [l.rgb[3 * i], l.rgb[3 * i + 1], l.rgb[3 * i + 2]];
        out.push({ index: i, node: l.node[i], rgb, ...this.flame.frameRect(i) });
      }
    }
    return out;
  }

  /** The table's rows: [base, new, delta, name] texts, the name whole (its cell may show it
   * cut in the middle; for tests). */
  shownRows() {
    return [...this.rows.children].map((tr) => {
      const cells = [...tr.children].map((td) => td.textContent);
      return [cells[1], cells[2], cells[3], tr.children[0].title];
    });
  }
}
