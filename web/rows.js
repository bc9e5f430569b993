// Virtualized rows: a scrolling box that holds only the rows on screen (plus a few either
// side), so tables of 100,000 rows scroll and redraw as fast as tables of 50. Every row has the
// same height; the caller draws the rows it is asked for.

const OVERSCAN = 8;

export class VirtualRows {
  /**
   * @param {HTMLElement} scroller the scrolling box (its height is set by the page's layout)
   * @param {{rowHeight: number, draw: (first: number, last: number) => HTMLElement[]}} options
   *   `draw` returns the elements of rows `first` to `last - 1`
   */
  constructor(scroller, { rowHeight, draw }) {
    this.scroller = scroller;
    this.rowHeight = rowHeight;
    this.draw = draw;
    this.count = 0;
    this.pending = 0;
    this.space = document.createElement("div");
    this.space.className = "vrows-space";
    scroller.append(this.space);
    scroller.addEventListener("scroll", () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(scroller);
  }

  /** Sets the number of rows and redraws. */
  setCount(count) {
    this.count = count;
    this.space.style.height = `${count * this.rowHeight}px`;
    this.refresh();
  }

  /** The rows drawn: [first, last). */
  range() {
    const top = this.scroller.scrollTop;
    const height = this.scroller.clientHeight;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - OVERSCAN);
    const last = Math.min(this.count, Math.ceil((top + height) / this.rowHeight) + OVERSCAN);
    return [first, Math.max(first, last)];
  }

  /** Redraws on the next frame. */
  schedule() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      this.refresh();
    });
  }

  /** Redraws the rows on screen now. */
  refresh() {
    const [first, last] = this.range();
    const rows = this.draw(first, last);
    rows.forEach((row, k) => {
      row.style.top = `${(first + k) * this.rowHeight}px`;
    });
    this.space.replaceChildren(...rows);
  }

  /** Scrolls as little as needed for row `index` to be on screen. */
  reveal(index) {
    const top = index * this.rowHeight;
    const box = this.scroller;
    if (top < box.scrollTop) box.scrollTop = top;
    else if (top + this.rowHeight > box.scrollTop + box.clientHeight) {
      box.scrollTop = top + this.rowHeight - box.clientHeight;
    }
  }

  /** How many rows fit on screen (for Page Up and Page Down). */
  pageRows() {
    return Math.max(1, Math.floor(this.scroller.clientHeight / this.rowHeight) - 1);
  }
}
