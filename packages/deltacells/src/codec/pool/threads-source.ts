/**
 * `#threads` under Node when running from the TypeScript sources (the `source` condition: tests,
 * benchmarks, tsx). Node 20 does not apply `--import tsx` to workers, so the worker registers
 * tsx's loader itself before importing worker.ts. Published code (dist) never comes here.
 */

import type { SpawnWorker } from "./threads.js";
import { startNodeWorker } from "./threads-node.js";

export { serveRequests } from "./threads-node.js";

/** Code for a worker that loads the TypeScript module `script` through tsx. */
export function tsxWorkerCode(script: URL): string {
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  return `import(${tsx}).then((m) => { m.register(); return import(${JSON.stringify(script.href)}); })`;
}

export const spawnWorker: SpawnWorker = (onMessage, onError) =>
  startNodeWorker(tsxWorkerCode(new URL("./worker.ts", import.meta.url)), { eval: true }, onMessage, onError);
