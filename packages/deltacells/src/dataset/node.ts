/** Node-only helpers of datasets: zstd-napi for `var.parquet`, and opening a dataset by path or URL. */
import type { ReadableStore } from "@deltacells/storage";
import { openStore } from "@deltacells/storage/node";
import { compress } from "zstd-napi";
import { cacheLocalizer } from "../obs/cache-node.js";
import {
  type Dataset,
  networkOptions,
  type OpenDatasetOptions,
  openDataset as openDatasetInStore,
} from "./reader.js";
import type { Compress } from "./var-table.js";

/** A synchronous zstd compressor at `level` (native zstd-napi), as hyparquet-writer wants it. */
export function zstdCompressor(level = 19): Compress {
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
