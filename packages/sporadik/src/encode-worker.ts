/**
 * An encode worker for the Node entry's pool (see `encode-pool.ts`): it compresses the chunks it is
 * sent with native zstd and sends the compressed bytes back, moving buffers both ways; or, given a
 * file's path, writes the compressed bytes to that file itself and sends back only their length.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { parentPort } from "node:worker_threads";
import zstd from "zstd-napi/binding.js";
import type { EncodeJob, EncodeReply } from "./encode-pool.js";

const context = new zstd.CCtx();
/** Compresses with the content checksum on, at the level last asked for (`compress` ignores parameters). */
let checked: { context: InstanceType<typeof zstd.CCtx>; level: number } | undefined;
const port = parentPort;
/**
 * Compressed into this, reused, then copied out at its exact length (or written from it): a new
 * buffer of the worst case per chunk (5 times the compressed size of the bench's chunks) made the
 * main thread, which receives them, collect garbage for the external memory alone.
 */
let scratch = new Uint8Array(0);
port?.on("message", (job: EncodeJob) => {
  let written: number;
  try {
    const raw = new Uint8Array(job.raw, job.offset, job.length);
    const bound = zstd.compressBound(job.length);
    if (scratch.byteLength < bound) scratch = new Uint8Array(bound);
    if (job.checksum === true) {
      if (checked?.level !== job.level) {
        checked = { context: new zstd.CCtx(), level: job.level };
        checked.context.setParameter(zstd.CParameter.compressionLevel, job.level);
        checked.context.setParameter(zstd.CParameter.checksumFlag, 1);
      }
      written = checked.context.compress2(scratch, raw);
    } else written = context.compress(scratch, raw, job.level);
  } catch (cause) {
    const reply: EncodeReply = { id: job.id, error: cause instanceof Error ? cause.message : String(cause) };
    port.postMessage(reply);
    return;
  }
  if (job.path !== undefined) {
    // Written here, blocking this thread only: the bytes never travel back, and the main thread
    // is spared three file-system round trips (open, write, close) per chunk.
    try {
      writeFileSync(job.path, scratch.subarray(0, written));
    } catch (cause) {
      const error = cause as NodeJS.ErrnoException;
      const reply: EncodeReply = {
        id: job.id,
        error: error.message,
        code: error.code,
        file: true,
        raw: job.raw,
      };
      port.postMessage(reply, [job.raw]);
      return;
    }
    const reply: EncodeReply = { id: job.id, length: written, raw: job.raw };
    port.postMessage(reply, [job.raw]);
    return;
  }
  const out = scratch.slice(0, written);
  // The raw buffer goes back too: the pool hands it out for a later chunk.
  const reply: EncodeReply = { id: job.id, encoded: out.buffer, length: written, raw: job.raw };
  port.postMessage(reply, [out.buffer, job.raw]);
});
