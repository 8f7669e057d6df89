/**
 * Node entry point of @deltacells/anndata: {@link openInput} opens any supported input by path.
 * Everything from "." is re-exported.
 */

export {
  type Frame,
  type FrameColumn,
  type H5adMatrix,
  type H5adObs,
  reorderRows,
  writeH5ad,
} from "./h5ad-write.js";
export { hdf5Reason } from "./hdf5-errors.js";
export * from "./index.js";
export {
  type MatrixMarketOptions,
  TENX_FILES,
  tenxBarcodes,
  tenxFeatures,
  writeMatrixMarket,
  writeTsv,
} from "./mtx-write.js";
export { detectFormat, openInput } from "./open.js";
