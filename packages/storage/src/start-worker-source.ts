/**
 * `#start-worker` when running from the TypeScript sources (the `source` condition: tests,
 * benchmarks, tsx). Node 20 does not apply `--import tsx` to workers, so the worker registers
 * tsx's loader itself before importing the `.ts` module beside the `.js` name the caller gives.
 * Published code (dist) never comes here.
 */
import type { Worker, WorkerOptions } from "node:worker_threads";
import { newWorker } from "./worker-argv.js";

/** Starts a worker thread on the TypeScript source of `script` (`./x.js` runs `./x.ts`), through tsx. */
export function startWorker(script: URL, options: WorkerOptions = {}): Worker {
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const source = JSON.stringify(script.href.replace(/\.js$/, ".ts"));
  return newWorker(`import(${tsx}).then((m) => { m.register(); return import(${source}); })`, {
    ...options,
    eval: true,
  });
}
