// The transform stack: a bar under the toolbar, on every tab, with one removable chip per
// transform (their texts come from the wasm module) and a form that adds pprof's regex focus,
// ignore and hide; and the menu that offers the function transforms for a frame (right-click a
// flame frame, or the flame view's "Transform" button). The state's `transforms` key holds the
// stack as the core's TransformSpec objects; the core applies them, in order, to every view.

import { escapeHtml } from "./html-and-color.js";

/** Adds `spec` on top of the stack (zoom is reset: the tree it pointed into is gone). */
function push(state, spec) {
  state.update({ transforms: [...state.current.transforms, spec], zoom: [], flameWindow: null });
}

export class TransformBar {
  /**
   * @param {HTMLElement} element the bar (`#transforms` in index.html); this class fills it
   * @param {object} ctx the page's context (app.js): state, ask
   */
  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    element.innerHTML = `<form class="transform-add">
  <select aria-label="Regex transform">
    <option value="focus" title="Keep only samples with a matching function on their stack">Focus</option>
    <option value="ignore" title="Drop samples with a matching function on their stack">Ignore</option>
    <option value="hide" title="Remove matching functions' frames, charging their callers">Hide</option>
  </select>
  <input type="text" placeholder="regex, e.g. ^std::" spellcheck="false" autocomplete="off" aria-label="Transform regex">
  <button type="submit">Add</button>
  <span class="transform-error" aria-live="polite"></span>
</form>
<ol class="chips" aria-label="Transforms"></ol>`;
    this.form = element.querySelector("form");
    this.kind = element.querySelector("select");
    this.input = element.querySelector("input");
    this.error = element.querySelector(".transform-error");
    this.chips = element.querySelector(".chips");
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.#addRegex();
    });
    this.input.addEventListener("input", () => {
      this.input.classList.remove("invalid");
      this.error.textContent = "";
    });
    this.chips.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-index]");
      if (!button) return;
      const index = Number(button.dataset.index);
      const transforms = ctx.state.current.transforms.filter((_, i) => i !== index);
      // A removed default (a wall session's folded scheduler) stays removed on reload.
      ctx.state.update({ transforms, zoom: [], flameWindow: null, defaultsOff: true });
    });
  }

  /** Checks the typed regex with the core (which compiles it as `prof report` does) and adds it. */
  async #addRegex() {
    const pattern = this.input.value;
    if (!pattern) return;
    const spec = { kind: this.kind.value, pattern };
    try {
      const text = await this.ctx.ask("checkTransform", { spec });
      if (text === null) return;
    } catch (e) {
      this.input.classList.add("invalid");
      this.error.textContent = e instanceof Error ? e.message : String(e);
      return;
    }
    this.input.value = "";
    push(this.ctx.state, spec);
  }

  /** Shows the stack: `chips` from the worker, `[{text, error}]`, one per transform. */
  render(chips) {
    this.element.classList.toggle("empty", chips.length === 0);
    this.chips.innerHTML = chips
      .map(
        (chip, i) => `<li class="chip${chip.error ? " invalid" : ""}"${chip.error ? ` title="${escapeHtml(chip.error)}"` : ""}>
<span class="text">${escapeHtml(chip.text)}</span><button type="button" data-index="${i}" aria-label="Remove ${escapeHtml(chip.text)}" title="Remove this transform">×</button></li>`,
      )
      .join("");
  }

  /** Empties the bar (no profile). */
  clear() {
    this.render([]);
    this.error.textContent = "";
  }
}

/** The menu of transforms for one frame, as buttons (keyboard-reachable; Escape closes it). */
export class TransformMenu {
  /** @param {object} ctx the page's context (app.js): state, ask */
  constructor(ctx) {
    this.ctx = ctx;
    this.element = document.createElement("div");
    this.element.className = "transform-menu";
    this.element.role = "menu";
    this.element.hidden = true;
    document.body.append(this.element);
    this.element.addEventListener("click", (e) => {
      const item = e.target.closest("button[data-item]");
      if (!item) return;
      push(ctx.state, this.specs[Number(item.dataset.item)]);
      this.close();
    });
    this.element.addEventListener("keydown", (e) => {
      // Keys in the menu are the menu's: the page's shortcuts (arrows move between frames,
      // Enter zooms) must not act behind it.
      e.stopPropagation();
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        // Arrows move between the items, wrapping around.
        e.preventDefault();
        const items = [...this.element.querySelectorAll("button")];
        const at = items.indexOf(document.activeElement);
        const step = e.key === "ArrowDown" ? 1 : -1;
        items[(at + step + items.length) % items.length]?.focus();
        return;
      }
      if (e.key !== "Escape") return;
      e.preventDefault();
      this.close();
    });
    document.addEventListener("pointerdown", (e) => {
      if (!this.element.hidden && !this.element.contains(e.target)) this.close();
    });
  }

  /**
   * Opens the menu at (`x`, `y`) client pixels for a frame: `name` its function, `path` the
   * function names from the root down to it (null when the menu is for a function, not a
   * node), `module` its module (null when unknown).
   */
  open(x, y, { name, path, module }) {
    const items = [
      ["Focus on function", { kind: "focus-function", function: name }],
      ...(path ? [["Focus on subtree", { kind: "focus-subtree", path }]] : []),
      ["Merge function into callers", { kind: "merge", function: name }],
      ["Drop samples with this function", { kind: "drop", function: name }],
      ["Collapse recursion", { kind: "collapse-recursion" }],
      ...(module ? [[`Collapse module ${module}`, { kind: "collapse-module", module }]] : []),
    ];
    this.specs = items.map(([, spec]) => spec);
    this.element.innerHTML = `<div class="title">${escapeHtml(name)}</div>${items
      .map(([label], i) => `<button type="button" role="menuitem" data-item="${i}">${escapeHtml(label)}</button>`)
      .join("")}`;
    this.element.hidden = false;
    const { offsetWidth: w, offsetHeight: h } = this.element;
    this.element.style.left = `${Math.max(4, Math.min(x, window.innerWidth - w - 4))}px`;
    this.element.style.top = `${Math.max(4, Math.min(y, window.innerHeight - h - 4))}px`;
    this.element.querySelector("button")?.focus();
  }

  close() {
    this.element.hidden = true;
  }
}
