/**
 * @deltacells/core/arrow: the parts of the library built on apache-arrow, for a program that
 * wants them directly (the obs columns as Arrow tables, the obs cache's file form, `var.parquet`
 * written from a gene table), and the Arrow IPC stream of loader batches that `deltacells stream`
 * writes and Python reads, a contract with Python consumers (README.md, "From Python";
 * examples/python/README.md): {@link ArrowBatches}, {@link endBatch}, {@link epochBatch}, {@link ArrowOutput}.
 * Browser-safe. The "." entry loads these lazily, when obs are read or a dataset is written, so
 * that a page reading tiles only never downloads Arrow.
 */
export { encodeVarTable } from "./dataset/var-table.js";
export {
  ArrowBatches,
  END_KEY,
  EPOCH_KEY,
  endBatch,
  epochBatch,
  MAX_LIST_VALUES,
  type StreamDescription,
  type StreamEnd,
  type StreamEpoch,
} from "./loader/arrow-batches.js";
export { ArrowOutput, type ByteSink, ReaderGone } from "./loader/arrow-output.js";
export { arrowType, columnTable, decodeColumnFile, encodeColumnFile } from "./obs/arrow.js";
