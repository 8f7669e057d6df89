/** `#start-worker` from the built package (dist): a worker thread on the compiled script itself. */
import type { Worker, WorkerOptions } from "node:worker_threads";
import { newWorker } from "./worker-argv.js";

/**
 * Starts a worker thread on `script`, a `.js` module next to the caller (`new URL("./x.js",
 * import.meta.url)`), with the host's Node options less those a worker refuses.
 */
export function startWorker(script: URL, options: WorkerOptions = {}): Worker {
  return newWorker(script, options);
}
