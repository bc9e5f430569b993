// The Scopes view (issue 22): one row per instrumented scope name over the shown threads and
// time range (exact calls, total and self ms, per call, min, max, p50, p99), sortable by its
// column buttons; the selected scope's spread of call durations as bars; and one row per task
// name. "Only" buttons keep only the samples inside that scope, or of that task, in every view
// (the state's `scope` and `task`, in the URL). The chosen scope's longest calls are listed;
// clicking one selects its time range. The wasm module computes, sorts and formats
// every number; this only draws.

import { escapeHtml } from "../html-and-color.js";

const BUCKETS = 24;
const CALLS = 10; // the longest calls listed, each selecting its time

export class ScopesView {
  static id = "scopes";
  static label = "Scopes";

  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    const $ = (sel) => element.querySelector(sel);
    this.summary = $(".scopes-summary");
    this.filters = $(".scopes-filters");
    this.none = $(".scopes-none");
    this.table = $(".scopes-table");
    this.rows = $(".scopes-rows");
    this.distribution = $(".scopes-distribution");
    this.tasksTable = $(".tasks-table");
    this.tasks = $(".tasks-rows");
    this.sort = { column: "total", descending: true };
    this.chosen = null; // the scope whose distribution is shown
    this.loads = 0;
    this.table.querySelector("thead").addEventListener("click", (e) => {
      const column = e.target.closest("button")?.dataset.sort;
      if (!column) return;
      const same = this.sort.column === column;
      this.sort = { column, descending: same ? !this.sort.descending : column !== "name" };
      this.#load();
    });
    this.rows.addEventListener("click", (e) => {
      const row = e.target.closest("tr");
      if (!row) return;
      if (e.target.closest(".only")) {
        ctx.state.update({ scope: row.dataset.name });
        return;
      }
      this.chosen = row.dataset.name;
      this.#load();
    });
    this.tasks.addEventListener("click", (e) => {
      const row = e.target.closest("tr");
      if (row && e.target.closest(".only")) ctx.state.update({ task: row.dataset.name });
    });
    this.filters.addEventListener("click", (e) => {
      const key = e.target.closest("button")?.dataset.clear;
      if (key) ctx.state.update({ [key]: null });
    });
  }

  clear() {
    this.rows.replaceChildren();
    this.tasks.replaceChildren();
    this.distribution.replaceChildren();
    this.summary.textContent = "";
  }

  async render(changed) {
    const keys = ["samples", "threads", "range", "view", "scope", "task", "file"];
    if (keys.some((k) => changed.has(k))) await this.#load();
  }

  async #load() {
    const load = ++this.loads;
    const answer = await this.ctx.ask("scopes", this.sort);
    if (!answer || load !== this.loads) return;
    const { scope, task } = this.ctx.state.current;
    this.filters.innerHTML = [
      scope && `Only inside <b>${escapeHtml(scope)}</b> <button type="button" data-clear="scope">×</button>`,
      task && `Only task <b>${escapeHtml(task)}</b> <button type="button" data-clear="task">×</button>`,
    ]
      .filter(Boolean)
      .join(" ");
    const empty = !answer.has.scopes && !answer.has.tasks;
    this.none.hidden = !empty;
    this.table.hidden = !answer.has.scopes;
    this.tasksTable.hidden = !answer.has.tasks;
    this.summary.textContent = answer.has.scopes ? answer.summary : "";
    for (const th of this.table.querySelectorAll("th[aria-sort]")) {
      const column = th.querySelector("button")?.dataset.sort;
      const sorted = column === this.sort.column;
      th.setAttribute("aria-sort", sorted ? (this.sort.descending ? "descending" : "ascending") : "none");
    }
    if (!answer.rows.some((r) => r.name === this.chosen)) this.chosen = answer.rows[0]?.name ?? null;
    this.rows.innerHTML = answer.rows
      .map((r) => {
        const cells = [r.callsText, r.totalText, r.selfText, r.selfPerCallText, r.totalPerCallText,
          r.minText, r.maxText, r.p50Text, r.p99Text];
        const selected = r.name === this.chosen ? ' aria-selected="true"' : "";
        return `<tr data-name="${escapeHtml(r.name)}"${selected}><td class="name">${escapeHtml(r.name)}</td>` +
          cells.map((c) => `<td class="num">${escapeHtml(c)}</td>`).join("") +
          `<td><button type="button" class="only" title="Only samples inside this scope">Only</button></td></tr>`;
      })
      .join("");
    this.tasks.innerHTML = answer.tasks
      .map((t) => {
        const cells = [t.weightText, t.shareText, t.tasksText, t.pollsText, t.pollText];
        return `<tr data-name="${escapeHtml(t.name)}"><td class="name">${escapeHtml(t.name)}</td>` +
          cells.map((c) => `<td class="num">${escapeHtml(c)}</td>`).join("") +
          `<td><button type="button" class="only" title="Only samples of this task">Only</button></td></tr>`;
      })
      .join("");
    await this.#drawDistribution(load);
  }

  /** The chosen scope's call durations as bars over their axis, each bar's text on hover. */
  async #drawDistribution(load) {
    if (this.chosen === null) {
      this.distribution.replaceChildren();
      return;
    }
    const answer = await this.ctx.ask("scopeDistribution", { name: this.chosen, buckets: BUCKETS, calls: CALLS });
    if (!answer || load !== this.loads) return;
    const { histogram, calls } = answer;
    const title = document.createElement("div");
    title.className = "scopes-distribution-title";
    title.innerHTML = `Call durations of <b>${escapeHtml(this.chosen)}</b>`;
    const row = document.createElement("div");
    row.className = "scopes-bars";
    for (const b of histogram.bars) {
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.title = b.text;
      // Set through the CSSOM: the page's CSP refuses inline style attributes.
      bar.style.height = `${b.height * 100}%`;
      row.append(bar);
    }
    // The axis under the bars: the shortest and longest durations and the spacing, texts from
    // the core.
    const axis = document.createElement("div");
    axis.className = "scopes-axis";
    for (const text of [histogram.lowText, histogram.scaleText, histogram.highText]) {
      const label = document.createElement("span");
      label.textContent = text;
      axis.append(label);
    }
    const list = document.createElement("ol");
    list.className = "scopes-calls";
    list.setAttribute("aria-label", "Longest calls: click one to select its time");
    for (const call of calls) {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = call.text;
      button.title = "Select this call's time";
      button.addEventListener("click", () => this.ctx.state.update({ range: [call.from, call.to] }));
      item.append(button);
      list.append(item);
    }
    this.distribution.replaceChildren(title, row, axis, list);
  }
}
