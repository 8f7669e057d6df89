/** `#start-worker` from the built package (dist): a worker thread on a sibling module of this one. */
import type { Worker, WorkerOptions } from "node:worker_threads";
import { newWorker } from "./worker-argv.js";

/** Starts a worker thread running the sibling module `name` (`"decode-worker"`, say). */
export function startWorker(name: string, options: WorkerOptions): Worker {
  return newWorker(new URL(`./${name}.js`, import.meta.url), options);
}
