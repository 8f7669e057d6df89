/** Node-only helpers of datasets: zstd-napi for `var.parquet`, and opening a dataset by path or URL. */
import { createRequire } from "node:module";
import type { ReadableStore } from "@deltacells/storage";
import { openStore } from "@deltacells/storage/node";
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

/**
 * Open a dataset from a local path, `file://`, `http(s)://` or `s3://` URL (S3 settings from the
 * AWS environment and `~/.aws`, see `openStore` of `@deltacells/storage/node`), or from a store. Same checks as the browser-safe `openDataset`;
 * `dataset.obs()` localizes columns through the local Arrow cache.
 */
export function openDataset(
  location: string | ReadableStore,
  opts: OpenDatasetOptions = {},
): Promise<Dataset> {
  const store = typeof location === "string" ? openStore(location, networkOptions(opts)) : location;
  return openDatasetInStore(store, {
    obsLocalizer: cacheLocalizer(),
    ...opts,
  });
}
