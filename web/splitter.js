// A splitter between two panes (a `role="separator"` handle): drag it, or focus it and use the
// arrow keys (Home and End: the smallest and largest size; Enter: collapse the pane or show it
// again), to size one pane in CSS pixels. The size and whether the pane is collapsed are
// remembered in localStorage for the next visit, as the theme is; a window too small for a
// remembered size gets the largest that fits (each pane's CSS keeps its neighbour usable).

const STEP = 20; // CSS pixels per arrow key

export class Splitter {
  /**
   * @param {HTMLElement} handle the separator element (index.html gives it its label)
   * @param {object} options
   * @param {string} options.key the localStorage key of the size (`KEY`) and collapse
   *   (`KEY.collapsed`)
   * @param {boolean} options.vertical a vertical bar between a left and a right pane (dragged
   *   sideways; else a horizontal bar between an upper and a lower pane, dragged up and down)
   * @param {number} options.sign +1 when dragging right (or down) grows the pane, -1 when it
   *   shrinks it
   * @param {() => number} options.size the pane's size now
   * @param {() => {min: number, max: number}} options.limits the sizes it may take now
   * @param {(size: number | null) => void} options.resize sets the pane's size (null: its
   *   default)
   * @param {(collapsed: boolean) => void} [options.collapse] collapses the pane or shows it
   *   again (none: Enter does nothing)
   */
  constructor(handle, options) {
    this.handle = handle;
    this.options = options;
    this.collapsed = false;
    handle.tabIndex = 0;
    handle.role = "separator";
    handle.setAttribute("aria-orientation", options.vertical ? "vertical" : "horizontal");
    const stored = Number(load(options.key));
    if (stored > 0) options.resize(stored);
    if (options.collapse && load(`${options.key}.collapsed`) === "1") this.setCollapsed(true);
    handle.addEventListener("pointerdown", (e) => this.#down(e));
    handle.addEventListener("pointermove", (e) => this.#move(e));
    handle.addEventListener("pointerup", (e) => this.#up(e));
    handle.addEventListener("keydown", (e) => this.#key(e));
    handle.addEventListener("focus", () => this.#describe());
    new ResizeObserver(() => this.#describe()).observe(document.body);
  }

  /** Collapses the pane (true) or shows it again, and remembers it. */
  setCollapsed(collapsed) {
    if (!this.options.collapse) return;
    this.collapsed = collapsed;
    this.options.collapse(collapsed);
    this.handle.setAttribute("aria-expanded", String(!collapsed));
    save(`${this.options.key}.collapsed`, collapsed ? "1" : null);
    this.#describe();
  }

  /** Sets the pane to `size` CSS pixels (within its limits now), and remembers it. */
  setSize(size) {
    const { min, max } = this.options.limits();
    const clamped = Math.round(Math.max(min, Math.min(max, size)));
    if (this.collapsed) this.setCollapsed(false);
    this.options.resize(clamped);
    save(this.options.key, String(clamped));
    this.#describe();
  }

  /** What a screen reader says of the separator: the pane's size, its limits. */
  #describe() {
    const { min, max } = this.options.limits();
    this.handle.setAttribute("aria-valuemin", String(Math.round(min)));
    this.handle.setAttribute("aria-valuemax", String(Math.round(Math.max(min, max))));
    this.handle.setAttribute("aria-valuenow", String(this.collapsed ? 0 : Math.round(this.options.size())));
  }

  #at(e) {
    return this.options.vertical ? e.clientX : e.clientY;
  }

  #down(e) {
    if (e.button !== 0) return;
    e.preventDefault();
    this.handle.setPointerCapture(e.pointerId);
    this.drag = { from: this.#at(e), size: this.collapsed ? 0 : this.options.size() };
    this.handle.classList.add("dragging");
  }

  #move(e) {
    if (!this.drag) return;
    this.setSize(this.drag.size + this.options.sign * (this.#at(e) - this.drag.from));
  }

  #up() {
    this.drag = null;
    this.handle.classList.remove("dragging");
  }

  #key(e) {
    const { vertical, sign } = this.options;
    const forward = vertical ? "ArrowRight" : "ArrowDown";
    const back = vertical ? "ArrowLeft" : "ArrowUp";
    const size = this.collapsed ? 0 : this.options.size();
    const { min, max } = this.options.limits();
    let handled = true;
    if (e.key === forward) this.setSize(size + sign * STEP);
    else if (e.key === back) this.setSize(size - sign * STEP);
    else if (e.key === "Home") this.setSize(min);
    else if (e.key === "End") this.setSize(max);
    else if (e.key === "Enter" && this.options.collapse) this.setCollapsed(!this.collapsed);
    else handled = false;
    if (handled) {
      e.preventDefault();
      e.stopPropagation();
    }
  }
}

function load(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function save(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // Storage refused (a private window, a file: page): the choice lasts this visit.
  }
}
