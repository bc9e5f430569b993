// The served page's first steps, taken as soon as index.html is parsed (a classic deferred
// script: it runs before app.js, which waits for some thirty modules first). It starts the
// worker, which fetches and compiles the wasm module, fetches the list of profiles, and asks the
// worker to load the file the URL names, so that its download starts too. app.js's first
// Backend adopts the worker and the answers it gave meanwhile (backend.js). On a busy machine
// the page's modules take a few hundred milliseconds to arrive: the compilation and the
// download no longer wait for them (docs/benchmarks.md, the viewer's first paint). The
// single-file page does not run this script (serve/standalone.rs removes its tag).
"use strict";
window.profBoot = (() => {
  const worker = new Worker("worker.js", { type: "module" });
  /** The worker's messages until a Backend adopts it. */
  const early = [];
  worker.onmessage = (event) => early.push(event.data);
  worker.onerror = (event) => {
    event.preventDefault();
    early.push({ workerError: event.message });
  };
  worker.postMessage({ id: -1, method: "init", args: {} });
  const files = fetch("sessions.json").then((response) => {
    if (!response.ok) throw new Error(`listing the profiles failed: HTTP ${response.status}`);
    return response.json();
  });
  // The file the fragment names, as state.js reads it (app.js checks that it agrees before it
  // takes the answer; when it does not, it ends this worker and starts another).
  const first = files.then(
    (list) => {
      if (!Array.isArray(list) || list.length === 0) return null;
      const named = Number(new URLSearchParams(location.hash.replace(/^#/, "")).get("file"));
      const index = Math.min(Number.isInteger(named) && named >= 0 ? named : 0, list.length - 1);
      const url = new URL(list[index].url, location.href).href;
      worker.postMessage({ id: -2, method: "load", args: { url, size: list[index].size } });
      return { index, id: -2 };
    },
    () => null,
  );
  return { worker, early, files, first };
})();
