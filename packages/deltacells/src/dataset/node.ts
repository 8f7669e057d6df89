/** Node-only helpers of datasets: zstd-napi for `var.parquet`, and opening a dataset by path or URL. */
import { createRequire } from "node:module";
import type { ReadableStore } from "@deltacells/storage";
import { type FolderStoreOptions, openStore } from "@deltacells/storage/node";
import type { compress as Compressor } from "zstd-napi";
import { cacheLocalizer } from "../obs/cache-node.js";
import { networkOptions, type OpenDatasetOptions, openDataset as openDatasetInStore } from "./open.js";
import type { Dataset } from "./reader.js";
import type { Compress } from "./var-table.js";

/**
 * A synchronous zstd compressor at `level` (native zstd-napi), as hyparquet-writer wants it.
 * zstd-napi is an optional dependency (browsers never need it): without it this throws, saying why.
 */
export function zstdCompressor(level = 19): Compress {
  let compress: typeof Compressor;
  try {
    ({ compress } = createRequire(import.meta.url)("zstd-napi") as { compress: typeof Compressor });
  } catch (err) {
    throw new Error(
      `zstdCompressor needs zstd-napi (an optional dependency of @deltacells/core), which did not load: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  return (input) => {
    const out = compress(input, { compressionLevel: level });
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  };
}

/** Options of the Node `openDataset`: the browser-safe ones, plus how a local folder is read. */
export interface NodeOpenDatasetOptions extends OpenDatasetOptions {
  /**
   * The `FolderStore` options for a local path or `file://` URL. By default `{ blockingReads: true }`:
   * a tile (up to 2 MiB) or a small file is read by blocking calls while they come from the page
   * cache (~0.1-0.2 ms for a 0.7 MB tile, less than decoding it on this thread) instead of five
   * round trips through libuv's thread pool, whose callbacks this thread must run between
   * decodes: `ds.tiles()` ran at 0.75-0.89x of `decodeTileSync` this way against 0.71-0.76x
   * through the thread pool, and 1.24-1.33x against 1.07-1.24x with `threads: 2`
   * (bench/RESULTS.md). After four slow blocking reads in a row (a cold cache, a network file
   * system) the store falls back to the thread pool for 5 s. A server whose event loop must
   * never wait on a disk passes `{ blockingReads: false }`.
   */
  folder?: FolderStoreOptions;
}

/** One localizer for every dataset this process opens: each cache file is hashed once per process. */
const processLocalizer = cacheLocalizer();

/**
 * Open a dataset from a local path, `file://`, `http(s)://` or `s3://` URL (S3 settings from the
 * AWS environment and `~/.aws`, see `openStore` of `@deltacells/storage/node`), or from a store. Same checks as the browser-safe `openDataset`;
 * `dataset.obs()` localizes columns through the local Arrow cache. `folder` configures how a local
 * folder is read (see {@link NodeOpenDatasetOptions.folder}).
 */
export function openDataset(
  location: string | ReadableStore,
  opts: NodeOpenDatasetOptions = {},
): Promise<Dataset> {
  const { folder, ...rest } = opts;
  const store =
    typeof location === "string"
      ? openStore(location, { ...networkOptions(rest), folder: folder ?? { blockingReads: true } })
      : location;
  return openDatasetInStore(store, {
    obsLocalizer: processLocalizer,
    ...rest,
  });
}
