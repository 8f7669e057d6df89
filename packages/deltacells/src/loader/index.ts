/** The training loader: shuffled, sharded, resumable mini-batches (docs/loader.md). */
export { type Batch, type CsrBatch, type DenseBatch, int64Of } from "./batch.js";
export type { SkippedTile, UnreadableTilePolicy } from "./feed.js";
export type { ColumnOrder, LoaderGenes } from "./genes.js";
export {
  createLoader,
  type ElasticSummary,
  type EpochSummary,
  type Loader,
  type LoaderMemory,
} from "./loader.js";
export {
  formatMixing,
  MixingMeter,
  type MixingReport,
  type MixingStats,
  mixingMeter,
} from "./mixing.js";
export type { BatchObsColumn } from "./obs.js";
export {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BUFFER_TILES,
  DEFAULT_MEMORY_CAP,
  DEFAULT_PREFETCH,
  type LoaderOptions,
  type LoaderOrder,
  type LoaderState,
} from "./options.js";
export type { SharedBatches, SharedBatchesLayout, SharedBatchesOptions } from "./ring.js";
