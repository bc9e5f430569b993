// Long function names shown whole or not at all mid-identifier: a name that does not fit is
// cut in the middle (`std::collections::hash…HashMap<K,V>::insert`), keeping its start (the
// crate and module) and its end (the function), with the full name in the element's title and
// a copy action.

const measurer = document.createElement("canvas").getContext("2d");
const widths = new Map();

/** The width of one character of the monospace `font` (a CSS font shorthand). */
function charWidth(font) {
  let width = widths.get(font);
  if (width === undefined) {
    measurer.font = font;
    width = measurer.measureText("0123456789").width / 10 || 7;
    widths.set(font, width);
  }
  return width;
}

/** The width in CSS pixels of `text` in `font` (a CSS font shorthand). */
export function textWidth(text, font) {
  measurer.font = font;
  return measurer.measureText(text).width;
}

/** The font of `element` for a canvas. (The computed `font` shorthand is empty when a part of
 * it, such as `font-variant-numeric`, has no place in the shorthand.) */
export function fontOf(element) {
  const s = getComputedStyle(element);
  return `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
}

/** `text` cut to at most `max` characters by replacing its middle with `…`. */
export function elideMiddle(text, max) {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  if (max <= 1) return "…";
  const tail = Math.floor((max - 1) / 2);
  const head = max - 1 - tail;
  return `${chars.slice(0, head).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

/**
 * Shows `name` in `element`, elided in the middle to fit `width` CSS pixels in the element's
 * (monospace) font, with the full name as its title. `font` may be passed to skip looking it up.
 */
export function fitName(element, name, width, font = fontOf(element)) {
  const max = Math.max(3, Math.floor(width / charWidth(font)));
  element.textContent = elideMiddle(name, max);
  element.title = name;
}

/** A hidden element in `container` with class `name`, whose font is the names' font there. */
export function fontProbe(container) {
  const probe = document.createElement("span");
  probe.className = "name";
  probe.setAttribute("aria-hidden", "true");
  probe.style.cssText = "position: absolute; visibility: hidden; pointer-events: none;";
  container.append(probe);
  return probe;
}

/** Copies `text` to the clipboard; falls back to a selected text area where the clipboard API
 * is refused (insecure origins, denied permission). Resolves to whether it was copied. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch {
      copied = false;
    }
    area.remove();
    return copied;
  }
}
