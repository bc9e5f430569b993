// The Assembly view: the selected function's machine instructions (picked in any view, as for
// the Source view), each sampled instruction with its self weight, share and sample count and
// its total, shaded by how hot it is, scrolled to the hottest. The wasm module says where the
// function's hottest code lies (a mapping of the session and a file offset), `prof serve` reads
// and disassembles the function there from the recorded binary (`disasm?session=N&mapping=M&
// offset=O`, only for a session recorded on its machine), and the wasm module then charges
// the samples to the instructions' offsets: every number and text is the wasm module's or the
// server's. When the code is not at hand (another machine's session, an import without
// addresses or mappings, a rebuilt binary, the single-file viewer) the view says why in one line.
//
// Keyboard: the listing is focusable; Up and Down move between sampled instructions, Home
// returns to the hottest.

import { escapeHtml } from "../html-and-color.js";
import { WeightedListingView, moveTo, shadeHeat } from "../weighted-listing.js";

export class AssemblyView extends WeightedListingView {
  static id = "assembly";
  static shows = "instructions";
  static label = "Assembly";

  /** The server's index of the profile shown, or why the server cannot read its binaries. */
  #session() {
    if (window.profStandalone) {
      return { error: "Assembly needs prof serve on the machine that recorded the profile: not available in a single-file viewer." };
    }
    const file = this.ctx.page.files[this.ctx.page.loadedFile];
    const index = /^session\/(\d+)$/.exec(file?.url ?? "")?.[1];
    if (file?.local || index === undefined) {
      return { error: "Assembly is read by prof serve from the binaries of the profiles it serves, not for a file opened from this computer." };
    }
    return { index };
  }

  /** The code at `offset` of mapping `mapping` of profile `session`, from the server. */
  #fetch(session, mapping, offset) {
    const key = `${session}/${mapping}/${offset}`;
    if (!this.fetched.has(key)) {
      const url = `disasm?session=${session}&mapping=${mapping}&offset=${offset}`;
      this.fetched.set(key, (async () => {
        try {
          const response = await fetch(url);
          if (response.ok) return { listing: await response.json() };
          const why = (await response.text()).split("\n")[0] || `HTTP ${response.status}`;
          return { error: why };
        } catch (e) {
          return { error: e instanceof Error ? e.message : String(e) };
        }
      })());
    }
    return this.fetched.get(key);
  }

  async drawFunction(name, stale) {
    const { ask } = this.ctx;
    const target = await ask("assemblyTarget", { name });
    if (stale() || !target) return;
    this.heading.innerHTML = `<span class="name" title="${escapeHtml(name)}">${escapeHtml(name)}</span>`;
    const session = this.#session();
    const why = target.why ?? session.error;
    if (why) {
      this.showEmpty(why);
      return;
    }
    const code = await this.#fetch(session.index, target.mapping, target.offset);
    if (stale()) return;
    if (code.error) {
      this.showEmpty(`Assembly not available: ${code.error}`);
      return;
    }
    const { listing } = code;
    const starts = listing.instructions.map((i) => i.offset);
    const weights = await ask("assembly", { name, mapping: target.mapping, starts, end: listing.end });
    if (stale() || !weights) return;
    this.heading.innerHTML = `<span class="name" title="${escapeHtml(name)}">${escapeHtml(name)}</span>
<span class="fact">${escapeHtml(weights.summary)}</span>`;
    this.showEmpty("");
    this.listing.replaceChildren(this.#code(listing, weights, name));
    const hot = weights.hottest === null ? null : this.listing.querySelector(`tr[data-index="${weights.hottest}"]`);
    this.hottest = hot;
    if (hot) moveTo(this.listing, hot);
  }

  /** The function's section: its symbol and binary, what is not shown, and a row per
   * instruction. */
  #code(listing, weights, name) {
    const section = document.createElement("section");
    section.className = "source-file asm-code";
    const byIndex = new Map(weights.rows.map((r) => [r.index, r]));
    const rows = listing.instructions.map((ins, i) => {
      const w = byIndex.get(i);
      const cells = `<td class="addr">${escapeHtml(ins.address)}</td><td class="bytes">${escapeHtml(ins.bytes)}</td><td class="code">${escapeHtml(ins.text)}</td>`;
      if (!w) return `<tr data-index="${i}" data-offset="${ins.offset}"><td></td><td></td><td></td>${cells}</tr>`;
      return `<tr data-index="${i}" data-offset="${ins.offset}" class="weighted" data-heat="${w.heat}">
<td class="self num" title="Self ${escapeHtml(w.selfPct)}">${escapeHtml(w.selfText)} <span class="pct">${escapeHtml(w.selfPct)}</span></td>
<td class="samples num" title="Samples taken at this instruction">${escapeHtml(w.selfSamples)}</td>
<td class="total num" title="Total ${escapeHtml(w.totalPct)} (${escapeHtml(w.totalSamples)} samples)">${escapeHtml(w.totalText)} <span class="pct">${escapeHtml(w.totalPct)}</span></td>
${cells}</tr>`;
    });
    const notes = [listing.cut, weights.outside &&
      `${weights.outside.selfText} self (${weights.outside.selfSamples} samples) and ${weights.outside.totalText} total of ${name} lie outside this code (another function it is inlined into, another binary, or past what is shown).`]
      .filter(Boolean)
      .map((note) => `<p class="source-status" role="status">${escapeHtml(note)}</p>`);
    section.innerHTML = `<h3><span class="path">${escapeHtml(listing.symbol)}</span>
<span class="fact binary" title="Build ID ${escapeHtml(listing.buildId ?? "none")}">${escapeHtml(listing.binary)}</span></h3>
${notes.join("")}
<table><thead><tr><th class="num">Self</th><th class="num">Samples</th><th class="num">Total</th><th>Address</th><th>Bytes</th><th class="code">Instruction</th></tr></thead>
<tbody>${rows.join("")}</tbody></table>`;
    shadeHeat(section);
    return section;
  }

  /** The sampled instructions as the page shows them (for tests): file offset, address,
   * instruction, self, samples, total, and whether it is the hottest. */
  rows() {
    return [...this.listing.querySelectorAll("tr.weighted")].map((row) => ({
      offset: Number(row.dataset.offset),
      address: row.querySelector(".addr").textContent,
      text: row.querySelector(".code").textContent,
      self: row.querySelector(".self").textContent,
      samples: row.querySelector(".samples").textContent,
      total: row.querySelector(".total").textContent,
      hottest: row === this.hottest,
    }));
  }
}
