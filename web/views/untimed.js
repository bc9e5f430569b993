/** Shows the profile's "no times" line in `none` instead of `scroller` when its samples carry no
 * times (pprof, folded stacks), which nothing drawn along a time axis can show; returns whether
 * they carry times. */
export function showIfTimed(ctx, scroller, none) {
  const meta = ctx.page.meta;
  const timed = !meta || meta.timed;
  scroller.hidden = !timed;
  none.hidden = timed;
  if (!timed) none.textContent = meta.untimedText;
  return timed;
}
