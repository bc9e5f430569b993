// The top functions table: every function shown with its self and total weights, shares and
// samples, its exact calls when prof record --calls counted it, and its module, sortable by name,
// self or total either way,
// filtered by a substring or a regular expression, its rows virtualized (only those on screen
// are drawn) and reachable by keyboard (Up, Down, Home, End, Page Up, Page Down move; Enter
// selects; Ctrl+C copies the name). Long names are cut in the middle, never mid-identifier
// across lines, with the full name on hover and a copy button. Sorting and filtering are done
// by the wasm module, which also formats every number. The order, the filter text and whether it
// is a regex are in the state (the URL: tsort, tfilter, tregex).

import { escapeHtml } from "../html-and-color.js";
import { copyText, fitName, fontOf, fontProbe } from "../elide.js";
import { VirtualRows } from "../rows.js";
import { SortHeaders } from "../sort.js";

const ROW = 22; // CSS pixels per row

export class TableView {
  static id = "table";
  static label = "Top functions";

  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    const $ = (sel) => element.querySelector(sel);
    this.body = $(".table-rows");
    this.filter = $(".table-filter");
    this.regex = $(".table-regex");
    this.summary = $(".table-summary");
    this.status = $(".table-status");
    this.head = $(".grid-head");
    this.nameHead = $(".grid-head .name");
    this.callsHead = $(".grid-head .calls");
    this.withCalls = false; // the session counted calls (prof record --calls): a Calls column
    this.list = []; // rows from the worker
    this.cursor = -1; // index in `list`
    this.loads = 0;
    this.probe = fontProbe(this.body);
    this.rows = new VirtualRows(this.body, { rowHeight: ROW, draw: (a, b) => this.#drawRows(a, b) });
    this.headers = new SortHeaders(
      this.head,
      () => ctx.state.current.tableSort,
      (tableSort) => ctx.state.update({ tableSort }),
    );
    // Typing replaces the history entry, as the search box does.
    this.filter.addEventListener("input", () =>
      ctx.state.update({ tableFilter: this.filter.value }, { replace: true }),
    );
    this.regex.addEventListener("change", () => ctx.state.update({ tableRegex: this.regex.checked }));
    this.body.addEventListener("keydown", (e) => this.#key(e));
    this.body.addEventListener("click", (e) => {
      const row = e.target.closest(".row");
      if (!row) return;
      const index = Number(row.dataset.index);
      if (e.target.closest(".copy")) {
        this.#copy(index);
        return;
      }
      this.cursor = index;
      this.#choose(index);
    });
  }

  clear() {
    this.list = [];
    this.cursor = -1;
    this.rows.setCount(0);
    this.summary.textContent = "";
  }

  async render(changed) {
    const { tableFilter, tableRegex } = this.ctx.state.current;
    if (this.filter.value !== tableFilter) this.filter.value = tableFilter;
    this.regex.checked = tableRegex;
    const keys = ["samples", "threads", "range", "transforms", "view", "tableSort", "tableFilter", "tableRegex"];
    if (keys.some((k) => changed.has(k))) await this.#load();
    else if (changed.has("selected") || changed.has("search")) this.rows.refresh();
  }

  /** Asks for the rows in the current order and filter; keeps the cursor on its function. */
  async #load() {
    const load = ++this.loads;
    this.filter.classList.remove("invalid");
    this.status.textContent = "";
    const { tableSort: sort, tableFilter, tableRegex } = this.ctx.state.current;
    let answer;
    try {
      answer = await this.ctx.ask("functionTable", {
        ...sort,
        filter: tableFilter,
        regex: tableRegex,
      });
    } catch (e) {
      if (load !== this.loads) return;
      this.filter.classList.add("invalid");
      this.status.textContent = e instanceof Error ? e.message : String(e);
      return;
    }
    if (!answer || load !== this.loads) return;
    // The cursor stays on its function, wherever keys moved it during the round trip.
    const before = this.list[this.cursor]?.func;
    this.list = answer.rows;
    this.summary.textContent = answer.summary;
    this.withCalls = answer.withCalls;
    this.callsHead.hidden = !this.withCalls;
    for (const cols of this.element.querySelectorAll(".table-cols")) {
      cols.classList.toggle("with-calls", this.withCalls);
    }
    this.cursor = before === undefined ? -1 : this.list.findIndex((r) => r.func === before);
    this.headers.show(sort);
    this.rows.setCount(this.list.length);
  }

  #drawRows(first, last) {
    const selected = this.ctx.state.current.selected;
    // The name cell's padding (style.css: 6px each side), and a pixel to spare.
    const width = this.nameHead.getBoundingClientRect().width - 13;
    const font = fontOf(this.probe);
    const out = [];
    for (let i = first; i < last; i++) {
      const r = this.list[i];
      const row = document.createElement("div");
      row.className = "row";
      row.role = "row";
      row.id = `table-row-${i}`;
      row.dataset.index = String(i);
      row.dataset.func = String(r.func);
      if (i === this.cursor) row.classList.add("cursor");
      if (r.name === selected) row.classList.add("selected");
      if (this.ctx.page.searchMask?.[r.func]) row.classList.add("match");
      row.innerHTML = `<span role="gridcell" class="name"></span>
<span role="gridcell" class="num self-time">${escapeHtml(r.selfText)}</span>
<span role="gridcell" class="num self-pct">${escapeHtml(r.selfPct)}</span>
<span role="gridcell" class="num count self-count">${escapeHtml(r.selfCount)}</span>
<span role="gridcell" class="num total-time">${escapeHtml(r.totalText)}</span>
<span role="gridcell" class="num total-pct">${escapeHtml(r.totalPct)}</span>
<span role="gridcell" class="num count total-count">${escapeHtml(r.totalCount)}</span>
${this.withCalls ? `<span role="gridcell" class="num calls">${escapeHtml(r.calls ?? "")}</span>` : ""}
<span role="gridcell" class="module">${escapeHtml(r.module ?? "")}</span>
<span role="gridcell"><button type="button" class="copy" tabindex="-1" title="Copy the full name" aria-label="Copy the full name">Copy</button></span>`;
      fitName(row.querySelector(".name"), r.name, width, font);
      out.push(row);
    }
    if (this.cursor >= 0) this.body.setAttribute("aria-activedescendant", `table-row-${this.cursor}`);
    else this.body.removeAttribute("aria-activedescendant");
    return out;
  }

  /** Selects row `index`'s function in every view (again: unselects it). */
  #choose(index) {
    const name = this.list[index]?.name;
    if (name === undefined) return;
    const { state } = this.ctx;
    state.update({ selected: state.current.selected === name ? null : name });
    this.rows.refresh();
  }

  async #copy(index) {
    const name = this.list[index]?.name;
    if (name === undefined) return;
    const copied = await copyText(name);
    this.status.textContent = copied ? "Copied the name." : "Copying was refused by the browser.";
  }

  #move(index) {
    if (!this.list.length) return;
    this.cursor = Math.max(0, Math.min(this.list.length - 1, index));
    this.rows.reveal(this.cursor);
    this.rows.refresh();
  }

  #key(e) {
    const page = this.rows.pageRows();
    const at = this.cursor;
    const actions = {
      ArrowDown: () => this.#move(at + 1),
      ArrowUp: () => this.#move(at < 0 ? 0 : at - 1),
      Home: () => this.#move(0),
      End: () => this.#move(this.list.length - 1),
      PageDown: () => this.#move(at + page),
      PageUp: () => this.#move(at - page),
      Enter: () => at >= 0 && this.#choose(at),
    };
    let action = actions[e.key];
    if (!action && (e.ctrlKey || e.metaKey) && e.key === "c" && at >= 0) action = () => this.#copy(at);
    if (!action) return;
    e.preventDefault();
    e.stopPropagation();
    action();
  }

  /** The rows on screen: shown name, its title, and the number cells (for tests). */
  shownRows() {
    return [...this.body.querySelectorAll(".row")].map((row) => ({
      index: Number(row.dataset.index),
      name: row.querySelector(".name").textContent,
      title: row.querySelector(".name").title,
      cells: [...row.querySelectorAll(".num:not(.count):not(.calls)")].map((c) => c.textContent),
      counts: [...row.querySelectorAll(".num.count")].map((c) => c.textContent),
      calls: row.querySelector(".calls")?.textContent ?? null,
      module: row.querySelector(".module").textContent,
    }));
  }
}
