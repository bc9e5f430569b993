// Formatting of weights and percentages, and the stable colour of each function.

/** Formats a weight in `unit` ("nanoseconds" or "bytes") for people. */
export function formatWeight(value, unit) {
  if (unit === "bytes") {
    const steps = [["GB", 1e9], ["MB", 1e6], ["kB", 1e3]];
    for (const [name, size] of steps) {
      if (value >= size) return `${(value / size).toFixed(value >= 10 * size ? 1 : 2)} ${name}`;
    }
    return `${value} B`;
  }
  if (unit === "nanoseconds") {
    const steps = [["s", 1e9], ["ms", 1e6], ["µs", 1e3]];
    for (const [name, size] of steps) {
      if (value >= size) return `${(value / size).toFixed(value >= 10 * size ? 1 : 2)} ${name}`;
    }
    return `${value} ns`;
  }
  return String(value);
}

/** A fraction (0..1) as a percentage with two decimals, as `prof report` prints it. */
export function formatPercent(fraction) {
  return `${(fraction * 100).toFixed(2)}%`;
}

/** A duration in nanoseconds as seconds. */
export function formatDuration(ns) {
  return formatWeight(ns, "nanoseconds");
}

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
