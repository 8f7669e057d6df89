/**
 * The contract every package in this workspace shares, types only (nothing here exists at run
 * time, so importing it costs no package any code): the store every package reads and writes
 * through, the narrower shapes of it zarrita's stores have, and the data shapes that cross
 * packages (typed arrays, CSR row blocks, tables).
 *
 * The store is deliberately the same shape as zarrita's `AsyncReadable`/`AsyncWritable` (keys may
 * carry a leading `/`, missing objects are `undefined`), so a store built here can be handed to
 * `zarr.open` unchanged, and a zarrita store can be handed to our readers.
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

/**
 * What a zarrita store (`FetchStore`, `FileSystemStore`) has, and all a reader of zarr objects
 * needs: whole objects, and byte ranges where the store can serve them. Every
 * {@link ReadableStore} is one.
 */
export interface ZarrReadable {
  /** The whole object, or `undefined` when it does not exist. */
  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined>;
  /** As {@link ReadableStore.getRange}, where the store can serve ranges. */
  getRange?(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined>;
}

/**
 * What a writer of zarr objects needs besides reading: whole-object writes, and deletes and
 * {@link WritableStore.flush} where the store has them. `delete` may resolve to anything
 * (zarrita's stores resolve to a boolean). Every {@link Store} is one.
 */
export interface ZarrWritable extends ZarrReadable {
  set(key: string, value: Uint8Array, opts?: StoreOptions): Promise<void>;
  delete?(key: string, opts?: StoreOptions): Promise<unknown>;
  /** As {@link WritableStore.flush}. */
  flush?(): Promise<void>;
}

/** Read side of a store. Missing objects are `undefined`; every other failure throws. */
export interface ReadableStore extends ZarrReadable {
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
  /**
   * Optional: make every object written so far durable, for stores that defer it (a folder written
   * with deferred syncs). Writers call it before the object that declares the others complete.
   */
  flush?(): Promise<void>;
}

/** A store that can be read and written: what converters and writers take. */
export interface Store extends ReadableStore, WritableStore {
  /** A human-readable location (path or URL) used in error messages. */
  readonly url: string;
}

/** Every typed array of numbers: a matrix's values, a numeric column, a zarr array. */
export type NumericArray =
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

/**
 * Consecutive rows of a CSR matrix: `indptr` holds `nRows + 1` offsets into `indices` and `data`
 * (it may start past 0), `indices` the column of every nonzero, ascending within a row. The type
 * parameters narrow what a producer guarantees.
 */
export interface RowBlock<
  Indptr extends ArrayLike<number> = ArrayLike<number>,
  Indices extends Int32Array | Uint32Array = Int32Array | Uint32Array,
  Data extends NumericArray = NumericArray,
> {
  nRows: number;
  indptr: Indptr;
  indices: Indices;
  data: Data;
}

/**
 * A run of consecutive cells of a count matrix as canonical CSR, as the input readers stream them
 * and the dataset writer takes them: per cell, gene indices strictly increasing, no explicit
 * zeros, counts positive integers that fit int32; `indptr` starts at 0.
 */
export interface CanonicalRowBlock<Indptr extends ArrayLike<number> = ArrayLike<number>>
  extends RowBlock<Indptr, Int32Array, Int32Array> {
  /** Index of the block's first cell in the whole matrix. */
  rowStart: number;
  /** Number of cells in the block (may be 0 only for an input with no cells). */
  nRows: number;
}

/**
 * One column of a table (obs, var). `nulls[i] === 1` marks a missing value (pandas NA);
 * `nullable` marks a column stored as a pandas nullable array (nullable-integer, -boolean,
 * -string-array), which may have no missing value at all. `textFrom` marks a string column that
 * was not text in the input: the input's type (`datetime64[ns]`), whose values are given as
 * ISO-8601 text (`numpy.datetime_as_string`), missing values (NaT) as null. `Values` narrows the
 * numeric arrays a producer hands over.
 */
export type TableColumn<Values extends NumericArray = NumericArray> =
  | { name: string; kind: "numeric"; values: Values; nulls?: Uint8Array; nullable?: boolean }
  | { name: string; kind: "bool"; values: Uint8Array; nulls?: Uint8Array; nullable?: boolean }
  | { name: string; kind: "string"; values: (string | null)[]; nullable?: boolean; textFrom?: string }
  | {
      name: string;
      kind: "category";
      /** Codes into `categories`, -1 = missing. */
      codes: Int32Array;
      categories: string[];
      ordered: boolean;
    };

/** A data frame as anndata holds it: a string index (with its name) and typed columns. */
export interface ColumnTable<Values extends NumericArray = NumericArray> {
  /** Name of the pandas index (`_index` attribute), or null when unnamed. */
  indexName: string | null;
  index: string[];
  columns: TableColumn<Values>[];
  /**
   * The columns left out, unread, because `exclude` named them: a source that honours `exclude`
   * lists them here, since the dataset writer refuses an excluded name that is in neither list.
   */
  excluded?: string[];
}

/**
 * One column of a data frame read by row range (`read(a, b)`: rows `[a, b)`), so that a converter
 * holds one tile of a large cell table at a time. `nulls[i] === 1` marks a missing value.
 */
export type TableColumnReader<Values extends NumericArray = NumericArray> =
  | {
      name: string;
      kind: "numeric";
      read(a: number, b: number): Promise<{ values: Values; nulls?: Uint8Array }>;
      nullable?: boolean;
    }
  | {
      name: string;
      kind: "bool";
      read(a: number, b: number): Promise<{ values: Uint8Array; nulls?: Uint8Array }>;
      nullable?: boolean;
    }
  | {
      name: string;
      kind: "string";
      read(a: number, b: number): Promise<(string | null)[]>;
      nullable?: boolean;
      /** As in {@link TableColumn}: the input's type of a column given as text. */
      textFrom?: string;
    }
  | {
      name: string;
      kind: "category";
      categories: string[];
      ordered: boolean;
      read(a: number, b: number): Promise<Int32Array>;
    };

/** A data frame read by row range: its index's name, the index and the columns, one row per cell. */
export interface ColumnTableReader<Values extends NumericArray = NumericArray> {
  indexName: string | null;
  index(a: number, b: number): Promise<string[]>;
  columns: TableColumnReader<Values>[];
  /** As in {@link ColumnTable.excluded}. */
  excluded?: string[];
}

/**
 * What an input holds besides the matrix read, its obs and var (`MatrixSource.inventory()` of
 * @deltacells/anndata): what a conversion says it did not keep.
 */
export interface InputInventory {
  /** The other matrices, by path: "X" (when a layer or raw is read), "layers/NAME", "raw/X". */
  matrices: string[];
  /** The non-empty groups no reader reads (uns, obsp, varm, varp), with their keys. */
  groups: { name: string; keys: string[] }[];
  /** Every obsm entry in store order, its kind and shape (a table's: cells x columns). */
  obsm: { key: string; kind: "dense" | "sparse" | "table" | "other"; shape: number[] }[];
}
