// Sortable column headers, shared by the tables that sort by a column either way (the Top
// functions view, the Diff view's table): `button[data-sort]` headers, clicked to sort by their
// column; the sorted one shows its direction (classes `sorted`, `ascending`/`descending` and
// `aria-sort` on the header cell).

export class SortHeaders {
  /**
   * @param {HTMLElement} head the element holding the `button[data-sort]` headers
   * @param {() => {column: string, descending: boolean}} current the order shown
   * @param {(sort: {column: string, descending: boolean}) => void} choose called with the
   *   order a click asks for
   */
  constructor(head, current, choose) {
    this.head = head;
    head.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-sort]");
      if (!button) return;
      const column = button.dataset.sort;
      const sort = current();
      // The sorted column turns around; another starts the way it reads best.
      choose(
        column === sort.column
          ? { column, descending: !sort.descending }
          : { column, descending: column !== "name" },
      );
    });
  }

  /** Marks the column and direction of `sort` on the headers. */
  show(sort) {
    for (const button of this.head.querySelectorAll("button[data-sort]")) {
      const sorted = button.dataset.sort === sort.column;
      button.classList.toggle("sorted", sorted);
      button.classList.toggle("descending", sorted && sort.descending);
      button.classList.toggle("ascending", sorted && !sort.descending);
      button.parentElement.setAttribute(
        "aria-sort",
        sorted ? (sort.descending ? "descending" : "ascending") : "none",
      );
    }
  }
}
