/**
 * `#start-worker` when running from the TypeScript sources (the `source` condition: tests,
 * benchmarks, tsx). Node 20 does not apply `--import tsx` to workers, so the worker registers
 * tsx's loader itself before importing the `.ts` module. Published code (dist) never comes here.
 */
import type { Worker, WorkerOptions } from "node:worker_threads";
import { newWorker } from "./worker-argv.js";

/** Starts a worker thread running the sibling module `name` (`"decode-worker"`, say), through tsx. */
export function startWorker(name: string, options: WorkerOptions): Worker {
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const script = JSON.stringify(new URL(`./${name}.ts`, import.meta.url).href);
  return newWorker(`import(${tsx}).then((m) => { m.register(); return import(${script}); })`, {
    ...options,
    eval: true,
  });
}
