/** Node-only helpers of datasets: zstd-napi for `var.parquet`, and opening a dataset by path or URL. */
import { createRequire } from "node:module";
import type { ReadableStore } from "@deltacells/storage";
import { type FolderStoreOptions, openStore } from "@deltacells/storage/node";
import type { compress as Compressor } from "zstd-napi";
import { cacheLocalizer } from "../obs/cache-node.js";
import {
  type Dataset,
  networkOptions,
  type OpenDatasetOptions,
  openDataset as openDatasetInStore,
} from "./reader.js";
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
   * The `FolderStore` options for a local path or `file://` URL. Default `{ blockingReads: true }`:
   * a tile or a small file is read by blocking calls while they come from the page cache (~0.1 ms
   * for a 0.7 MB tile, against five round trips through libuv's thread pool that cost this thread
   * and the cores more than that; the store falls back to the thread pool after a run of slow
   * reads). Decoding on this thread blocks it far longer per tile anyway; a server that reads
   * datasets with `threads` and must never wait on a disk passes `{ blockingReads: false }`.
   */
  folder?: FolderStoreOptions;
}

/**
 * Open a dataset from a local path, `file://`, `http(s)://` or `s3://` URL (S3 settings from the
 * AWS environment and `~/.aws`, see `openStore` of `@deltacells/storage/node`), or from a store. Same checks as the browser-safe `openDataset`;
 * `dataset.obs()` localizes columns through the local Arrow cache. A local folder is read with
 * blocking reads from the page cache unless `folder` says otherwise (see {@link NodeOpenDatasetOptions.folder}).
 */
export function openDataset(
  location: string | ReadableStore,
  opts: NodeOpenDatasetOptions = {},
): Promise<Dataset> {
  const { folder = { blockingReads: true }, ...rest } = opts;
  const store =
    typeof location === "string" ? openStore(location, { ...networkOptions(rest), folder }) : location;
  return openDatasetInStore(store, {
    obsLocalizer: cacheLocalizer(),
    ...rest,
  });
}
