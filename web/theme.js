// The page's colour theme: the system's (prefers-color-scheme, as speedscope follows it), or
// light or dark as chosen with the toolbar's theme button (◐, ☀, ☾: a click goes on to the
// next), remembered in this browser's
// localStorage (not in the URL: a shared link shows the view, each reader keeps their theme).
// style.css holds every colour as a custom property `light-dark(LIGHT, DARK)`, resolved by the
// root's `color-scheme`, which `data-theme` on <html> pins; the canvases read the resolved
// colours from here once per theme (`canvasColors`).

const KEY = "prof-theme";
const CHOICES = ["system", "light", "dark"];
/** Each choice's sign on the button and its name. */
const SIGNS = { system: "◐", light: "☀", dark: "☾" };
const NAMES = { system: "the system's", light: "light", dark: "dark" };
const systemDark = window.matchMedia?.("(prefers-color-scheme: dark)");

/** The colours canvas code draws with: `name` (camel case) -> the CSS custom property
 * `--name` (kebab case) of style.css, resolved for the theme shown. */
const CANVAS_COLORS = [
  "canvasBg",
  "canvasHiddenBg",
  "canvasRule",
  "canvasText",
  "canvasMuted",
  "canvasFaint",
  "canvasHeader",
  "canvasGroup",
  "canvasGroupBg",
  "canvasShade",
  "canvasTasksBg",
  "canvasFocus",
  "frameDim",
  "frameDimText",
  "frameAncestor",
  "frameAncestorText",
  "frameMerged",
  "trackDim",
  "trackHidden",
  "trackWaiting",
  "scopeMerged",
  "scopeHidden",
  "scopeMark",
];

let cached = null;

/** The stored choice: "system", "light" or "dark". */
export function themeChoice() {
  let stored = null;
  try {
    stored = localStorage.getItem(KEY);
  } catch {
    // Storage refused (a sandboxed frame, a file: page with storage off): the system's.
  }
  return CHOICES.includes(stored) ? stored : "system";
}

/** The theme shown: "light" or "dark". */
export function shownTheme() {
  const choice = themeChoice();
  if (choice !== "system") return choice;
  return systemDark?.matches ? "dark" : "light";
}

/** Shows the theme `choice` ("system", "light" or "dark") and remembers it. */
export function setTheme(choice) {
  if (!CHOICES.includes(choice)) choice = "system";
  try {
    if (choice === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // Not remembered; shown all the same.
  }
  applyTheme();
}

/** Sets <html data-theme> from the stored choice (absent: the system's). */
function applyTheme() {
  const choice = themeChoice();
  if (choice === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
  cached = null;
}

/** The canvases' colours for the theme shown (see CANVAS_COLORS), as `rgb(...)` texts. */
export function canvasColors() {
  if (cached) return cached;
  const probe = document.createElement("span");
  probe.hidden = true;
  document.body.append(probe);
  const colors = {};
  for (const name of CANVAS_COLORS) {
    probe.style.color = `var(--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)})`;
    colors[name] = getComputedStyle(probe).color;
  }
  probe.remove();
  cached = colors;
  return colors;
}

/** Shows the choice on `button`: its sign, and what it is and what a click chooses in its
 * title and accessible name. */
function label(button) {
  const choice = themeChoice();
  const next = CHOICES[(CHOICES.indexOf(choice) + 1) % CHOICES.length];
  button.textContent = SIGNS[choice];
  button.dataset.choice = choice;
  const shown = choice === "system" ? ` (${shownTheme()})` : "";
  button.title = `Theme: ${NAMES[choice]}${shown}. Click for ${NAMES[next]}.`;
  button.ariaLabel = button.title;
}

/**
 * Shows the stored theme, lets `button` go through the choices (system, light, dark) and calls
 * `onChange` after every change of the theme shown (a click, or the system's theme changing
 * while it is followed), for the canvases to redraw.
 */
export function initTheme(button, onChange) {
  applyTheme();
  label(button);
  button.addEventListener("click", () => {
    const choice = themeChoice();
    setTheme(CHOICES[(CHOICES.indexOf(choice) + 1) % CHOICES.length]);
    label(button);
    onChange();
  });
  systemDark?.addEventListener?.("change", () => {
    cached = null;
    label(button);
    if (themeChoice() === "system") onChange();
  });
}
