// The page's side of the worker in worker.js: one worker per loaded profile, questions as
// promises. Ending a backend ends its worker, which frees everything it held.

export class Backend {
  /** @param {(text: string) => void} onProgress called with the loading progress as text (may
   * be set later, as `backend.onProgress`)
   * @param {{worker: Worker, early: object[]}} [boot] a worker boot.js started, and the
   * messages it sent before this backend took it over; its questions' answers are
   * `answer(id)` */
  constructor(onProgress = () => {}, boot = undefined) {
    this.onProgress = onProgress;
    // The single-file page provides a classic worker (file:// pages cannot start module
    // workers); the served page uses worker.js as a module.
    const standalone = window.profStandalone;
    this.worker =
      boot?.worker ??
      (standalone
        ? new Worker(standalone.workerUrl)
        : new Worker(new URL("./worker.js", import.meta.url), { type: "module" }));
    this.pending = new Map();
    /** Answers to boot.js's questions (negative ids) that nobody has asked for yet. */
    this.unclaimed = new Map();
    this.nextId = 1;
    this.ended = false;
    const receive = (message) => {
      if ("workerError" in message) {
        // The worker failed before this backend took it: boot.js's questions get no answer.
        this.bootFailure = workerFailure(message.workerError);
        this.#failAll(this.bootFailure);
        return;
      }
      if ("progress" in message) {
        this.onProgress(message.progress);
        return;
      }
      const pending = this.pending.get(message.id);
      if (!pending) {
        if (message.id < 0) this.unclaimed.set(message.id, message);
        return;
      }
      this.pending.delete(message.id);
      settle(pending, message);
    };
    this.worker.onmessage = (event) => receive(event.data);
    for (const message of boot?.early.splice(0) ?? []) receive(message);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.#failAll(workerFailure(event.message));
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

  /** The answer to question `id`, asked of the worker before this backend took it (boot.js). */
  answer(id) {
    if (this.ended) return Promise.reject(new Error("superseded"));
    if (this.bootFailure) return Promise.reject(this.bootFailure);
    return new Promise((resolve, reject) => {
      const message = this.unclaimed.get(id);
      this.unclaimed.delete(id);
      if (message) settle({ resolve, reject }, message);
      else this.pending.set(id, { resolve, reject });
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

/** Resolves or rejects `pending` with the worker's answer `message`. */
function settle(pending, message) {
  if ("error" in message) pending.reject(new Error(message.error));
  else pending.resolve(message.result);
}

/** The error for a worker that failed with `message` (an error event's, possibly empty). */
function workerFailure(message) {
  return new Error(message || "the viewer's worker failed");
}
