// The stable colour of each function and HTML escaping: what the views need of a name besides
// its text. Weights, percentages and counts are formatted by prof's core in the wasm module.

/**
 * The colour of a function: derived from its name only (FNV-1a hash), so the same function has
 * the same colour across reloads and files. Warm hues, like classic flame graphs.
 */
export function functionColor(name) {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const hue = 5 + (h % 50);
  const sat = 65 + ((h >>> 8) % 25);
  const light = 55 + ((h >>> 16) % 15);
  return `hsl(${hue} ${sat}% ${light}%)`;
}

/** Escapes text for use inside HTML. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
