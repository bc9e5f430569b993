// The stable colour of each function and HTML escaping: what the views need of a name besides
// its text. Weights, percentages and counts are formatted by prof's core in the wasm module.

/**
 * The colour of a function: derived from its name only (FNV-1a hash), so the same function has
 * the same colour across reloads and files. Warm hues, like classic flame graphs.
 */
export function functionColor(name) {
  const h = nameHash(name);
  const hue = 5 + (h % 50);
  const sat = 65 + ((h >>> 8) % 25);
  const light = 55 + ((h >>> 16) % 15);
  return `hsl(${hue} ${sat}% ${light}%)`;
}

/**
 * The colour of a scope or task bar (views/timeline.js, views/stack-chart.js): from its name
 * only, as `functionColor`, in cool hues so that bars read apart from the stacks beside them.
 */
export function scopeColor(name) {
  const h = nameHash(name);
  const hue = 170 + (h % 70);
  const sat = 35 + ((h >>> 8) % 25);
  const light = 62 + ((h >>> 16) % 14);
  return `hsl(${hue} ${sat}% ${light}%)`;
}

/** The FNV-1a hash of `name`'s UTF-16 code units: what a name's colour is drawn from. */
function nameHash(name) {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Escapes text for use inside HTML. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
