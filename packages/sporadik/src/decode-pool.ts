/**
 * Worker threads that decode zstd chunks alongside the main thread, for the Node entry. A wave of
 * many chunks is split: a chunk goes to a worker while the workers have room, and is decoded on the
 * main thread otherwise, so both keep busy. Small waves never pay a round trip to a worker.
 *
 * @module
 */
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { startWorker } from "@deltacells/storage/internal/node";
import { DecodeWorkerError } from "./errors.js";
import { refusePending } from "./pool-close.js";

/** A chunk sent to a worker: its compressed bytes (moved) and the size it decodes to. */
export interface DecodeJob {
  id: number;
  stored: Uint8Array;
  size: number;
  /** A decoded buffer the worker sent earlier, sent back to decode into again (no allocation). */
  spare?: ArrayBuffer;
}

/** A worker's answer: the decoded bytes (moved back) or why they did not decode. */
export type DecodeReply =
  | { id: number; written: number; decoded: ArrayBuffer }
  | { id: number; error: string };

/** Waves of fewer chunks than this are decoded on the main thread only. */
export const POOL_THRESHOLD = 16;
/**
 * Jobs a worker may have waiting beyond the one it is decoding. The main thread decides where a
 * chunk goes by the worker's live count of finished jobs (shared memory), not by the replies it has
 * read: replies only arrive between the main thread's own decodes, so counting them would starve
 * the worker for most of a wave. A short backlog keeps the worker busy across a message's latency
 * without leaving the main thread idle at the end of a wave.
 */
const BACKLOG = 2;

interface Pending {
  into: Uint8Array;
  resolve: (written: number) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
  spares: ArrayBuffer[];
  /** Jobs posted to the worker so far. */
  sent: number;
  /** `[0]`: jobs the worker has finished, written by the worker as it finishes each. */
  done: Int32Array;
}

/** A small pool of decode workers, started on first use, never keeping the process alive. */
export class DecodePool {
  readonly size: number;
  #slots: Slot[] = [];
  #next = 0;
  #ids = 0;
  #broken = false;

  constructor(size = Math.max(1, availableParallelism() - 1)) {
    this.size = size;
  }

  #start(): Slot {
    const done = new Int32Array(new SharedArrayBuffer(4));
    const worker = startWorker(new URL("./decode-worker.js", import.meta.url), { workerData: done });
    const slot: Slot = { worker, pending: new Map(), spares: [], sent: 0, done };
    worker.unref();
    worker.on("message", (reply: DecodeReply) => {
      const job = slot.pending.get(reply.id);
      if (job === undefined) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      if ("error" in reply) return job.reject(new Error(reply.error));
      // The worker wrote a buffer of exactly `into.byteLength`; `written` says how much of it counts.
      job.into.set(new Uint8Array(reply.decoded, 0, Math.min(reply.written, job.into.byteLength)));
      if (slot.spares.length < BACKLOG + 1) slot.spares.push(reply.decoded);
      job.resolve(reply.written);
    });
    worker.on("error", (error) => {
      // A worker that cannot run (its script failed to load, say) will not run next time either.
      this.#broken = true;
      this.#fail(
        slot,
        new DecodeWorkerError(`a zstd decode worker failed: ${error.message}`, { cause: error }),
      );
    });
    worker.on("exit", (code) =>
      this.#fail(slot, new DecodeWorkerError(`a zstd decode worker exited with code ${code}`)),
    );
    return slot;
  }

  #fail(slot: Slot, error: Error): void {
    this.#slots = this.#slots.filter((s) => s !== slot);
    for (const job of slot.pending.values()) job.reject(error);
    slot.pending.clear();
  }

  /**
   * A worker with room for another job, or undefined when all are busy (decode on this thread
   * then). Workers are started as they are first needed.
   */
  #free(): Slot | undefined {
    if (this.#broken) return undefined;
    for (let k = 0; k < this.#slots.length; k++) {
      const slot = this.#slots[(this.#next + k) % this.#slots.length] as Slot;
      if (slot.sent - Atomics.load(slot.done, 0) <= BACKLOG) {
        this.#next = (this.#next + k + 1) % this.#slots.length;
        return slot;
      }
    }
    if (this.#slots.length < this.size) {
      const slot = this.#start();
      this.#slots.push(slot);
      return slot;
    }
    return undefined;
  }

  /**
   * Decode `stored` into `into` on a worker if one has room, resolving to the bytes written; or
   * undefined, synchronously, when the caller should decode it itself.
   */
  offer(stored: Uint8Array, into: Uint8Array): Promise<number> | undefined {
    const slot = this.#free();
    if (slot === undefined) return undefined;
    // The store may still hold `stored` (a memory store, a cache): move a copy, never its buffer.
    const copy = stored.slice();
    return new Promise<number>((resolve, reject) => {
      const key = this.#ids++;
      slot.pending.set(key, { into, resolve, reject });
      if (slot.pending.size === 1) slot.worker.ref();
      const spare = slot.spares.pop();
      const job: DecodeJob = { id: key, stored: copy, size: into.byteLength };
      if (spare !== undefined && spare.byteLength === into.byteLength) job.spare = spare;
      slot.sent++;
      slot.worker.postMessage(job, job.spare ? [copy.buffer, job.spare] : [copy.buffer]);
    });
  }

  /** Stop the workers; jobs still pending are refused. The pool starts new ones if used again. */
  async close(): Promise<void> {
    const slots = this.#slots;
    this.#slots = [];
    refusePending(slots, () => new DecodeWorkerError("the zstd decode pool was closed"));
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }
}
