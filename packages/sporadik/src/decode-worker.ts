/**
 * A decode worker for the Node entry's pool (see `decode-pool.ts`): it decodes the zstd chunks it
 * is sent into fresh (or returned) buffers and sends them back, moving buffers both ways rather than copying.
 *
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import zstd from "zstd-napi/binding.js";
import type { DecodeJob, DecodeReply } from "./decode-pool.js";

const context = new zstd.DCtx();
const port = parentPort;
/** Shared with the pool: `[0]` counts finished jobs, so the main thread sees progress at once. */
const done = workerData as Int32Array;
port?.on("message", (job: DecodeJob) => {
  let reply: DecodeReply;
  try {
    const into = new Uint8Array(job.spare ?? new ArrayBuffer(job.size));
    const written = context.decompress(into, job.stored);
    reply = { id: job.id, written, decoded: into.buffer };
    port.postMessage(reply, [into.buffer]);
  } catch (cause) {
    reply = { id: job.id, error: cause instanceof Error ? cause.message : String(cause) };
    port.postMessage(reply);
  }
  Atomics.add(done, 0, 1);
});
