/**
 * The one storage contract every package in this workspace reads and writes through.
 *
 * It is deliberately the same shape as zarrita's `AsyncReadable`/`AsyncWritable` (keys may carry a
 * leading `/`, missing objects are `undefined`), so a store built here can be handed to `zarr.open`
 * unchanged, and a zarrita store can be handed to our readers.
 */

/** A byte range: `length` bytes from `offset`, or the last `suffixLength` bytes of the object. */
export type RangeQuery = { offset: number; length: number } | { suffixLength: number };

/** What a read learned about the object it read, for stores that know (see `StoreOptions.onInfo`). */
export interface ObjectInfo {
  /** When the object was last changed (ms since the epoch): Last-Modified, or a file's mtime/ctime. */
  changed?: number;
  /**
   * When the store answered, on the same clock as `changed` (the server's `Date` header, or the
   * local clock for a folder): an object changed after this was not the one read.
   */
  readAt?: number;
}

/** Options every asynchronous call accepts. */
export interface StoreOptions {
  /** Aborts the request; the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Reads: refuse, with a `Changed` error, an object changed after this time (ms since the epoch,
   * on the clock of {@link ObjectInfo.readAt}). The check uses what the answer carries anyway
   * (Last-Modified, a file's status), so it costs no request; stores that cannot tell ignore it.
   */
  unchangedSince?: number;
  /** Reads: called once with what the store learned about the object (nothing for a missing one). */
  onInfo?: (info: ObjectInfo) => void;
  /**
   * `set`: create the object only if there is none (a hard link to a
   * complete temporary file in a folder, `If-None-Match: *` on S3), else fail with an `AlreadyExists` error. Stores that cannot do it atomically refuse it.
   */
  createOnly?: boolean;
}

/** Read side of a store. Missing objects are `undefined`; every other failure throws. */
export interface ReadableStore {
  /** The whole object, or `undefined` when it does not exist. */
  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined>;
  /**
   * A byte range of the object, or `undefined` when the object does not exist. A range that
   * extends past the end of the object is an error, never a silently shorter answer.
   */
  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined>;
  /**
   * Optional: `get` into memory the caller provides, for stores that learn an object's size before
   * reading it (a local file). `allocate(size)` is called once, with the size, and must return at
   * least that many bytes (e.g. a view of a recycled or shared buffer); the answer is a view of
   * them holding the object. Callers fall back to `get` where a store lacks it.
   */
  getInto?(
    key: string,
    allocate: (size: number) => Uint8Array,
    opts?: StoreOptions,
  ): Promise<Uint8Array | undefined>;
}

/** Write side of a store. A reader never observes half of an object written with `set`. */
export interface WritableStore {
  set(key: string, value: Uint8Array, opts?: StoreOptions): Promise<void>;
  delete(key: string, opts?: StoreOptions): Promise<void>;
  /** Every key that starts with `prefix` (no leading `/`), in lexicographic order. */
  list(prefix?: string, opts?: StoreOptions): Promise<string[]>;
  /**
   * Optional: copy object `from` to `to` inside the store without its bytes passing through the
   * caller (S3 CopyObject, UploadPartCopy above 5 GiB); resolves to the bytes copied. A missing
   * `from` is an error. Callers fall back to `get` and `set` where a store lacks it.
   */
  copy?(from: string, to: string, opts?: StoreOptions): Promise<number>;
}

/** A store that can be read and written: what converters and writers take. */
export interface Store extends ReadableStore, WritableStore {
  /** A human-readable location (path or URL) used in error messages. */
  readonly url: string;
}
