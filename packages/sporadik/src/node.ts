/**
 * @deltacells/sporadik/node: everything `@deltacells/sporadik` exports, with chunks decoded by a
 * native zstd (zstd-napi) instead of zarrita's WebAssembly one. Decoding is what a chunked batch
 * spends its time on, and the native decoder writes each chunk straight into its typed array.
 * Node-only; a browser imports `@deltacells/sporadik`, which reads the same stores the same way.
 *
 * @module
 */
import { DecodePool, POOL_THRESHOLD } from "./decode-pool.js";
import { DecodeWorkerError } from "./errors.js";
import {
  type OpenArrayOptions,
  type OpenOptions,
  openArray as openArrayWith,
  openStore as openStoreWith,
  type SparseReader,
  type SparseStore,
} from "./index.js";
import { napi, napiFailure } from "./napi.js";
import type { Decompressor, Decompressors } from "./zarr.js";

export { EncodePool, nativeEncoder, zstdLevel } from "./encode-pool.js";
export * from "./index.js";
export { withFileParts } from "./parts-folder.js";
export {
  FileSpill,
  type FileSpillOptions,
  SPILL_PREFIX,
  type StaleSpill,
  sweepStaleSpills,
} from "./spill-files.js";

let context: InstanceType<NonNullable<typeof napi>["DCtx"]> | undefined;

/**
 * zstd through the native library, into the caller's buffer: one reused decompression context, no
 * intermediate copy. Throws for bytes that are not zstd or that decode to more than `into` holds.
 */
export const nativeZstd: Decompressor = (stored, into) => {
  if (napi === undefined) throw new Error(`nativeZstd needs zstd-napi, which did not load: ${napiFailure}`);
  context ??= new napi.DCtx();
  return context.decompress(into, stored);
};

const pool = new DecodePool();

/**
 * {@link nativeZstd}, with the chunks of a large wave (16 chunks or more) split between this thread
 * and worker threads (`availableParallelism() - 1` of them, at least 1, started on first use and
 * never keeping the process alive). Smaller waves decode here, with no round trip to a worker.
 */
export const pooledZstd: Decompressor = (stored, into, configuration, wave = 1) => {
  if (wave >= POOL_THRESHOLD) {
    const offered = pool.offer(stored, into);
    // A worker that failed says nothing about the chunk: decode it here instead.
    if (offered !== undefined)
      return offered.catch((err: unknown) => {
        if (err instanceof DecodeWorkerError) return nativeZstd(stored, into, configuration, wave);
        throw err;
      });
  }
  return nativeZstd(stored, into, configuration, wave);
};

/** Stop the decode workers of {@link pooledZstd} (they start again if needed). */
export function closeDecodeWorkers(): Promise<void> {
  return pool.close();
}

/**
 * The decoders the Node entry plugs in by default: zstd, natively, on worker threads for large
 * waves; none (zarrita's WebAssembly zstd) where zstd-napi did not install or build.
 */
export const nativeDecompressors: Decompressors = Object.freeze(napi ? { zstd: pooledZstd } : {});

function withNative<T extends { decompressors?: Decompressors }>(options: T): T {
  return { ...options, decompressors: { ...nativeDecompressors, ...options.decompressors } };
}

/**
 * {@link openStoreWith | openStore}, decoding chunks with {@link nativeDecompressors} unless
 * `options.decompressors` names its own for a codec.
 */
export function openStore(
  store: Parameters<typeof openStoreWith>[0],
  options: OpenOptions = {},
): Promise<SparseReader> {
  return openStoreWith(store, withNative(options));
}

/**
 * {@link openArrayWith | openArray}, decoding chunks with {@link nativeDecompressors} unless
 * `options.decompressors` names its own for a codec.
 */
export function openArray(
  store: Parameters<typeof openArrayWith>[0],
  options: OpenArrayOptions = {},
): Promise<SparseStore> {
  return openArrayWith(store, withNative(options));
}
