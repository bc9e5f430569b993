// The page's side of the worker in worker.js: one worker per loaded profile, questions as
// promises. Ending a backend ends its worker, which frees everything it held.

export class Backend {
  /** @param {(text: string) => void} onProgress called with the loading progress as text (may
   * be set later, as `backend.onProgress`) */
  constructor(onProgress = () => {}) {
    this.onProgress = onProgress;
    // The single-file page provides a classic worker (file:// pages cannot start module
    // workers); the served page uses worker.js as a module.
    const standalone = window.profStandalone;
    this.worker = standalone
      ? new Worker(standalone.workerUrl)
      : new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.pending = new Map();
    this.nextId = 1;
    this.ended = false;
    this.worker.onmessage = (event) => {
      const message = event.data;
      if ("progress" in message) {
        this.onProgress(message.progress);
        return;
      }
      const pending = this.pending.get(message.id);
      if (!pending) return;
      this.pending.delete(message.id);
      if ("error" in message) pending.reject(new Error(message.error));
      else pending.resolve(message.result);
    };
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.#failAll(new Error(event.message || "the viewer's worker failed"));
    };
  }

  /** Asks the worker `method` with `args`; resolves with its answer. */
  call(method, args = {}) {
    if (this.ended) return Promise.reject(new Error("superseded"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, method, args });
    });
  }

  /** Ends the worker; questions still open are rejected as superseded. */
  end() {
    if (this.ended) return;
    this.ended = true;
    this.worker.terminate();
    this.#failAll(new Error("superseded"));
  }

  #failAll(error) {
    for (const { reject } of this.pending.values()) reject(error);
    this.pending.clear();
  }
}
