/**
 * @deltacells/anndata: streaming canonical CSR row blocks out of the files single-cell users have
 * (AnnData .h5ad and .zarr, 10x Cell Ranger HDF5 and Matrix Market, plain Matrix Market, zarr
 * arrays). This entry point is browser-safe: the types and the errors of the readers.
 * `openInput` (which opens paths) is in "@deltacells/anndata/node".
 */

export {
  AnndataError,
  type AnndataErrorTag,
  type InputHint,
  isAnndataError,
  NotCountsError,
  type NotCountsFields,
  type NotCountsReason,
  type OtherMatrixSample,
  UnsupportedColumnsError,
  UnsupportedFilterError,
} from "./errors.js";
export type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  Embedding,
  Embeddings,
  InputFormat,
  InputInventory,
  MatrixSource,
  NumericValues,
  OpenInputOptions,
  RemoteStore,
  RowBlockOptions,
  TableColumn,
  TableColumnReader,
} from "./types.js";
