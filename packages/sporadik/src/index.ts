/**
 * @deltacells/sporadik: the sporadik sparse-array format (spec 1), written and read over any
 * zarrita-compatible store. Browser-safe. The normative constants are in `@deltacells/sporadik/spec`.
 *
 * @module
 */
export { type OpenArrayReaderOptions, openArrayReader, SparseArray, SparseArrayReader } from "./array.js";
export {
  type ChunkEncoder,
  type FileWritableStore,
  type PartsWritableStore,
  wasmEncoder,
} from "./array-stream.js";
export type { DataType, IntegerArray, NumericArray } from "./dtypes.js";
export {
  DecodeWorkerError,
  IncompleteError,
  isSporadikError,
  LayoutError,
  PositionError,
  SpecError,
  SporadikError,
  type SporadikErrorTag,
} from "./errors.js";
export {
  type CompressedMatrix,
  type CoordinateArray,
  coordsOfLayout,
  type Duplicates,
  type Layout,
  layoutFromCompressed,
  layoutFromCoords,
  layoutFromDense,
  layoutOver,
  layoutsByAxis,
  maximaOf,
} from "./layout.js";
export {
  type DescribeOptions,
  describe,
  type LayoutInfo,
  type OpenReaderOptions,
  openReader,
  type Slice,
  SparseReader,
  type StoreInfo,
} from "./reader.js";
export { Selection } from "./selection.js";
export { MemorySpill, type SpillFile, type SpillSpace } from "./spill.js";
export type { ReadableStore, WritableStore } from "./store.js";
export {
  type RowBlock,
  type StreamProgress,
  type StreamWriteOptions,
  type StreamWriteResult,
  StreamWriter,
  temporaryBytesPerNonzero,
  writeStoreFromRows,
} from "./stream-writer.js";
export { chunkFor, DEFAULT_CHUNK, TARGET_CHUNK_BYTES, type WriteOptions, writeStore } from "./writer.js";
export type { Decompressor, Decompressors } from "./zarr.js";
