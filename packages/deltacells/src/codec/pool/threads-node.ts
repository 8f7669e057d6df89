/** `#threads` under Node: the pool's workers are worker_threads running worker.js (worker.ts from the sources). */
import { parentPort } from "node:worker_threads";
import { startWorker } from "@deltacells/storage/internal/node";
import { type Response, workerFailed } from "./protocol.js";
import type { ServeRequests, SpawnWorker, WorkerLike } from "./threads.js";

/** Starts a worker_thread on `script` and wires its events. */
export function startNodeWorker(
  script: URL,
  onMessage: (m: Response) => void,
  onError: (e: Error) => void,
): WorkerLike {
  const w = startWorker(script);
  w.on("message", onMessage);
  w.on("error", (e: Error) => onError(workerFailed(`tile worker failed: ${e.message}`, e.message, e)));
  // Any exit the pool did not ask for fails the worker's jobs, code 0 included: a worker that
  // ended quietly (terminated from outside, its script returned) would otherwise leave them
  // pending forever. Exits of closed pools and replaced workers are ignored by the handler.
  w.on("exit", (code: number) => onError(workerFailed(`tile worker exited with code ${code}`, code)));
  w.unref();
  return w;
}

export const spawnWorker: SpawnWorker = (onMessage, onError) =>
  startNodeWorker(new URL("./worker.js", import.meta.url), onMessage, onError);

export const serveRequests: ServeRequests = (handle) => {
  const port = parentPort!;
  port.on("message", (m) => handle(m, (r, t) => port.postMessage(r, t)));
};
