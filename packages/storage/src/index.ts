/**
 * @deltacells/storage: one byte-range storage interface, its browser-safe backends (memory,
 * HTTP(S), S3) and composable wrappers (stats, retries, a concurrency limit, range coalescing).
 * The Node-only local-folder backend and an `openStore` that opens paths live in
 * `@deltacells/storage/node`.
 */

export { type CoalesceOptions, CoalescingStore, withCoalescing } from "./coalesce.js";
export {
  DELTACELLS_ERROR,
  HttpStatusError,
  isDeltacellsFamilyError,
  isStorageError,
  isTransient,
  RetriesExhaustedError,
  StorageError,
  type StorageErrorOptions,
  type StorageErrorTag,
  TaggedError,
  type TaggedErrorFields,
  type TaggedErrorOptions,
} from "./errors.js";
export { DEFAULT_MAX_IGNORED_RANGE_BYTES, HttpStore, type HttpStoreOptions } from "./http.js";
export type { FetchLike } from "./http-read.js";
export { ConcurrencyLimitStore, withConcurrencyLimit } from "./limit.js";
export { isRemoteLocation, joinLocation, type Location, parseLocation } from "./location.js";
export { MemoryStore } from "./memory.js";
export { DEFAULT_RETRIES, DEFAULT_TIMEOUT_SECONDS, type OpenStoreOptions, openStore } from "./open.js";
export { type RetryOptions, RetryStore, withRetries } from "./retry.js";
export {
  S3_MIN_PART_SIZE,
  type S3Connection,
  S3Store,
  type S3StoreOptions,
  type S3Upload,
  s3OptionsFromEnv,
} from "./s3.js";
export { withStallTimeout } from "./stall.js";
export { StatsStore, type StoreOperation, type StoreStats, withStats } from "./stats.js";
export type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  InputInventory,
  NumericArray,
  ObjectInfo,
  RangeQuery,
  ReadableStore,
  RowBlock,
  Store,
  StoreOptions,
  TableColumn,
  TableColumnReader,
  WritableStore,
  ZarrReadable,
  ZarrWritable,
} from "./types.js";
export type { AnyStore } from "./wrap.js";
