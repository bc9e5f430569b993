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
import { WeightedListingView, moveTo, shadeHeat } from "../weighted-listing.js";

/** Lines of source shown around the function's weighted lines. */
const CONTEXT = 3;

export class SourceView extends WeightedListingView {
  static id = "source";
  static shows = "source lines";
  static label = "Source";

  /** The text of `file` from the server: `{text}`, or `{error}` saying why there is none. */
  #text(file) {
    if (!this.fetched.has(file)) {
      this.fetched.set(file, this.#fetch(file));
    }
    return this.fetched.get(file);
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

  async drawFunction(name, stale) {
    const { ask } = this.ctx;
    const lines = await ask("sourceLines", { name });
    if (stale() || !lines) return;
    this.heading.innerHTML = `<span class="name" title="${escapeHtml(lines.name)}">${escapeHtml(lines.name)}</span>
<span class="fact">${escapeHtml(lines.summary)}</span>`;
    if (lines.files.length === 0) {
      this.showEmpty(`${name} has no source lines in what is shown (threads, range and transforms).`);
      return;
    }
    const texts = await Promise.all(lines.files.map((f) => this.#text(f.file)));
    if (stale()) return;
    this.showEmpty("");
    this.listing.replaceChildren(...lines.files.map((file, i) => this.#file(file, texts[i])));
    const [hotFile, hotLine] = lines.hottest ?? [0, 0];
    const hot = this.listing.querySelectorAll(".source-file")[hotFile]?.querySelector(`tr[data-line="${hotLine}"]`);
    this.hottest = hot ?? null;
    if (hot) moveTo(this.listing, hot);
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
    shadeHeat(section);
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
