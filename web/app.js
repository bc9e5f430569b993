// The viewer page: loads the wasm module built from viewer/ and draws what it computes.
import init, { profVersion } from "./pkg/prof_viewer.js";

await init();
document.getElementById("version").textContent = `v${profVersion()}`;
