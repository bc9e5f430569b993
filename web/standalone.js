// The bootstrap of the single-file page (`prof convert --to html`): the page's modules, the
// wasm module and the sessions are inside the HTML file, so it opens from disk, offline. This
// classic script turns each module into a blob URL (rewriting its relative imports to the blob
// URLs of what it imports), describes the embedded files in `window.profStandalone`, and starts
// app.js. The worker is a classic script made when the file was written (file:// pages cannot
// start module workers).
(function () {
  "use strict";
  const modules = JSON.parse(document.getElementById("prof-modules").textContent);
  const urls = new Map();

  /** `target` (e.g. "../flame.js") relative to the module at `from` (e.g. "views/x.js"). */
  function resolve(from, target) {
    const parts = from.split("/").slice(0, -1);
    for (const part of target.split("/")) {
      if (part === "..") parts.pop();
      else if (part !== ".") parts.push(part);
    }
    return parts.join("/");
  }

  /** The blob URL of module `path`, made after those of the modules it imports. */
  function urlOf(path) {
    if (urls.has(path)) return urls.get(path);
    const source = modules[path];
    if (source === undefined) throw new Error(`the page's module ${path} is missing`);
    const text = source.replace(
      /(\bfrom\s*|\bimport\s*\(?\s*)(["'])(\.{1,2}\/[^"']+)\2/g,
      (_, lead, quote, target) => `${lead}${quote}${urlOf(resolve(path, target))}${quote}`,
    );
    const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
    urls.set(path, url);
    return url;
  }

  /** The bytes of an embedded file (base64 in a script element's text), un-gzipped if `gz`. */
  async function embedded(id, gz) {
    const text = atob(document.getElementById(id).textContent.trim());
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    if (!gz) return bytes;
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  const files = [...document.querySelectorAll("script[data-prof-session]")].map((el) => ({
    name: el.dataset.name,
    size: Number(el.dataset.size),
    id: el.id,
  }));
  let wasm = null;
  window.profStandalone = {
    files,
    workerUrl: URL.createObjectURL(
      new Blob([modules["worker.classic.js"]], { type: "text/javascript" }),
    ),
    /** The wasm module's bytes. */
    wasm() {
      wasm ??= embedded("prof-wasm", true);
      return wasm;
    },
    /** The gzipped session file `index`, as bytes (the worker decompresses them). */
    session(index) {
      return embedded(files[index].id, false);
    },
  };
  import(urlOf("app.js")).catch((e) => {
    document.body.textContent = `The viewer could not start: ${e}`;
  });
})();
