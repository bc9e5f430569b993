// What the Source and Assembly views share: a scrolling listing of rows, some weighted and
// shaded by how hot they are (a fraction the wasm module gives), one of them current. Up and
// Down move between the weighted rows, Home returns to the hottest.

/** Shades each `tr.weighted` under `root` by its `data-heat` (0 to 1): a warm background,
 * stronger for hotter rows. Set through the DOM: the page's content security policy refuses
 * inline style attributes. */
export function shadeHeat(root) {
  for (const row of root.querySelectorAll("tr.weighted")) {
    row.style.backgroundColor = `rgba(255, 120, 40, ${0.08 + 0.5 * Number(row.dataset.heat)})`;
  }
}

/** Makes `row` the current row of `listing` and scrolls it into the middle of it. */
export function moveTo(listing, row) {
  for (const old of listing.querySelectorAll("tr.current")) old.classList.remove("current");
  row.classList.add("current");
  const top = row.getBoundingClientRect().top - listing.getBoundingClientRect().top;
  listing.scrollTop += top - listing.clientHeight / 2 + row.offsetHeight / 2;
}

/** Handles a key on `listing`: Up and Down to the previous or next weighted row, Home to
 * `hottest()`. */
export function stepKey(e, listing, hottest) {
  const rows = [...listing.querySelectorAll("tr.weighted")];
  if (rows.length === 0) return;
  const at = rows.findIndex((r) => r.classList.contains("current"));
  let next = null;
  if (e.key === "ArrowDown") next = rows[Math.min(rows.length - 1, at + 1)];
  else if (e.key === "ArrowUp") next = rows[Math.max(0, at - 1)];
  else if (e.key === "Home") next = hottest();
  if (next) {
    e.preventDefault();
    moveTo(listing, next);
  }
}

/** A view of one selected function as such a listing (the Source and Assembly views): its
 * `.source-function` heading, a `.source-empty` line saying why there is nothing to list, and
 * the `.source-listing`. A view extends it with a static `shows` (what it lists: "source
 * lines") and `drawFunction(name, stale)`, which draws function `name`'s listing and returns
 * early when `stale()` says, after a wait, that a newer draw has started; it keeps what it
 * fetched from the server in `this.fetched` (forgotten with the profile). */
export class WeightedListingView {
  constructor(element, ctx) {
    this.element = element;
    this.ctx = ctx;
    this.heading = element.querySelector(".source-function");
    this.empty = element.querySelector(".source-empty");
    this.listing = element.querySelector(".source-listing");
    this.fetched = new Map(); // what was asked of the server → promise of its answer
    this.renders = 0;
    this.drawn = Promise.resolve();
    this.hottest = null; // the hottest row
    this.listing.addEventListener("keydown", (e) => stepKey(e, this.listing, () => this.hottest));
  }

  clear() {
    this.fetched.clear();
    this.hottest = null;
    this.heading.replaceChildren();
    this.listing.replaceChildren();
    this.showEmpty("");
  }

  async render(changed) {
    if (["samples", "threads", "range", "transforms", "selected", "view"].some((k) => changed.has(k))) {
      this.drawn = this.draw();
      await this.drawn;
    }
  }

  /** Draws the selected function's listing, or says that none is selected. */
  async draw() {
    const render = ++this.renders;
    const name = this.ctx.state.current.selected;
    if (name === null) {
      this.heading.replaceChildren();
      this.showEmpty(
        "No function is selected. Pick one in any view (a row of the Top functions or the Call tree, " +
          `a frame of the flame graph, the Sandwich or the Stack chart) and its ${this.constructor.shows} show here.`,
      );
      return;
    }
    await this.drawFunction(name, () => render !== this.renders);
  }

  /** Resolves once the newest listing is drawn. */
  settled() {
    return this.drawn;
  }

  /** Shows `text` instead of the listing, or the listing when `text` is empty. */
  showEmpty(text) {
    this.empty.textContent = text;
    this.empty.hidden = !text;
    this.listing.hidden = Boolean(text);
  }
}
