// The top-N table: rows computed by the wasm module, drawn as an HTML table. Clicking a column
// header asks for the rows sorted by that column; clicking a row selects that function.

import { escapeHtml } from "./html-and-color.js";
import { fitName, fontOf, textWidth } from "./elide.js";

export class TopTable {
  /**
   * @param {HTMLTableElement} table
   * @param {{onSort: Function, onSelect: Function}} handlers `onSort("self"|"total")`,
   *   `onSelect(functionId)` (null when the selected row is clicked again)
   */
  constructor(table, handlers) {
    this.table = table;
    this.handlers = handlers;
    this.sortBy = "self";
    this.selected = null;
    table.querySelector("thead").addEventListener("click", (e) => {
      const th = e.target.closest("th[data-sort]");
      if (!th) return;
      this.sortBy = th.dataset.sort;
      this.handlers.onSort(this.sortBy);
    });
    table.querySelector("tbody").addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-func]");
      if (!tr) return;
      const func = Number(tr.dataset.func);
      this.select(this.selected === func ? null : func);
      this.handlers.onSelect(this.selected);
    });
    // Names are cut in the middle to fit their column, so a new width needs them cut again.
    this.names = [];
    new ResizeObserver(() => this.#fitNames()).observe(table);
  }

  /** Makes each number column as wide as its widest text (the layout is fixed, so a text wider
   * than its column would run into the next one); the name column takes the rest. */
  #fitColumns() {
    const first = this.table.querySelector("tbody tr");
    if (!first) return;
    const cols = this.table.querySelectorAll("col");
    [...first.children].forEach((cell, k) => {
      if (k === 0) return;
      const style = getComputedStyle(cell);
      const font = fontOf(cell);
      let widest = 0;
      for (const other of this.table.querySelectorAll(`tbody td:nth-child(${k + 1})`)) {
        widest = Math.max(widest, textWidth(other.textContent, font));
      }
      const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
      cols[k].style.width = `${Math.ceil(widest + padding + 2)}px`;
    });
  }

  /** Shows each name whole if it fits, else cut in the middle, with the full name on hover. */
  #fitNames() {
    const cells = this.table.querySelectorAll("tbody td.name");
    if (!cells.length) return;
    const style = getComputedStyle(cells[0]);
    const width = cells[0].clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const font = fontOf(cells[0]);
    cells.forEach((cell, i) => fitName(cell, this.names[i], width, font));
  }

  /**
   * Shows `rows`, each with func, name and the texts selfText, selfPct, totalText, totalPct,
   * formatted by prof's core exactly as `prof report` prints them.
   */
  setRows(rows) {
    for (const th of this.table.querySelectorAll("th[data-sort]")) {
      th.classList.toggle("sorted", th.dataset.sort === this.sortBy);
      th.setAttribute("aria-sort", th.dataset.sort === this.sortBy ? "descending" : "none");
    }
    const body = this.table.querySelector("tbody");
    body.innerHTML = rows
      .map(
        (r) => `<tr data-func="${r.func}">
  <td class="name"></td>
  <td class="num self-time">${escapeHtml(r.selfText)}</td>
  <td class="num self-pct">${escapeHtml(r.selfPct)}</td>
  <td class="num total-time">${escapeHtml(r.totalText)}</td>
  <td class="num total-pct">${escapeHtml(r.totalPct)}</td>
</tr>`,
      )
      .join("");
    this.names = rows.map((r) => r.name);
    this.#fitColumns();
    this.#fitNames();
    this.select(this.selected);
  }

  /** Marks the rows of the functions a search matched (`mask`, one byte per function id, from
   * the wasm module; null: none). */
  mark(mask) {
    for (const tr of this.table.querySelectorAll("tbody tr")) {
      tr.classList.toggle("match", Boolean(mask?.[Number(tr.dataset.func)]));
    }
  }

  /** Marks the row of function `func` (or none) as selected. */
  select(func) {
    this.selected = func;
    for (const tr of this.table.querySelectorAll("tbody tr")) {
      tr.classList.toggle("selected", Number(tr.dataset.func) === func);
    }
  }
}
