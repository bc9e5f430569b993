// The header (what was profiled, and how) and the file and thread selectors.

import { escapeHtml, formatDuration } from "./format.js";

/** Fills the header's list with the session's metadata, as computed by the wasm module. */
export function renderMeta(dl, meta) {
  const rate = meta.achievedRateHz > 0 ? `${meta.achievedRateHz.toFixed(0)} Hz` : "unknown";
  const items = [
    ["Program", meta.program || "(unknown)"],
    ["Date", meta.startTime ? meta.startTime.replace("T", " ").replace(/\.\d+/, "") : "unknown"],
    ["Duration", formatDuration(meta.durationNs)],
    ["Samples", meta.samples.toLocaleString("en-US")],
    ["Dropped", meta.dropped.toLocaleString("en-US")],
    ["Rate", rate],
    ["Timer", meta.timer || "unknown"],
  ];
  dl.innerHTML = items
    .map(([k, v]) => `<div data-key="${k.toLowerCase()}"><dt>${k}</dt><dd>${escapeHtml(v)}</dd></div>`)
    .join("");
}

/**
 * Fills the thread selector: all threads merged first, then each thread with its sample count and
 * share of the samples, as counted by the wasm module.
 */
export function renderThreads(select, threads, totalSamples) {
  const count = (n) => `${n.toLocaleString("en-US")} sample${n === 1 ? "" : "s"}`;
  const options = [
    `<option value="-1">All threads (${threads.length}): ${count(totalSamples)}</option>`,
  ];
  for (const t of threads) {
    const name = t.name ? `${t.name} ` : "";
    options.push(
      `<option value="${t.index}">${escapeHtml(name)}[${t.tid}]: ${count(t.samples)} (${escapeHtml(t.samplesPct)})</option>`,
    );
  }
  select.innerHTML = options.join("");
  select.value = "-1";
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
