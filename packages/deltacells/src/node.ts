/**
 * @deltacells/core/node: everything `@deltacells/core` exports, plus opening a dataset by path or
 * URL, a native zstd for `var.parquet`, and the local Arrow cache of obs columns. Node-only.
 */

export { inputIdentity } from "./atlas/identity-node.js";
export { type NodeOpenDatasetOptions, openDataset, zstdCompressor } from "./dataset/node.js";
export * from "./index.js";
export { cacheLocalizer, type ObsCacheLockOptions, obsCacheRoot } from "./obs/cache-node.js";
