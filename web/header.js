// The header (what was profiled, and how) and the file and thread selectors.

import { escapeHtml } from "./format.js";

/** Fills the header's list with the session's metadata, as the wasm module formats it. */
export function renderMeta(dl, meta) {
  const items = [
    ["Program", meta.program || "(unknown)"],
    ["Date", meta.dateText],
    ["Duration", meta.durationText],
    ["Samples", meta.samplesText],
    ["Dropped", meta.droppedText],
    ["Rate", meta.rateText],
    ["Timer", meta.timer || "unknown"],
    ["Type", meta.typeText],
  ];
  dl.innerHTML = items
    .map(([k, v]) => `<div data-key="${k.toLowerCase()}"><dt>${k}</dt><dd>${escapeHtml(v)}</dd></div>`)
    .join("");
}

/**
 * Fills the thread selector: all threads merged first, then each thread with its sample count and
 * share of the samples, as counted and labelled by the wasm module.
 */
export function renderThreads(select, threads, allLabel) {
  const options = [`<option value="-1">${escapeHtml(allLabel)}</option>`];
  for (const t of threads) {
    options.push(`<option value="${t.index}">${escapeHtml(t.label)}</option>`);
  }
  select.innerHTML = options.join("");
  select.value = "-1";
}

/** Empties the header and the thread selector (a file that could not be shown). */
export function clearMeta(dl, select) {
  dl.replaceChildren();
  select.replaceChildren();
}

/** Fills the file selector; it is shown only when there is more than one file. */
export function renderFiles(select, files) {
  select.innerHTML = files
    .map((f, i) => `<option value="${i}">${escapeHtml(f.name)}</option>`)
    .join("");
  select.hidden = files.length < 2;
}

/** Shows the zoom path; clicking a crumb zooms back to it. */
export function renderBreadcrumbs(div, path, onPick) {
  div.replaceChildren();
  path.forEach((crumb, i) => {
    if (i > 0) {
      const sep = document.createElement("span");
      sep.className = "sep";
      sep.textContent = " › ";
      div.append(sep);
    }
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = crumb.name;
    button.dataset.node = crumb.node;
    if (i < path.length - 1) button.addEventListener("click", () => onPick(crumb.node));
    div.append(button);
  });
}
