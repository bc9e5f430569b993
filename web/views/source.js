// The Source view: the selected function's source lines (picked in any view), each weighted line
// with its self and total weight and shaded by how hot it is, scrolled to the hottest line.
// Weights and texts come from the wasm module (the core's `function_lines`, formatted by its
// one formatter); the source text comes from the server (`source?file=NAME`, only files the
// profile's frames name, under `prof serve --source-root`). When the text is not available (a
// 404, or the single-file viewer, which has no server) the view says so in one line and still
// lists the weighted lines.
//
// Keyboard: the listing is focusable; Up and Down move between weighted lines, Home returns to
// the hottest.

import { escapeHtml } from "../html-and-color.js";

/** Lines of source shown around the function's weighted lines. */
const CONTEXT = 3;

export class SourceView {
  static id = "source";
  static label = "Source";

  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    this.heading = element.querySelector(".source-function");
    this.empty = element.querySelector(".source-empty");
    this.listing = element.querySelector(".source-listing");
    this.texts = new Map(); // file name → promise of {text} or {error}
    this.renders = 0;
    this.drawn = Promise.resolve();
    this.hottest = null; // the hottest line's row
    this.listing.addEventListener("keydown", (e) => this.#key(e));
  }

  clear() {
    this.texts.clear();
    this.hottest = null;
    this.heading.replaceChildren();
    this.listing.replaceChildren();
    this.#showEmpty("");
  }

  async render(changed) {
    if (["samples", "threads", "range", "transforms", "selected", "view"].some((k) => changed.has(k))) {
      this.drawn = this.#draw();
      await this.drawn;
    }
  }

  /** Resolves once the newest listing is drawn. */
  settled() {
    return this.drawn;
  }

  #showEmpty(text) {
    this.empty.textContent = text;
    this.empty.hidden = !text;
    this.listing.hidden = Boolean(text);
  }

  /** The text of `file` from the server: `{text}`, or `{error}` saying why there is none. */
  #text(file) {
    if (!this.texts.has(file)) {
      this.texts.set(file, this.#fetch(file));
    }
    return this.texts.get(file);
  }

  async #fetch(file) {
    if (window.profStandalone) return { error: "source text not available in a single-file viewer" };
    try {
      const response = await fetch(`source?file=${encodeURIComponent(file)}`);
      const body = await response.text();
      if (response.ok) return { text: body };
      const why = body.split("\n")[0] || `HTTP ${response.status}`;
      return { error: `source text not available: ${why}` };
    } catch (e) {
      return { error: `source text not available: ${e instanceof Error ? e.message : e}` };
    }
  }

  async #draw() {
    const { ask, state } = this.ctx;
    const render = ++this.renders;
    const name = state.current.selected;
    if (name === null) {
      this.heading.replaceChildren();
      this.#showEmpty(
        "No function is selected. Pick one in any view (a row of the Top functions or the Call tree, " +
          "a frame of the Sandwich or the Stack chart) and its source lines show here.",
      );
      return;
    }
    const lines = await ask("sourceLines", { name });
    if (render !== this.renders || !lines) return;
    this.heading.innerHTML = `<span class="name" title="${escapeHtml(lines.name)}">${escapeHtml(lines.name)}</span>
<span class="fact">${escapeHtml(lines.summary)}</span>`;
    if (lines.files.length === 0) {
      this.#showEmpty(`${name} has no source lines in what is shown (threads, range and transforms).`);
      return;
    }
    const texts = await Promise.all(lines.files.map((f) => this.#text(f.file)));
    if (render !== this.renders) return;
    this.#showEmpty("");
    this.listing.replaceChildren(...lines.files.map((file, i) => this.#file(file, texts[i])));
    const [hotFile, hotLine] = lines.hottest ?? [0, 0];
    const hot = this.listing.querySelectorAll(".source-file")[hotFile]?.querySelector(`tr[data-line="${hotLine}"]`);
    this.hottest = hot ?? null;
    if (hot) this.#moveTo(hot);
  }

  /** One file's section: its name and weight, whether its text is shown, and its rows. */
  #file(file, source) {
    const section = document.createElement("section");
    section.className = "source-file";
    section.dataset.file = file.file;
    const lines = source.text?.split("\n");
    if (lines && lines.at(-1) === "") lines.pop();
    const weighted = new Map(file.lines.map((l) => [l.line, l]));
    const numbers = this.#shown(file.lines.map((l) => l.line), lines?.length ?? 0);
    const rows = numbers.map((n, k) => {
      const gap = k > 0 && n > numbers[k - 1] + 1 ? `<tr class="gap"><td colspan="5">⋯</td></tr>` : "";
      const l = weighted.get(n);
      const code = escapeHtml(lines?.[n - 1] ?? "");
      if (!l) return `${gap}<tr data-line="${n}"><td></td><td></td><td class="no">${n}</td><td class="code">${code}</td></tr>`;
      return `${gap}<tr data-line="${n}" class="weighted" data-heat="${l.heat}">
<td class="self num" title="Self ${escapeHtml(l.selfPct)}">${escapeHtml(l.selfText)} <span class="pct">${escapeHtml(l.selfPct)}</span></td>
<td class="total num" title="Total ${escapeHtml(l.totalPct)}">${escapeHtml(l.totalText)} <span class="pct">${escapeHtml(l.totalPct)}</span></td>
<td class="no">${n}</td><td class="code">${code}</td></tr>`;
    });
    section.innerHTML = `<h3><span class="path">${escapeHtml(file.file)}</span>
<span class="fact">${escapeHtml(file.totalText)} <span class="pct">${escapeHtml(file.totalPct)}</span></span></h3>
${source.error ? `<p class="source-status" role="status">${escapeHtml(source.error)}</p>` : ""}
<table><thead><tr><th class="num">Self</th><th class="num">Total</th><th class="no">Line</th><th class="code">${lines ? "Source" : ""}</th></tr></thead>
<tbody>${rows.join("")}</tbody></table>`;
    // Heat: a warm background, stronger for hotter lines (the wasm module's fraction). Set
    // through the DOM: the page's content security policy refuses inline style attributes.
    for (const row of section.querySelectorAll("tr.weighted")) {
      row.style.backgroundColor = `rgba(255, 120, 40, ${0.08 + 0.5 * Number(row.dataset.heat)})`;
    }
    return section;
  }

  /** The line numbers to show: the weighted ones and, when there is text (`length` lines),
   * CONTEXT lines around each. */
  #shown(weighted, length) {
    const shown = new Set(weighted);
    for (const line of weighted) {
      for (let n = Math.max(1, line - CONTEXT); n <= Math.min(length, line + CONTEXT); n++) shown.add(n);
    }
    return [...shown].sort((a, b) => a - b);
  }

  /** Makes `row` the current line and scrolls it into the middle of the listing. */
  #moveTo(row) {
    for (const old of this.listing.querySelectorAll("tr.current")) old.classList.remove("current");
    row.classList.add("current");
    const top = row.getBoundingClientRect().top - this.listing.getBoundingClientRect().top;
    this.listing.scrollTop += top - this.listing.clientHeight / 2 + row.offsetHeight / 2;
  }

  #key(e) {
    const rows = [...this.listing.querySelectorAll("tr.weighted")];
    if (rows.length === 0) return;
    const at = rows.findIndex((r) => r.classList.contains("current"));
    let next = null;
    if (e.key === "ArrowDown") next = rows[Math.min(rows.length - 1, at + 1)];
    else if (e.key === "ArrowUp") next = rows[Math.max(0, at - 1)];
    else if (e.key === "Home") next = this.hottest;
    if (next) {
      e.preventDefault();
      this.#moveTo(next);
    }
  }

  /** The weighted rows as the page shows them (for tests): file, line, self, total, code. */
  rows() {
    return [...this.listing.querySelectorAll(".source-file")].flatMap((section) =>
      [...section.querySelectorAll("tr.weighted")].map((row) => ({
        file: section.dataset.file,
        line: Number(row.dataset.line),
        self: row.querySelector(".self").textContent,
        total: row.querySelector(".total").textContent,
        code: row.querySelector(".code").textContent,
      })),
    );
  }
}
