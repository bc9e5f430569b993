// The header (what was profiled, and how) and the file and thread selectors.

import { escapeHtml } from "./html-and-color.js";

/** Fills the header's list with the session's metadata, as the wasm module formats it. */
export function renderMeta(dl, meta) {
  // [data-key, label, value]: the count's label is the wasm module's (`Samples`, or `Waits`
  // when the tasks' waits are shown); its data-key stays `samples`.
  const items = [
    ["program", "Program", meta.program || "(unknown)"],
    ["date", "Date", meta.dateText],
    ["duration", "Duration", meta.durationText],
    ["samples", meta.countLabel, meta.samplesText],
    ["dropped", "Dropped", meta.droppedText],
    ["rate", "Rate", meta.rateText],
    ["timer", "Timer", meta.timer || "unknown"],
    ["type", "Type", meta.typeText],
  ];
  dl.innerHTML = items
    .map(([key, label, v]) => `<div data-key="${key}"><dt>${escapeHtml(label)}</dt><dd>${escapeHtml(v)}</dd></div>`)
    .join("");
}

/**
 * Fills the thread selector, a set: its summary says what is shown (`label`, from the wasm
 * module; its tooltip the `prof report` command that selects the same samples, `command`), and
 * it lists every thread with a checkbox, its sample count and share, as counted and
 * labelled by the wasm module. With `processes` (`{label, threads}` from the wasm module, empty
 * for a single process) the threads are listed under their process, whose own checkbox shows or
 * hides all of them. `chosen` is the shown thread indices, null for all; `onChange(threads)` gets
 * the new choice (null: all).
 */
export function renderThreads(details, threads, processes, chosen, label, command, onChange) {
  const shown = new Set(chosen ?? threads.map((t) => t.index));
  const summary = document.createElement("summary");
  summary.textContent = label;
  summary.title = command;
  const list = document.createElement("div");
  list.className = "thread-list";
  const all = document.createElement("button");
  all.type = "button";
  all.textContent = "All threads";
  all.disabled = chosen === null;
  all.addEventListener("click", () => onChange(null));
  list.append(all);
  /** Shows the threads `which` (indices) when `on`, hides them otherwise. */
  const toggle = (which, on) => {
    const next = threads
      .map((u) => u.index)
      .filter((i) => (which.includes(i) ? on : shown.has(i)));
    onChange(next.length === threads.length ? null : next);
  };
  const item = (t) => {
    const row = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = String(t.index);
    box.checked = shown.has(t.index);
    box.addEventListener("change", () => toggle([t.index], box.checked));
    row.append(box, document.createTextNode(` ${t.label}`));
    return row;
  };
  const byIndex = new Map(threads.map((t) => [t.index, t]));
  if (processes.length > 0) {
    for (const p of processes) {
      const group = document.createElement("div");
      group.className = "process-group";
      const head = document.createElement("label");
      head.className = "process";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = p.threads.every((i) => shown.has(i));
      box.indeterminate = !box.checked && p.threads.some((i) => shown.has(i));
      box.addEventListener("change", () => toggle(p.threads, box.checked));
      head.append(box, document.createTextNode(` ${p.label}`));
      group.append(head, ...p.threads.filter((i) => byIndex.has(i)).map((i) => item(byIndex.get(i))));
      list.append(group);
    }
  } else {
    list.append(...threads.map(item));
  }
  details.replaceChildren(summary, list);
}

/**
 * Fills the sample type selector (`types`: `{name, text}` from the wasm module, the file's
 * default first), shown only when there is a choice; `onChange(name)` gets the type chosen.
 */
export function renderSampleTypes(select, types, chosen, onChange) {
  select.replaceChildren(
    ...types.map((t) => {
      const option = document.createElement("option");
      option.value = t.name;
      option.textContent = t.text;
      return option;
    }),
  );
  select.value = chosen ?? types[0]?.name ?? "";
  select.parentElement.hidden = types.length < 2;
  select.onchange = () => onChange(select.value);
}

/**
 * Shows the running / waiting selector when the samples record their thread's state (wall
 * mode); `onChange(value)` gets "running", "waiting", or "" for both.
 */
export function renderThreadStates(select, hasStates, chosen, onChange) {
  select.value = chosen ?? "";
  select.parentElement.hidden = !hasStates;
  select.onchange = () => onChange(select.value);
}

/** Empties the header and the thread selector (a file that could not be shown). */
export function clearMeta(dl, threads) {
  dl.replaceChildren();
  threads.replaceChildren();
}

/** Fills the file selector; it is shown only when there is more than one file. */
export function renderFiles(select, files) {
  select.innerHTML = files
    .map((f, i) => `<option value="${i}">${escapeHtml(f.name)}</option>`)
    .join("");
  select.closest("label").hidden = files.length < 2;
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
