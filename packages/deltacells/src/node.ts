/**
 * @deltacells/core/node: everything `@deltacells/core` exports, plus opening a dataset by path or
 * URL, a native zstd for `var.parquet`, the local Arrow cache of obs columns, and writes into a
 * location: its writer lock, staging and `overwrite` ({@link openTarget}, an atlas step's output
 * {@link openAtlasTarget}), and a dataset written through them: one input converted
 * ({@link convertToDataset}), several ({@link buildAtlasAt}), cells appended
 * ({@link appendToDatasetAt}) and an atlas built by tasks finalized ({@link finalizeAtlasAt}), the
 * first two also with a sporadik companion written from the same pass (`companion`); a dataset's
 * statistics computed on a pool of threads ({@link writeDatasetStats}, {@link writeStatsAt}); the
 * companion's rows in embedding order written in bounded memory ({@link writeEmbeddingRows}).
 * Node-only.
 */

export { inputIdentity } from "./atlas/identity-node.js";
export {
  EMBEDDING_ROWS_BUCKET_BYTES,
  EMBEDDING_ROWS_SAMPLE,
  type EmbeddingRowsTemporarySpace,
  type EmbeddingRowsValidation,
  validateEmbeddingRows,
  type WriteEmbeddingRowsOptions,
  type WriteEmbeddingRowsResult,
  writeEmbeddingRows,
} from "./dataset/embedding-rows-node.js";
export { type NodeOpenDatasetOptions, openDataset, zstdCompressor } from "./dataset/node.js";
export * from "./index.js";
export { cacheLocalizer, type ObsCacheLockOptions, obsCacheRoot } from "./obs/cache-node.js";
export {
  type WriteDatasetStatsOptions,
  type WriteStatsAtOptions,
  writeDatasetStats,
  writeStatsAt,
} from "./stats/write-node.js";
export {
  type AppendToDatasetAtOptions,
  type AppendToDatasetAtResult,
  appendToDatasetAt,
} from "./target/append.js";
export { type AtlasTarget, type OpenAtlasTargetOptions, openAtlasTarget } from "./target/atlas-target.js";
export {
  type BuildAtlasAtOptions,
  type BuildAtlasAtResult,
  buildAtlasAt,
  type ClosableSource,
  type CompanionWriter,
  type ConvertToDatasetOptions,
  type ConvertToDatasetResult,
  convertToDataset,
} from "./target/convert.js";
export {
  type FinalizeAtlasAtOptions,
  type FinalizeAtlasAtResult,
  finalizeAtlasAt,
} from "./target/finalize.js";
export {
  type ConversionTarget,
  type OpenTargetOptions,
  openTarget,
  STAGING_PREFIX,
  TargetError,
} from "./target/target.js";
export {
  abortStaleUploads,
  acquireWriterLock,
  LOCK_KEY,
  type LockHolder,
  removeStaleTempFiles,
  s3Under,
  TargetLockedError,
  tempFiles,
  type WriterLock,
  type WriterLockOptions,
} from "./target/writer-lock.js";
