/** Datasets: the browser-safe half (reader, manifest, gene files). The writer is in `../node.ts`. */

export { DEFAULT_LEVEL, DEFAULT_N_CHUNKS } from "../codec/encode.js";
export {
  DATASET_FORMAT,
  DATASET_VERSION,
  type DatasetManifest,
  GENE_ORDER_KEY,
  MANIFEST_KEY,
  parseManifest,
  tileKey,
  VAR_NAMES_KEY,
  VAR_TABLE_KEY,
} from "./manifest.js";
export { decodeNpyInt32, encodeNpyInt32 } from "./npy.js";
export {
  type CsrRows as DatasetRows,
  Dataset,
  type DatasetTile,
  type OpenDatasetOptions,
  openDataset,
  type ReadOptions,
  type TileData,
  type TileDecoder,
} from "./reader.js";
export type { DatasetSource, SourceColumn, SourceEmbedding, SourceRowBlock, SourceTable } from "./source.js";
export { type ValidationProblem, type ValidationReport, validateDataset } from "./validate.js";
export type { Compress } from "./var-table.js";
export { encodeVarTable } from "./var-table.js";
export { decodeVarTable } from "./var-table-read.js";
export { CONVERTER_NAME, CONVERTER_VERSION } from "./version.js";
export {
  autoTileSize,
  DEFAULT_TILE_SIZE,
  orderGenesByTotal,
  TARGET_TILE_NNZ,
  type TileEncoder,
  type TileRows,
  type WriteDatasetOptions,
  type WriteDatasetResult,
  type WriteProgress,
  writeDataset,
} from "./writer.js";
