/** Datasets: the browser-safe half (reader, writer, validator). Opening by path is in `../node.ts`. */
export { DEFAULT_LEVEL, DEFAULT_N_CHUNKS } from "../codec/encode.js";
export type { CellRows } from "./cell-rows.js";
export { COMPANION_PATH, companionOf, nameCompanion } from "./companion.js";
export {
  EMBEDDING_ROWS_PATH,
  type EmbeddingRows,
  embeddingOrder,
  embeddingRowsColumns,
  embeddingRowsOf,
  nameEmbeddingRows,
  ORDER_KEY,
  orderDigest,
  orderNpy,
  rowsOf,
} from "./embedding-rows.js";
export { type KeepWith, type LeftOutPart, leftOut } from "./left-out.js";
export { type DatasetManifest, nnzOf } from "./manifest.js";
export { type OpenDatasetOptions, openDataset } from "./open.js";
export { Dataset } from "./reader.js";
export { type DatasetRowBlocks, type DatasetRowBlocksOptions, datasetRowBlocks } from "./row-blocks.js";
export type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  DatasetSource,
  SourceEmbedding,
  TableColumn,
  TableColumnReader,
} from "./source.js";
export type { DatasetTile, ReadOptions, TileDecoder, TileReadOptions } from "./tile-io.js";
export { autoTileSize, DEFAULT_TILE_SIZE, TARGET_TILE_NNZ, type TileEncoder } from "./tiling.js";
export { type ValidationProblem, type ValidationReport, validateDataset } from "./validate.js";
export type { Compress } from "./var-table.js";
export {
  type WriteDatasetOptions,
  type WriteDatasetResult,
  type WriteProgress,
  writeDataset,
} from "./writer.js";
