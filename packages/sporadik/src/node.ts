/**
 * @deltacells/sporadik/node: everything `@deltacells/sporadik` exports, with chunks decoded by a
 * native zstd (zstd-napi) instead of zarrita's WebAssembly one. Decoding is what a chunked batch
 * spends its time on, and the native decoder writes each chunk straight into its typed array.
 * Writing large matrices: {@link writeStoreFromRowBlocks} (native zstd workers, a temporary folder),
 * and {@link convertToStore} around it (temporary space and nonzero bound checked, as a conversion).
 * Node-only; a browser imports `@deltacells/sporadik`, which reads the same stores the same way.
 *
 * @module
 */
import { DecodePool, POOL_THRESHOLD } from "./decode-pool.js";
import { DecodeWorkerError } from "./errors.js";
import {
  type OpenArrayReaderOptions,
  type OpenReaderOptions,
  openArrayReader as openArrayReaderWith,
  openReader as openReaderWith,
  type SparseArrayReader,
  type SparseReader,
} from "./index.js";
import { napi, napiFailure } from "./napi.js";
import type { Decompressor, Decompressors } from "./zarr.js";

export {
  type ConvertToStoreOptions,
  convertToStore,
  NoTempSpaceError,
  type TemporarySpace,
  TooManyNonzerosError,
} from "./convert-node.js";
export { EncodePool, nativeEncoder } from "./encode-pool.js";
export * from "./index.js";
export {
  type FilePartsOptions,
  type FolderParts,
  type PassedThrough,
  withFileParts,
} from "./parts-folder.js";
export { FileSpill, type FileSpillOptions, type StaleSpill, sweepStaleSpills } from "./spill-files.js";
export { type RowBlocksWriteOptions, TRANSPOSE_MEMORY, writeStoreFromRowBlocks } from "./write-node.js";

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
 * {@link openReaderWith | openReader}, decoding chunks with {@link nativeDecompressors} unless
 * `options.decompressors` names its own for a codec.
 */
export function openReader(
  store: Parameters<typeof openReaderWith>[0],
  options: OpenReaderOptions = {},
): Promise<SparseReader> {
  return openReaderWith(store, withNative(options));
}

/**
 * {@link openArrayReaderWith | openArrayReader}, decoding chunks with {@link nativeDecompressors} unless
 * `options.decompressors` names its own for a codec.
 */
export function openArrayReader(
  store: Parameters<typeof openArrayReaderWith>[0],
  options: OpenArrayReaderOptions = {},
): Promise<SparseArrayReader> {
  return openArrayReaderWith(store, withNative(options));
}
