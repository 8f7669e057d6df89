/**
 * An encode worker for the Node entry's pool (see `encode-pool.ts`): it compresses the chunks it is
 * sent with native zstd and sends the compressed bytes back, moving buffers both ways.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import zstd from "zstd-napi/binding.js";
import type { EncodeJob, EncodeReply } from "./encode-pool.js";

const context = new zstd.CCtx();
const port = parentPort;
port?.on("message", (job: EncodeJob) => {
  try {
    const raw = new Uint8Array(job.raw, job.offset, job.length);
    const out = new Uint8Array(zstd.compressBound(job.length));
    const written = context.compress(out, raw, job.level);
    // The raw buffer goes back too: the pool hands it out for a later chunk.
    const reply: EncodeReply = { id: job.id, encoded: out.buffer, length: written, raw: job.raw };
    port.postMessage(reply, [out.buffer, job.raw]);
  } catch (cause) {
    const reply: EncodeReply = { id: job.id, error: cause instanceof Error ? cause.message : String(cause) };
    port.postMessage(reply);
  }
});
