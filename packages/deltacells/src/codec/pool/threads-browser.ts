/** `#threads` in browsers: the pool's workers are module Web Workers running worker.js. */
import { DeltacellsError } from "../../errors.js";
import { type Request, type Response, workerFailed } from "./protocol.js";
import type { ServeRequests, SpawnWorker } from "./threads.js";

export const spawnWorker: SpawnWorker = (onMessage, onError) => {
  if (typeof Worker === "undefined") {
    throw new DeltacellsError("this host has no Web Workers: use decodeTile", {
      tag: "UnsupportedHost",
      field: "Worker",
      expected: "Web Workers",
      found: "none",
    });
  }
  // The literal `new Worker(new URL("./worker.js", import.meta.url))` form is what bundlers (Vite,
  // webpack, esbuild) recognise to emit the worker as its own chunk.
  const w = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  w.onmessage = (e: MessageEvent<Response>) => onMessage(e.data);
  w.onerror = (e: ErrorEvent) =>
    onError(workerFailed(`tile worker failed: ${e.message || "unknown error"}`, e.message));
  return w;
};

export const serveRequests: ServeRequests = (handle) => {
  const scope = globalThis as unknown as {
    onmessage: ((e: { data: Request }) => void) | null;
    postMessage(m: Response, transfer: ArrayBuffer[]): void;
  };
  scope.onmessage = (e) => handle(e.data, (r, t) => scope.postMessage(r, t));
};
