// The time axis the timeline and the stack chart share, so that a moment lines up vertically in
// both: thread labels in a column GUTTER CSS pixels wide at the left, then the graph, whose x
// maps the window's times linearly (the wasm module gives each bucket, box and tick its place
// as a fraction of the window). Both scrolling boxes reserve the scrollbar's width (style.css),
// so their graphs are equally wide.

/** CSS pixels for the thread labels at the left of both views. */
export const GUTTER = 150;

/** The graph's width in CSS pixels in the scrolling box `scroller`. */
export function graphWidth(scroller) {
  return Math.max(1, Math.floor(scroller.clientWidth - GUTTER));
}

/** Draws the axis `ticks` ({x: a fraction of the graph, text}) of a graph `width` CSS pixels
 * wide starting at `left`, in a band `height` pixels tall from `top`: each a mark `mark`
 * pixels tall at the band's bottom and its text after it, or before it when the text would not
 * fit before the graph's right edge (the last one would be cut). */
export function drawTicks(ctx, ticks, left, width, top, height, mark) {
  const right = left + width;
  for (const tick of ticks) {
    const x = left + tick.x * width;
    ctx.fillRect(x, top + height - mark, 1, mark);
    const w = ctx.measureText(tick.text).width;
    ctx.fillText(tick.text, x + 3 + w <= right ? x + 3 : Math.max(left, x - 3 - w), top + height / 2);
  }
}
