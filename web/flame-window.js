// Wheel zoom and drag pan of a flame graph (flame.js), shared by the views that show one: the
// visible part of the zoomed frame is a state key (`flameWindow` for the Flame graph view,
// `diffWindow` for the Diff view) holding [from, to) fractions of its width, null for all of it.

/** The narrowest window, as a fraction of the zoomed frame. */
const MIN_WIDTH = 1e-6;

/**
 * The `onPan` and `onWheel` handlers of a `FlameGraph` that move the window the state holds in
 * `key` (history entries are replaced, not added: a wheel turn makes many).
 * @param {object} state the page's state (state.js)
 * @param {string} key the state key holding the window
 */
export function windowHandlers(state, key) {
  const change = (move) => {
    const [from, to] = state.current[key] ?? [0, 1];
    let [a, b] = move(from, to);
    const width = Math.min(1, Math.max(MIN_WIDTH, b - a));
    a = Math.min(Math.max(0, a), 1 - width);
    b = a + width;
    const whole = a <= 0 && b >= 1;
    state.update({ [key]: whole ? null : [a, b] }, { replace: true });
  };
  return {
    onPan: (dx) => change((from, to) => [from + dx * (to - from), to + dx * (to - from)]),
    onWheel: (factor, at) =>
      change((from, to) => {
        const pivot = from + at * (to - from);
        return [pivot - (pivot - from) * factor, pivot + (to - pivot) * factor];
      }),
  };
}

/** Keeps a "Left heavy" checkbox and the state's `leftHeavy` (one order for every flame
 * graph) in step; call `sync()` on render. */
export function leftHeavyToggle(checkbox, state) {
  checkbox.addEventListener("change", (e) => state.update({ leftHeavy: e.target.checked }));
  return {
    sync() {
      checkbox.checked = state.current.leftHeavy;
    },
  };
}

/** Shows the tooltip of frame `index` of `view`'s flame graph at the pointer (`event`), or hides
 * it when the pointer left every frame: a merged sliver's weight from the question
 * `weightQuestion`, a frame's from `nodeQuestion`, drawn by `nodeHtml(answer)`. Nothing is shown
 * when the pointer moved on or the layout changed while the answer was on its way. */
export async function showFrameTooltip(view, index, event, questions) {
  const { weightQuestion, nodeQuestion, nodeHtml } = questions;
  const { ask, tooltip } = view.ctx;
  if (index < 0 || !event) {
    tooltip.hide();
    return;
  }
  const layout = view.layout;
  let html;
  if (layout.func[index] === layout.merged) {
    const texts = await ask(weightQuestion, { weight: layout.weight[index] });
    if (!texts) return;
    html = tooltip.merged(layout.mergedCount[index], texts);
  } else {
    const info = await ask(nodeQuestion, { node: layout.node[index] });
    if (!info) return;
    html = nodeHtml(info);
  }
  if (view.layout !== layout || view.flame.hovered !== index) return;
  tooltip.show(html, event);
}
