/**
 * @deltacells/storage/internal/node: the Node-only helpers the other deltacells packages (core's
 * tile pool, sporadik's codec workers, anndata's HDF5 thread) share and a program should not build
 * on. UNSTABLE: any release may change or remove any of it.
 *
 * @internal
 * @module
 */
export { startWorker } from "#start-worker";
export { newWorker, workerExecArgv } from "./worker-argv.js";
