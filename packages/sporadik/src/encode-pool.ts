/**
 * Native zstd compression of chunks on worker threads, for the Node entry's streaming writer: each
 * chunk is moved to the least busy worker and its compressed bytes moved back, so several chunks
 * compress at once while the main thread reads and spills. The bytes are those zarrita's
 * WebAssembly zstd (numcodecs) writes at zarr's default level (see {@link nativeEncoder}).
 *
 * @module
 */
import { writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { startWorker } from "@deltacells/storage/internal/node";
import { type ChunkEncoder, wasmEncoder } from "./array-stream.js";
import { SporadikError } from "./errors.js";
import { napi } from "./napi.js";
import { refusePending } from "./pool-close.js";
import { type CodecMetadata, isChecksummedZstd } from "./zarr.js";

/**
 * A chunk sent to a worker: its raw bytes (moved) and the zstd level; with `path`, the file the
 * worker writes the compressed bytes to (created or truncated) instead of sending them back.
 */
export interface EncodeJob {
  id: number;
  raw: ArrayBuffer;
  offset: number;
  length: number;
  level: number;
  /** zstd's content checksum on (the frame ends with the checksum of its decoded bytes). */
  checksum?: boolean;
  path?: string;
}

/**
 * A worker's answer: the compressed bytes (moved back, the first `length` count; none when the
 * worker wrote them to the job's file) and the raw chunk's buffer (moved back for the next
 * chunks), or an error: of the compression, or (`file`) of writing the file, with its errno code.
 */
export type EncodeReply =
  | { id: number; encoded?: ArrayBuffer; length: number; raw: ArrayBuffer }
  | { id: number; error: string; file?: false }
  | { id: number; error: string; file: true; code: string | undefined; raw: ArrayBuffer };

interface Pending {
  resolve: (reply: { encoded?: ArrayBuffer; length: number }) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * numcodecs' level rule (what zarrita's zstd applies before compressing): 0 or less is 1, above
 * 22 is 22. zarr's default `level: 0` is therefore level 1, not zstd's own default of 3.
 */
export function zstdLevel(configured: unknown): number {
  const level = typeof configured === "number" && Number.isInteger(configured) ? configured : 0;
  return level <= 0 ? 1 : Math.min(level, 22);
}

/** Worker threads compressing chunks with native zstd, started on first use. */
export class EncodePool {
  readonly size: number;
  #slots: Slot[] = [];
  #ids = 0;
  /**
   * Raw chunk buffers the workers gave back, by byte length, for {@link buffer}; the length given
   * back last is last in the map, so the lengths not seen for longest go first over the budget.
   */
  readonly #spare = new Map<number, ArrayBuffer[]>();
  #spareBytes = 0;
  /** Spare buffers kept per length: about the chunks in flight (more would only hold memory). */
  static readonly SPARE = 64;
  /** Bytes of spare buffers kept in all: lengths of arrays written long ago do not stay pinned. */
  static readonly SPARE_BYTES = 64 * 1024 * 1024;

  constructor(size = Math.max(1, availableParallelism())) {
    this.size = size;
  }

  #start(): Slot {
    const worker = startWorker(new URL("./encode-worker.js", import.meta.url));
    const slot: Slot = { worker, pending: new Map() };
    worker.unref();
    worker.on("message", (reply: EncodeReply) => {
      const job = slot.pending.get(reply.id);
      if (job === undefined) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      if ("error" in reply) {
        if (reply.file === true) {
          this.#keep(reply.raw);
          // As the file system said it (the store names the object and the path around it).
          job.reject(Object.assign(new Error(reply.error), { code: reply.code }));
        } else
          job.reject(
            new SporadikError(`zstd compression failed: ${reply.error}`, { tag: "EncodeWorkerError" }),
          );
      } else {
        this.#keep(reply.raw);
        job.resolve(reply);
      }
    });
    const fail = (error: Error) => {
      this.#slots = this.#slots.filter((s) => s !== slot);
      for (const job of slot.pending.values()) job.reject(error);
      slot.pending.clear();
    };
    worker.on("error", (error) =>
      fail(
        new SporadikError(`a zstd encode worker failed: ${error.message}`, {
          tag: "EncodeWorkerError",
          cause: error,
        }),
      ),
    );
    worker.on("exit", (code) =>
      fail(new SporadikError(`zstd encode worker exited with code ${code}`, { tag: "EncodeWorkerError" })),
    );
    return slot;
  }

  #pick(): Slot {
    let best: Slot | undefined;
    for (const slot of this.#slots)
      if (best === undefined || slot.pending.size < best.pending.size) best = slot;
    if ((best === undefined || best.pending.size > 0) && this.#slots.length < this.size) {
      best = this.#start();
      this.#slots.push(best);
    }
    return best as Slot;
  }

  /** Keeps a buffer a worker gave back, within {@link SPARE} per length and {@link SPARE_BYTES} in all. */
  #keep(raw: ArrayBuffer): void {
    const n = raw.byteLength;
    const spare = this.#spare.get(n) ?? [];
    this.#spare.delete(n);
    this.#spare.set(n, spare);
    if (spare.length >= EncodePool.SPARE) return;
    spare.push(raw);
    this.#spareBytes += n;
    for (const [length, buffers] of this.#spare) {
      if (this.#spareBytes <= EncodePool.SPARE_BYTES) break;
      while (buffers.length > 0 && this.#spareBytes > EncodePool.SPARE_BYTES) {
        buffers.pop();
        this.#spareBytes -= length;
      }
      if (buffers.length === 0) this.#spare.delete(length);
    }
  }

  /** A buffer of `byteLength` bytes for a chunk: one a worker gave back (old bytes in it), or new. */
  buffer(byteLength: number): ArrayBuffer {
    const b = this.#spare.get(byteLength)?.pop();
    if (b === undefined) return new ArrayBuffer(byteLength);
    this.#spareBytes -= byteLength;
    return b;
  }

  /**
   * Compress `raw` at `level`, with zstd's content checksum when `checksum`. `raw`'s buffer is
   * moved to the worker when it is the whole buffer.
   */
  async encode(raw: Uint8Array, level: number, checksum = false): Promise<Uint8Array> {
    const { encoded, length } = await this.#send(raw, level, undefined, checksum);
    return new Uint8Array(encoded as ArrayBuffer, 0, length);
  }

  /**
   * Compress `raw` at `level` and write the compressed bytes to the file at `path` (created, or
   * truncated), on the worker: resolves to their length. A failed write rejects with the file
   * system's error (its `code` kept). `raw`'s buffer is moved as by {@link encode}.
   */
  async encodeToFile(raw: Uint8Array, level: number, path: string, checksum = false): Promise<number> {
    return (await this.#send(raw, level, path, checksum)).length;
  }

  #send(
    raw: Uint8Array,
    level: number,
    path: string | undefined,
    checksum: boolean,
  ): Promise<{ encoded?: ArrayBuffer; length: number }> {
    const slot = this.#pick();
    // Move the buffer when the chunk is all of it; otherwise copy (never move memory others view).
    const own = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength ? raw : raw.slice();
    return new Promise((resolve, reject) => {
      const id = this.#ids++;
      slot.pending.set(id, { resolve, reject });
      if (slot.pending.size === 1) slot.worker.ref();
      const job: EncodeJob = { id, raw: own.buffer as ArrayBuffer, offset: 0, length: own.byteLength, level };
      if (path !== undefined) job.path = path;
      if (checksum) job.checksum = true;
      slot.worker.postMessage(job, [job.raw]);
    });
  }

  /** Stop the workers; jobs still pending are refused. The spare buffers are let go. */
  async close(): Promise<void> {
    const slots = this.#slots;
    this.#slots = [];
    this.#spare.clear();
    this.#spareBytes = 0;
    refusePending(
      slots,
      () => new SporadikError("the zstd encode pool was closed", { tag: "EncodeWorkerError" }),
    );
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }
}

/**
 * A {@link ChunkEncoder} on `pool`: zstd at level 1 (zarr's default `level: 0`), with or without
 * its content checksum, natively on its workers; anything else through the WebAssembly codecs.
 * Above level 1 the native library and the WebAssembly build were measured to disagree on some
 * chunks (both valid zstd, other bytes), and a store must not depend on which encoder wrote it
 * (with the checksum, the native frame is the WebAssembly one with its checksum added, byte for
 * byte). Without zstd-napi (an optional dependency that may not have built), everything goes
 * through the WebAssembly codecs.
 */
export function nativeEncoder(pool: EncodePool): ChunkEncoder {
  if (napi === undefined) return wasmEncoder;
  const native = (compressors: readonly CodecMetadata[]): boolean => {
    const only = compressors.length === 1 ? compressors[0] : undefined;
    return only?.name === "zstd" && zstdLevel(only.configuration?.level) === 1;
  };
  const checksum = (compressors: readonly CodecMetadata[]) => isChecksummedZstd(compressors[0]);
  const encode: ChunkEncoder = (raw, compressors) => {
    if (compressors.length === 0) return Promise.resolve(raw);
    return native(compressors) ? pool.encode(raw, 1, checksum(compressors)) : wasmEncoder(raw, compressors);
  };
  // Chunk buffers come back from the workers and are handed out again.
  encode.allocate = (byteLength) => pool.buffer(byteLength);
  // A chunk bound for a file is written by the worker that compressed it.
  encode.toFile = async (raw, compressors, path) => {
    if (native(compressors)) return pool.encodeToFile(raw, 1, path, checksum(compressors));
    const bytes = await encode(raw, compressors);
    await writeFile(path, bytes);
    return bytes.byteLength;
  };
  return encode;
}
