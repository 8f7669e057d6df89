/**
 * What a {@link TilePool} needs from its environment's threads, implemented once per environment
 * behind `#threads` (package.json): worker_threads under Node (threads-node.ts, through the shared
 * worker start of `@deltacells/storage/internal/node`), module Web Workers in browsers
 * (threads-browser.ts).
 */
import type { Request, Response } from "./protocol.js";

/** A started worker, as the host drives it. */
export interface WorkerLike {
  postMessage(m: unknown, transfer: ArrayBuffer[]): void;
  terminate(): unknown;
  ref?(): void;
  unref?(): void;
}

/** Starts a worker running worker.ts; `onError` hears of its failures and of a non-zero exit. */
export type SpawnWorker = (onMessage: (m: Response) => void, onError: (e: Error) => void) => WorkerLike;

/** Inside a worker: hands each request to `handle`, whose replies go back to the pool. */
export type ServeRequests = (
  handle: (req: Request, reply: (r: Response, transfer: ArrayBuffer[]) => void) => void,
) => void;
