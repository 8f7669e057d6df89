/**
 * @deltacells/storage: one byte-range storage interface and its browser-safe backends.
 * Node-only backends (the local folder) live in `@deltacells/storage/node`.
 */
export { isStorageError, StorageError, type StorageErrorTag } from "./errors.js";
export { normalizeKey, normalizePrefix } from "./keys.js";
export { MemoryStore } from "./memory.js";
export { resolveRange } from "./range.js";
export type { RangeQuery, ReadableStore, Store, StoreOptions, WritableStore } from "./types.js";
