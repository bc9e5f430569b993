// The transform stack: a bar under the toolbar, on every tab, with one removable chip per
// transform (their texts come from the wasm module) and a form that adds pprof's regex focus,
// ignore and hide, then a removable chip per filter that narrows the samples (threads, range,
// Time, scope, task), so that none is in force unseen on any tab; and the menu of a frame
// (right-click one in the flame graph, call tree, Sandwich or stack chart, or the flame view's
// "Transform" button), which copies its name, stack or a link, and offers its transforms. The state's `transforms` key holds the
// stack as the core's TransformSpec objects; the core applies them, in order, to every view.

import { copyText } from "./elide.js";
import { escapeHtml } from "./html-and-color.js";
import { format } from "./state.js";

/** The state key each filter chip clears (the wasm module's names of the filters). */
const FILTER_KEYS = { threads: "threads", range: "range", state: "threadState", scope: "scope", task: "task" };

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
<ol class="chips" aria-label="Transforms"></ol>
<ol class="chips filter-chips" aria-label="Filters"></ol>`;
    this.form = element.querySelector("form");
    this.kind = element.querySelector("select");
    this.input = element.querySelector("input");
    this.error = element.querySelector(".transform-error");
    this.chips = element.querySelector(".chips");
    this.filterChips = element.querySelector(".filter-chips");
    this.filterChips.addEventListener("click", (e) => {
      const filter = e.target.closest("button[data-filter]")?.dataset.filter;
      if (filter) ctx.state.update({ [FILTER_KEYS[filter]]: null });
    });
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

  /** Shows the stack: `chips` from the worker, `[{text, error}]`, one per transform; and the
   * filters in force, `filters` from the worker, `[{filter, text}]`. */
  render(chips, filters = []) {
    this.element.classList.toggle("empty", chips.length === 0);
    this.filterChips.innerHTML = filters
      .map(
        (chip) => `<li class="chip filter" data-filter="${escapeHtml(chip.filter)}"><span class="text">${escapeHtml(chip.text)}</span><button type="button" data-filter="${escapeHtml(chip.filter)}" aria-label="Remove the filter ${escapeHtml(chip.text)}" title="Remove this filter">×</button></li>`,
      )
      .join("");
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

/** Whether key event `e` asks for a context menu (the Menu key, or Shift+F10). */
export function isMenuKey(e) {
  return e.key === "ContextMenu" || (e.shiftKey && e.key === "F10");
}

/** The menu of one frame (right-click it in the flame graph, call tree, Sandwich or stack
 * chart, or the Menu key or Shift+F10 on the focused one), as buttons (keyboard-reachable;
 * Escape closes it): copy its name, its stack or a link to the view with it selected, and the
 * transforms for it. */
export class TransformMenu {
  /** @param {object} ctx the page's context (app.js): state, ask */
  constructor(ctx) {
    this.ctx = ctx;
    this.element = document.createElement("div");
    this.element.className = "transform-menu";
    this.element.role = "menu";
    this.element.hidden = true;
    document.body.append(this.element);
    // What a copy did, said where a screen reader hears it.
    this.status = document.createElement("div");
    this.status.className = "copy-status";
    this.status.role = "status";
    this.status.hidden = true;
    document.body.append(this.status);
    this.element.addEventListener("click", (e) => {
      const item = e.target.closest("button[data-item]");
      if (!item) return;
      const action = this.actions[Number(item.dataset.item)];
      this.close();
      if (action.copy !== undefined) this.#copy(action.copy, action.what);
      else push(ctx.state, action.spec);
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
   * node: no subtree to focus on), `module` its module (null when unknown), `stack` the
   * function names of its stack, outermost first (null: no stack to copy), and `link` what
   * the state of a link to this view with the frame selected has in place of the current
   * state's (null: no link).
   */
  open(x, y, { name, path, module, stack = null, link = null }) {
    const items = [
      ["Copy name", { copy: name, what: "the name" }],
      ...(stack ? [["Copy stack", { copy: stack.join("\n"), what: "the stack" }]] : []),
      ...(link ? [["Copy link to this view", { copy: this.#link(link), what: "the link" }]] : []),
      ["Focus on function", { spec: { kind: "focus-function", function: name } }],
      ...(path ? [["Focus on subtree", { spec: { kind: "focus-subtree", path } }]] : []),
      ["Merge function into callers", { spec: { kind: "merge", function: name } }],
      ["Drop samples with this function", { spec: { kind: "drop", function: name } }],
      ["Collapse recursion", { spec: { kind: "collapse-recursion" } }],
      ...(module ? [[`Collapse module ${module}`, { spec: { kind: "collapse-module", module } }]] : []),
    ];
    this.actions = items.map(([, action]) => action);
    this.element.innerHTML = `<div class="title">${escapeHtml(name)}</div>${items
      .map(
        ([label, action], i) =>
          `${i > 0 && action.spec && items[i - 1][1].copy !== undefined ? '<hr role="separator">' : ""}<button type="button" role="menuitem" data-item="${i}">${escapeHtml(label)}</button>`,
      )
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

  /** The address of this page with the current state changed by `patch`. */
  #link(patch) {
    const hash = format({ ...this.ctx.state.current, ...patch });
    return `${location.origin}${location.pathname}${location.search}${hash}`;
  }

  /** Copies `text` (`what` it is, for the status line) and says whether it could. */
  async #copy(text, what) {
    const copied = await copyText(text);
    this.status.textContent = copied ? `Copied ${what}.` : "Copying was refused by the browser.";
    this.status.hidden = false;
    clearTimeout(this.statusTimer);
    this.statusTimer = setTimeout(() => (this.status.hidden = true), 3000);
  }
}
