export * from "./arrow.js";
export { openDataset, zstdCompressor } from "./dataset/node.js";
export * from "./index.js";
export {
  cacheLocalizer,
  type ObsCacheLockOptions,
  obsCachePath,
  obsCacheRoot,
  quoteColumnName,
} from "./obs/cache-node.js";
