/** Datasets: the browser-safe half (reader, writer, validator). Opening by path is in `../node.ts`. */
export { DEFAULT_LEVEL, DEFAULT_N_CHUNKS } from "../codec/encode.js";
export type { DatasetManifest } from "./manifest.js";
export {
  type CellRows,
  Dataset,
  type DatasetTile,
  type OpenDatasetOptions,
  openDataset,
  type ReadOptions,
  type TileDecoder,
  type TileReadOptions,
} from "./reader.js";
export { type DatasetRowBlocks, type DatasetRowBlocksOptions, datasetRowBlocks } from "./row-blocks.js";
export type {
  DatasetSource,
  SourceColumn,
  SourceColumnReader,
  SourceEmbedding,
  SourceRowBlock,
  SourceTable,
  SourceTableReader,
} from "./source.js";
export { type ValidationProblem, type ValidationReport, validateDataset } from "./validate.js";
export type { Compress } from "./var-table.js";
export {
  autoTileSize,
  DEFAULT_TILE_SIZE,
  TARGET_TILE_NNZ,
  type TileEncoder,
  type WriteDatasetOptions,
  type WriteDatasetResult,
  type WriteProgress,
  writeDataset,
} from "./writer.js";
