/**
 * Reading a store: what it says about itself ({@link describe}), and one slice at a time
 * ({@link openReader}). A slice is two waves of reads: the `indptr` bracket, then the `indices` and
 * `data` runs together; nothing else is fetched.
 */
import { firstDisorderedIndex, firstNotMonotone, firstOutside } from "./checks.js";
import { ArrayReader, type ArrayReaderOptions, ChunkCache, Limiter } from "./chunks.js";
import {
  constructorOf,
  type DataType,
  type IntegerArray,
  type NumericArray,
  numberAt,
  unravelInto,
} from "./dtypes.js";
import { IncompleteError, LayoutError, PositionError, SpecError, SporadikError } from "./errors.js";
import { type Layout, layoutOver, maximaOf } from "./layout.js";
import { indptrOf, Selection } from "./selection.js";
import {
  anndataEncoding,
  BLOCK_KEY,
  type Encoding,
  layoutPath,
  MIN_RANK,
  raveledShape,
  SUPPORTED_SPECS,
} from "./spec.js";
import { keyOf, normalizePrefix, type ReadableStore } from "./store.js";
import {
  type ArrayInfo,
  type Decompressors,
  isByteAddressable,
  isChecksummed,
  parseArrayMetadata,
} from "./zarr.js";

/** What one layout states about itself. Everything but the block's three fields is derived from the bytes. */
export interface LayoutInfo {
  /** The group's path inside the prefix, `layouts/axis{k}`. */
  readonly path: string;
  readonly encoding: Encoding;
  readonly encodingVersion: string;
  /** The array's own shape (not the group's raveled one). */
  readonly shape: readonly number[];
  readonly indexedAxis: number;
  readonly indexOrder: readonly number[];
  /** How many values the layout holds. */
  readonly nnz: number;
  /** The values' data type. */
  readonly dtype: DataType;
  /** The data type of `indices`. */
  readonly indexDtype: DataType;
  /** Elements per chunk of each array. */
  readonly chunks: { readonly data: number; readonly indices: number; readonly indptr: number };
  /** One chunk and no compressor for all three arrays: a slice costs its own bytes. */
  readonly byteAddressable: boolean;
  /** Whether the layout carries the writer's per-slice `maxima`. */
  readonly hasMaxima: boolean;
  /**
   * Whether every chunk of `data`, `indices` and `indptr` carries a checksum the reader verifies
   * (zstd's content checksum, or a trailing `crc32c`): a store written with `checksums: true`.
   */
  readonly checksums: boolean;
  /** Positions along the compressed axis. */
  readonly slices: number;
  /** The shape `indices` ravel over: the other axes' lengths, in `indexOrder`. */
  readonly indexShape: readonly number[];
  /** The arrays' parsed metadata. */
  readonly arrays: {
    readonly data: ArrayInfo;
    readonly indices: ArrayInfo;
    readonly indptr: ArrayInfo;
    readonly maxima?: ArrayInfo;
  };
}

/** What a store states about itself: its block, checked, and every layout it names. */
export interface StoreInfo {
  readonly spec: string;
  readonly shape: readonly number[];
  /** The layouts, keyed by the axis each makes contiguous. */
  readonly layouts: ReadonlyMap<number, LayoutInfo>;
}

/** Options shared by {@link describe} and {@link openReader}. */
export interface DescribeOptions {
  /** Where in the store the prefix is. Default: the store's root. */
  prefix?: string;
  signal?: AbortSignal;
}

const decoder = new TextDecoder();

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

async function readJson(store: ReadableStore, key: string, signal?: AbortSignal): Promise<unknown> {
  const bytes = await store.get(key, signal ? { signal } : undefined);
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch (cause) {
    throw new SporadikError(
      `${key} is not valid JSON, so the node it describes cannot be read. Rewrite the store.`,
      {
        object: key,
        cause,
      },
    );
  }
}

function isLength(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

const INTEGER_TYPES: ReadonlySet<DataType> = new Set([
  "int8",
  "int16",
  "int32",
  "int64",
  "uint8",
  "uint16",
  "uint32",
  "uint64",
]);

interface Fetched {
  entry: Record<string, unknown>;
  group: unknown;
  arrays: Record<"data" | "indices" | "indptr" | "maxima", unknown>;
}

async function fetchLayout(
  store: ReadableStore,
  root: string,
  entry: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Fetched> {
  const path = String(entry.path);
  const names = ["data", "indices", "indptr", "maxima"] as const;
  const [group, ...arrays] = await Promise.all([
    readJson(store, keyOf(root, `${path}/zarr.json`), signal),
    ...names.map((name) => readJson(store, keyOf(root, `${path}/${name}/zarr.json`), signal)),
  ]);
  return {
    entry,
    group,
    arrays: { data: arrays[0], indices: arrays[1], indptr: arrays[2], maxima: arrays[3] },
  };
}

function describeLayout(where: string, fetched: Fetched, shape: readonly number[]): LayoutInfo {
  const { entry } = fetched;
  const path = String(entry.path);
  const rank = shape.length;
  const shapeText = `[${shape.join(", ")}]`;
  const axis = entry.indexed_axis;
  if (!Number.isInteger(axis) || (axis as number) < 0 || (axis as number) >= rank) {
    throw new LayoutError(
      `${where}: layout '${path}' declares indexed_axis ${JSON.stringify(axis)}, which is not an axis of ${shapeText}; it could be indexed along no axis at all.`,
      { object: where },
    );
  }
  const indexedAxis = axis as number;
  if (path !== layoutPath(indexedAxis)) {
    throw new LayoutError(
      `${where}: layout '${path}' compresses axis ${indexedAxis}, so it is filed under the wrong name; it belongs at '${layoutPath(indexedAxis)}'. Read by its name it would be indexed along the wrong axis and every lookup would return a real, wrong slice.`,
      { object: where },
    );
  }
  const others: number[] = [];
  for (let a = 0; a < rank; a++) if (a !== indexedAxis) others.push(a);
  const rawOrder = entry.index_order;
  const order = Array.isArray(rawOrder) ? (rawOrder as unknown[]) : [];
  const sorted = [...order].sort((a, b) => Number(a) - Number(b));
  if (sorted.length !== others.length || sorted.some((a, k) => a !== others[k])) {
    throw new LayoutError(
      `${where}: layout '${path}' declares index_order ${JSON.stringify(rawOrder)}, which is not a permutation of the axes it did not compress [${others.join(", ")}]. That order is how indices were raveled and cannot be recovered from the bytes; a wrong one puts every value in a different cell.`,
      { object: where },
    );
  }
  const indexOrder = order as number[];
  const group = fetched.group;
  if (!isObject(group) || group.node_type !== "group") {
    throw new LayoutError(
      `${where}: '${path}' is not a zarr group, so it is not a layout. Rewrite the store.`,
      { object: where },
    );
  }
  const attrs = isObject(group.attributes) ? group.attributes : {};
  const expectedEncoding = anndataEncoding(rank, indexedAxis);
  if (attrs["encoding-type"] !== expectedEncoding) {
    throw new LayoutError(
      `${where}: layout '${path}' declares encoding-type ${JSON.stringify(attrs["encoding-type"])}, but a layout compressing axis ${indexedAxis} of a rank-${rank} array is "${expectedEncoding}". The group and the block disagree, so anndata would read it transposed or not at all.`,
      { object: where },
    );
  }
  const declared = attrs.shape;
  const expectedShape = raveledShape(shape, indexedAxis, indexOrder);
  if (!Array.isArray(declared) || JSON.stringify(declared) !== JSON.stringify(expectedShape)) {
    throw new LayoutError(
      `${where}: layout '${path}' declares shape ${JSON.stringify(declared)}, but compressing axis ${indexedAxis} of ${shapeText} gives [${expectedShape.join(", ")}]. A store is one array; a layout of another shape would be read with the wrong strides.`,
      { object: where },
    );
  }
  const missing = (["data", "indices", "indptr"] as const).filter(
    (name) => fetched.arrays[name] === undefined,
  );
  if (missing.length > 0) {
    throw new LayoutError(
      `${where}: layout '${path}' is missing ${missing.join(", ")}; a sparse layout holds all three of data, indices and indptr. Rewrite the store.`,
      { object: where },
    );
  }
  const parse = (name: "data" | "indices" | "indptr" | "maxima") =>
    // Relative to the prefix: the array readers add the prefix themselves.
    parseArrayMetadata(fetched.arrays[name], `${path}/${name}`);
  const data = parse("data");
  const indices = parse("indices");
  const indptr = parse("indptr");
  const maxima = fetched.arrays.maxima === undefined ? undefined : parse("maxima");
  for (const info of [indices, indptr]) {
    if (!INTEGER_TYPES.has(info.dtype)) {
      throw new LayoutError(
        `${where}: /${info.path} holds ${info.dtype}, but positions and offsets are integers. Rewrite the store.`,
        { object: where },
      );
    }
  }
  const slices = shape[indexedAxis] as number;
  if (indptr.length !== slices + 1) {
    throw new LayoutError(
      `${where}: layout '${path}' compresses axis ${indexedAxis} of ${shapeText}, so indptr should have ${slices + 1} entries (one per slice, plus the end), but it has ${indptr.length}. indptr[i:i+2] would bracket the wrong run.`,
      { object: where },
    );
  }
  if (data.length !== indices.length) {
    throw new LayoutError(
      `${where}: layout '${path}' has ${data.length} values and ${indices.length} indices; they are parallel, so one of them stopped partway and values would pair with the wrong positions.`,
      { object: where },
    );
  }
  if (maxima !== undefined && maxima.length !== slices) {
    throw new LayoutError(
      `${where}: layout '${path}' carries maxima of ${maxima.length} entries for ${slices} slices; every maximum would belong to the wrong slice. Rewrite the store.`,
      { object: where },
    );
  }
  return {
    path,
    encoding: expectedEncoding,
    encodingVersion: String(attrs["encoding-version"] ?? ""),
    shape,
    indexedAxis,
    indexOrder,
    nnz: data.length,
    dtype: data.dtype,
    indexDtype: indices.dtype,
    chunks: { data: data.chunk, indices: indices.chunk, indptr: indptr.chunk },
    byteAddressable: isByteAddressable(data) && isByteAddressable(indices) && isByteAddressable(indptr),
    hasMaxima: maxima !== undefined,
    checksums: isChecksummed(data) && isChecksummed(indices) && isChecksummed(indptr),
    slices,
    indexShape: indexOrder.map((a) => shape[a] as number),
    arrays: maxima === undefined ? { data, indices, indptr } : { data, indices, indptr, maxima },
  };
}

/**
 * Read what a store says about itself, refusing one that says nothing coherent: no block (the upload
 * did not finish), an unknown spec, `complete` not true, no layouts or more than the rank, two of one
 * axis, a named layout absent, a path that is not `layouts/axis{k}`, an `index_order` that is not a
 * permutation, an `encoding-type` or declared shape against the rank rules, missing arrays, an
 * `indptr` of the wrong length, and `data`/`indices` of different lengths.
 *
 * Costs two waves of small reads: the root's `zarr.json`, then every layout's metadata together.
 */
export async function describe(store: ReadableStore, options: DescribeOptions = {}): Promise<StoreInfo> {
  const root = normalizePrefix(options.prefix);
  const where = keyOf(root, "");
  const meta = await readJson(store, keyOf(root, "zarr.json"), options.signal);
  const block = isObject(meta) && isObject(meta.attributes) ? meta.attributes[BLOCK_KEY] : undefined;
  if (!isObject(block)) {
    throw new IncompleteError(
      `${where} carries no '${BLOCK_KEY}' block${meta === undefined ? " (it has no zarr.json at all)" : ""}, so it is not a sporadik store, or it is an upload that did not finish. The block is written last, after every chunk; without it missing chunks would read back as zeros.`,
      { object: where },
    );
  }
  const spec = typeof block.spec === "string" ? block.spec : JSON.stringify(block.spec ?? "");
  if (!SUPPORTED_SPECS.has(spec)) {
    throw new SpecError(
      `${where} declares '${BLOCK_KEY}' spec ${JSON.stringify(block.spec)}, and this reads ${JSON.stringify([...SUPPORTED_SPECS])}. A spec selects how every byte is read, so an unknown one is refused rather than guessed at; upgrade @deltacells/sporadik.`,
      { object: where, expected: [...SUPPORTED_SPECS], found: spec },
    );
  }
  if (block.complete !== true) {
    throw new IncompleteError(
      `${where} declares '${BLOCK_KEY}' complete=${JSON.stringify(block.complete)}; only a finished store is readable, because an unfinished one reads its missing chunks as zeros.`,
      { object: where },
    );
  }
  const shape = block.shape;
  if (!Array.isArray(shape) || !shape.every(isLength) || shape.length < MIN_RANK) {
    throw new SporadikError(
      `${where} declares shape ${JSON.stringify(shape)}; a sparse array has at least ${MIN_RANK} axes, each a non-negative length. The block is damaged; rewrite the store.`,
      { object: where },
    );
  }
  const named = block.layouts;
  if (!Array.isArray(named) || named.length === 0) {
    throw new SporadikError(
      `${where} names no layouts, so it holds no array: a store is its layouts. Rewrite the store with at least one.`,
      { object: where },
    );
  }
  if (named.length > shape.length) {
    throw new SporadikError(
      `${where} names ${named.length} layouts over a rank-${shape.length} array, but there is one axis to compress per axis it has; any more would be a copy of another, and nothing could say which to read.`,
      { object: where },
    );
  }
  for (const entry of named) {
    if (!isObject(entry) || typeof entry.path !== "string") {
      throw new SporadikError(
        `${where} names layout ${JSON.stringify(entry)}, which is not a layout entry: each names its path, indexed_axis and index_order.`,
        { object: where },
      );
    }
    // Never follow a path out of the prefix; the only legal paths are layouts/axis{k} anyway.
    if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/.test(entry.path)) {
      throw new LayoutError(
        `${where} names layout '${entry.path}', which is not a path inside the prefix; a layout lives at '${layoutPath(Number(entry.indexed_axis))}'. Read from elsewhere it would be some other array.`,
        { object: where },
      );
    }
  }
  const fetched = await Promise.all(
    (named as Record<string, unknown>[]).map((entry) => fetchLayout(store, root, entry, options.signal)),
  );
  const layouts = new Map<number, LayoutInfo>();
  for (const one of fetched) {
    if (one.group === undefined) {
      throw new IncompleteError(
        `${where} names layout '${String(one.entry.path)}', which is not in the prefix. The block lists what the writer finished, so a name with nothing behind it is an upload that stopped between the two, or a layout renamed since.`,
        { object: where },
      );
    }
    const info = describeLayout(where, one, shape);
    if (layouts.has(info.indexedAxis)) {
      throw new LayoutError(
        `${where} names two layouts compressing axis ${info.indexedAxis}. That is one capability twice, and nothing could say which a reader should use.`,
        { object: where },
      );
    }
    layouts.set(info.indexedAxis, info);
  }
  return { spec, shape, layouts };
}

/** Options of {@link openReader}. */
export interface OpenReaderOptions extends DescribeOptions {
  /** The axis to read along. Required when the store has more than one layout. */
  axis?: number;
  /** Bytes of decoded chunks kept for reuse (chunked stores). Default 64 MiB. */
  cacheBytes?: number;
  /** Store requests in flight at once, per reader. Default 64. */
  concurrency?: number;
  /**
   * Chunk decoders to use instead of zarrita's registry (WebAssembly) for the codecs they name.
   * `@deltacells/sporadik/node` passes a native zstd.
   */
  decompressors?: Decompressors;
  /** Check the positions of every slice read (see {@link ReaderOptions.checkIndices}). Default false. */
  checkIndices?: boolean;
  /** Read a missing `data` chunk as zeros (see {@link ReaderOptions.fillMissingData}). Default false. */
  fillMissingData?: boolean;
}

/** How a {@link SparseReader} reads: its arrays' options, and whether it checks what it read. */
export interface ReaderOptions extends ArrayReaderOptions {
  /**
   * Check that every slice read lists its positions strictly increasing and inside the axes they
   * ravel over, refusing a damaged `indices` chunk rather than returning wrong positions: one pass
   * over positions already in memory, which costs 5-100% on reads served from cache
   * (bench/sporadik/index-check.ts), hence off by default. Slices read while an `indices` chunk
   * was missing (read as zeros, zarr's fill value) are checked whatever this says.
   */
  checkIndices?: boolean;
  /**
   * Read a missing `data` chunk (or byte-addressable object) as zeros, zarr's fill value, instead
   * of refusing it. Every element of `data` is a stored value, so in a complete store written
   * here or by Python sporadik a missing `data` chunk is damage (Python sporadik 1.1.1 reads one as
   * zeros in chunked stores and refuses it in byte-addressable ones). Only for stores written by a
   * tool that leaves out `data` chunks of explicit zeros. Default false.
   */
  fillMissingData?: boolean;
}

/** One slice: raveled positions over the other axes (in `indexOrder`), and their values. */
export interface Slice {
  readonly positions: IntegerArray;
  readonly values: NumericArray;
}

/**
 * Open the layout making `axis` contiguous, ready to read slices along it. The axis must be named
 * when the store holds more than one layout, and an axis without a layout is refused: reading along
 * it would be a scan of every byte, not one contiguous range.
 */
export async function openReader(
  store: ReadableStore,
  options: OpenReaderOptions = {},
): Promise<SparseReader> {
  const info = await describe(store, options);
  const where = keyOf(normalizePrefix(options.prefix), "");
  const axes = [...info.layouts.keys()].sort((a, b) => a - b);
  let layout: LayoutInfo | undefined;
  if (options.axis !== undefined) {
    layout = info.layouts.get(options.axis);
    if (layout === undefined) {
      throw new LayoutError(
        `${where} has layouts along axes [${axes.join(", ")}], not axis ${options.axis}. Reading along an axis no layout compresses is not slower, it is a scan of every byte; write a layout for axis ${options.axis} or read along one of [${axes.join(", ")}].`,
        { object: where },
      );
    }
  } else if (axes.length !== 1) {
    throw new LayoutError(
      `${where} has layouts along axes [${axes.join(", ")}], so which to read is a decision: it is the whole of what they differ in. Pass { axis }.`,
      { object: where },
    );
  } else {
    layout = info.layouts.get(axes[0] as number);
  }
  return new SparseReader(store, normalizePrefix(options.prefix), info, layout as LayoutInfo, {
    cache: new ChunkCache(options.cacheBytes),
    limiter: new Limiter(options.concurrency ?? 64),
    ...(options.decompressors ? { decompressors: options.decompressors } : {}),
    ...(options.checkIndices !== undefined ? { checkIndices: options.checkIndices } : {}),
    ...(options.fillMissingData !== undefined ? { fillMissingData: options.fillMissingData } : {}),
  });
}

/** One layout of an open store, read a slice at a time without materialising the array. */
export class SparseReader {
  /** The whole store's description. */
  readonly store: StoreInfo;
  /** The layout this reader reads. */
  readonly info: LayoutInfo;
  readonly #data: ArrayReader;
  readonly #indices: ArrayReader;
  readonly #indptr: ArrayReader;
  readonly #maxima: ArrayReader | undefined;
  readonly #checkIndices: boolean;
  /** Positions `indices` ravels over: every entry is below it. */
  readonly #extent: number;

  /** Use {@link openReader}. @internal */
  constructor(
    backing: ReadableStore,
    root: string,
    store: StoreInfo,
    info: LayoutInfo,
    options: ReaderOptions = {},
  ) {
    this.store = store;
    this.info = info;
    this.#checkIndices = options.checkIndices === true;
    this.#extent = info.indexShape.reduce((a, b) => a * b, 1);
    // One cache and one limiter for the four arrays, whatever the caller passed or not.
    const { checkIndices: _, fillMissingData, ...arrayOptions } = options;
    const shared: ArrayReaderOptions = {
      ...arrayOptions,
      cache: options.cache ?? new ChunkCache(),
      limiter: options.limiter ?? new Limiter(),
    };
    this.#data = new ArrayReader(backing, root, info.arrays.data, {
      ...shared,
      ...(fillMissingData === true ? {} : { onMissing: (index, key) => this.#dataMissing(index, key) }),
    });
    // A checksum already proves each chunk is what the writer wrote: the range scan (about a
    // quarter of a chunk's native decode, bench/RESULTS.md) is for stores without one.
    this.#indices = new ArrayReader(backing, root, info.arrays.indices, {
      ...shared,
      ...(isChecksummed(info.arrays.indices)
        ? {}
        : {
            onDecoded: (chunk, index, key) => this.#checkIndicesChunk(chunk as IntegerArray, index, key),
          }),
    });
    this.#indptr = new ArrayReader(backing, root, info.arrays.indptr, {
      ...shared,
      onMissing: (index, key, signal) => this.#indptrMissing(index, key, signal),
      onDecoded: (chunk, index, key) => this.#checkIndptrChunk(chunk as IntegerArray, index, key),
    });
    this.#maxima = info.arrays.maxima
      ? new ArrayReader(backing, root, info.arrays.maxima, shared)
      : undefined;
  }

  /** The axis this reader selects along. */
  get axis(): number {
    return this.info.indexedAxis;
  }

  #check(position: number): void {
    if (!Number.isInteger(position) || position < 0 || position >= this.info.slices) {
      throw PositionError.along(position, this.info.indexedAxis, this.info.slices, this.info.shape);
    }
  }

  /** How many elements of chunk `index` of `array` lie inside the array (the rest is padding). */
  #inside(array: ArrayInfo, index: number): number {
    return Math.max(0, Math.min(array.chunk, array.length - index * array.chunk));
  }

  /**
   * A missing `data` chunk: every element of `data` is a stored value, and our writer stores every
   * `data` chunk (zeros too), so in a complete store the object was removed after it was written.
   */
  async #dataMissing(index: number, key: string): Promise<void> {
    const { chunk, length } = this.info.arrays.data;
    const start = index * chunk;
    throw new IncompleteError(
      `${key} is missing from the store, so zarr would read values [${start}, ${Math.min(start + chunk, length)}) as zeros (its fill value), but every element of data is a stored value: the object was removed after the store was written, or the store was written by a tool that leaves out chunks of explicit zeros. Copy or rewrite the store; to read such chunks as zeros anyway, pass { fillMissingData: true } (deltacells slice --fill-missing-data).`,
      { object: key, expected: "a stored chunk", found: "none" },
    );
  }

  /**
   * Positions are checked once per decoded `indices` chunk of an array without checksums: every
   * one below the product of the other axes' lengths (one pass over the chunk; cached chunks are
   * not checked again). Their order within a slice needs the slice's bracket, so it is checked per
   * read (`checkIndices`).
   */
  #checkIndicesChunk(chunk: IntegerArray, index: number, key: string): void {
    const k = firstOutside(chunk, this.#inside(this.info.arrays.indices, index), this.#extent);
    if (k < 0) return;
    const element = index * this.info.arrays.indices.chunk + k;
    throw new LayoutError(
      `${key} is damaged: indices[${element}] is ${chunk[k]}, but positions along the other axes are below ${this.#extent}. Its positions would put values in the wrong places; rewrite the store.`,
      { object: key, expected: `0 <= position < ${this.#extent}`, found: Number(chunk[k]) },
    );
  }

  /** `indptr` never decreases and stays within the values: checked once per decoded chunk. */
  #checkIndptrChunk(chunk: IntegerArray, index: number, key: string): void {
    const { nnz } = this.info;
    const k = firstNotMonotone(chunk, this.#inside(this.info.arrays.indptr, index), 0, nnz);
    if (k < 0) return;
    const element = index * this.info.arrays.indptr.chunk + k;
    const before = k > 0 ? ` after ${chunk[k - 1]}` : "";
    throw new LayoutError(
      `${key} is damaged: indptr[${element}] is ${chunk[k]}${before}, but indptr never decreases and stays within the ${nnz} values. Slices would read other slices' values; rewrite the store.`,
      { object: key, found: Number(chunk[k]) },
    );
  }

  /**
   * A missing `indptr` chunk reads as zeros (zarr's fill value), which is what zarr-python leaves
   * out for leading empty slices, and detectably wrong anywhere else: the last entry is the number
   * of values, and indptr never decreases, so zeros need a zero before them.
   */
  async #indptrMissing(index: number, key: string, signal?: AbortSignal): Promise<void> {
    const { nnz } = this.info;
    if (nnz === 0) return;
    const { chunk, length } = this.info.arrays.indptr;
    const start = index * chunk;
    const missing = `${key} is missing from the store, so zarr would read its indptr entries [${start}, ${Math.min(start + chunk, length)}) as zeros`;
    if (start + chunk >= length) {
      throw new IncompleteError(
        `${missing}, but it holds the last one, which is the number of values (${nnz}). The object was removed after the store was written; rewrite the store.`,
        { object: key },
      );
    }
    if (start > 0) {
      const before = numberAt(await this.#indptr.range(start - 1, start, signal), 0);
      if (before !== 0) {
        throw new IncompleteError(
          `${missing}, but the entry before them is ${before} and indptr never decreases. The object was removed after the store was written; rewrite the store.`,
          { object: key },
        );
      }
    }
  }

  /**
   * Refuse the positions read for `runs` (run `i` at `indices[indptr[i]:indptr[i+1]]`, read from
   * `indices` elements `at(i)` on) unless each run is strictly increasing and inside the extent.
   */
  #checkRuns(
    indices: IntegerArray,
    indptr: IntegerArray,
    at: (run: number) => number,
    positionOf: (run: number) => number,
  ): void {
    if (!this.#checkIndices && !this.#indices.anyMissing) return;
    const k = firstDisorderedIndex(indices, indptr, this.#extent);
    if (k < 0) return;
    let run = 0;
    while (numberAt(indptr, run + 1) <= k) run++;
    const offset = k - numberAt(indptr, run);
    const element = at(run) + offset;
    const chunk = this.#indices.chunkOf(element);
    const key = this.#indices.keyOf(chunk);
    const value = numberAt(indices, k);
    const after = offset > 0 ? ` after ${numberAt(indices, k - 1)}` : "";
    const text = `/${this.info.arrays.indices.path}: slice ${positionOf(run)} lists position ${value} (indices[${element}])${after}, but within a slice positions are strictly increasing and below ${this.#extent}.`;
    if (this.#indices.wasMissing(chunk)) {
      throw new IncompleteError(
        `${text} ${key} is missing from the store and was read as zeros (zarr's fill value), which no slice of more than one value can hold: the object was removed after the store was written. Rewrite the store.`,
        { object: key },
      );
    }
    throw new LayoutError(
      `${text} ${key} is damaged, and its positions would put values in the wrong places. Rewrite the store.`,
      { object: key },
    );
  }

  /** The two `indptr` entries bracketing slice `position`: where its run starts and ends. */
  async boundsAt(position: number, signal?: AbortSignal): Promise<[number, number]> {
    this.#check(position);
    const edges = await this.#indptr.range(position, position + 2, signal);
    return this.#bracket(position, numberAt(edges, 0), numberAt(edges, 1));
  }

  /** A bracket read from `indptr`, refused unless it is a run inside the values. */
  #bracket(position: number, lo: number, hi: number): [number, number] {
    if (
      !(Number.isSafeInteger(lo) && Number.isSafeInteger(hi) && 0 <= lo && lo <= hi && hi <= this.info.nnz)
    ) {
      throw new LayoutError(
        `/${this.info.arrays.indptr.path}: slice ${position} is bracketed by [${lo}, ${hi}), which is not a run inside the ${this.info.nnz} values. indptr is damaged, and reading it would return values from other slices. Rewrite the store.`,
        { object: `/${this.info.arrays.indptr.path}` },
      );
    }
    return [lo, hi];
  }

  /**
   * The raveled positions and values of slice `position`, in two waves: the `indptr` bracket, then
   * the `indices` and `data` runs together. At rank two the positions are the other axis.
   */
  async sliceAt(position: number, signal?: AbortSignal): Promise<Slice> {
    const [lo, hi] = await this.boundsAt(position, signal);
    const [positions, values] = await Promise.all([
      this.#indices.range(lo, hi, signal),
      this.#data.range(lo, hi, signal),
    ]);
    this.#checkRuns(
      positions as IntegerArray,
      Int32Array.of(0, hi - lo),
      () => lo,
      () => position,
    );
    return { positions: positions as IntegerArray, values };
  }

  /**
   * Slice `position` as one coordinate array per uncompressed axis, in `indexOrder` (the i-th array
   * is along axis `indexOrder[i]`, not axis i), with its values.
   */
  async coordsAt(
    position: number,
    signal?: AbortSignal,
  ): Promise<{ axes: readonly number[]; coords: Float64Array[]; values: NumericArray }> {
    const { positions, values } = await this.sliceAt(position, signal);
    const dims = this.info.indexShape;
    const coords = dims.map(() => new Float64Array(positions.length));
    unravelInto(positions, dims, coords);
    return { axes: this.info.indexOrder, coords, values };
  }

  /** Slice `position` scattered dense over the uncompressed axes: row-major over `indexShape`. */
  async denseSlice(
    position: number,
    signal?: AbortSignal,
  ): Promise<{ shape: readonly number[]; values: NumericArray }> {
    const { positions, values } = await this.sliceAt(position, signal);
    const size = this.info.indexShape.reduce((a, b) => a * b, 1);
    const dense = new (constructorOf(this.info.dtype))(size);
    for (let i = 0; i < positions.length; i++)
      (dense as Float64Array)[numberAt(positions, i)] = values[i] as number;
    return { shape: this.info.indexShape, values: dense };
  }

  /**
   * The largest absolute value of every slice: the stored `maxima` when the writer left them (one
   * small read), otherwise reduced over every value.
   */
  async maxima(signal?: AbortSignal): Promise<NumericArray> {
    if (this.#maxima !== undefined) return this.#maxima.all(signal);
    const [data, indptr] = await Promise.all([this.#data.all(signal), this.#indptr.all(signal)]);
    return maximaOf(data, indptr as IntegerArray);
  }

  /** The whole layout, every value read. At rank two its arrays are the CSR/CSC matrix. */
  async readLayout(signal?: AbortSignal): Promise<Layout> {
    const [data, indices, indptr] = await Promise.all([
      this.#data.all(signal),
      this.#indices.all(signal),
      this.#indptr.all(signal),
    ]);
    const layout = layoutOver(this.info.shape, this.info.indexedAxis, {
      data,
      indices: indices as IntegerArray,
      indptr: indptr as IntegerArray,
      indexOrder: this.info.indexOrder,
    });
    // layoutOver checked indptr; the positions are checked here, every run in one pass.
    this.#checkRuns(
      layout.indices,
      layout.indptr,
      (run) => numberAt(layout.indptr, run),
      (run) => run,
    );
    return layout;
  }

  /**
   * Many slices in two waves whatever their number: one for every `indptr` bracket, one for every
   * `indices` and `data` run together. Requests within a wave run concurrently; touching ranges are
   * merged; chunked layouts fetch each needed chunk once. Order is the caller's, repeats are
   * answered, and an empty batch is an empty selection.
   */
  async slicesAt(positions: ArrayLike<number>, signal?: AbortSignal): Promise<Selection> {
    const n = positions.length;
    const wanted = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const position = positions[i] as number;
      this.#check(position);
      wanted[i] = position;
    }
    // Wave one: every bracket indptr[p:p+2], side by side; touching windows are one range.
    const windows = new Float64Array(3 * n);
    for (let i = 0; i < n; i++) {
      const p = wanted[i] as number;
      windows[3 * i] = p;
      windows[3 * i + 1] = p + 2;
      windows[3 * i + 2] = 2 * i;
    }
    const edges = new (constructorOf(this.info.arrays.indptr.dtype))(2 * n);
    await this.#indptr.gather(windows, edges, signal);
    // Wave two: every run of indices and data, both arrays at once, copied straight into place.
    const counts = new Float64Array(n);
    const segments = new Float64Array(3 * n);
    for (let i = 0; i < n; i++) {
      const [lo, hi] = this.#bracket(wanted[i] as number, numberAt(edges, 2 * i), numberAt(edges, 2 * i + 1));
      counts[i] = hi - lo;
      segments[3 * i] = lo;
      segments[3 * i + 1] = hi;
    }
    const indptr = indptrOf(counts, this.info.shape, this.info.indexOrder);
    for (let i = 0; i < n; i++) segments[3 * i + 2] = numberAt(indptr, i);
    const total = numberAt(indptr, n);
    const indices = new (constructorOf(this.info.indexDtype))(total) as IntegerArray;
    const data = new (constructorOf(this.info.dtype))(total);
    await Promise.all([
      this.#indices.gather(segments, indices, signal),
      this.#data.gather(segments, data, signal),
    ]);
    this.#checkRuns(
      indices,
      indptr,
      (run) => segments[3 * run] as number,
      (run) => wanted[run] as number,
    );
    return new Selection({
      positions: wanted,
      indptr,
      indices,
      data,
      shape: this.info.shape,
      indexedAxis: this.info.indexedAxis,
      indexOrder: this.info.indexOrder,
    });
  }

  /**
   * The slices at positions `[start, stop)`: already one contiguous byte range per array in this
   * format, so one bracket range and one run, nothing coalesced or over-read.
   */
  async slicesOver(start: number, stop: number, signal?: AbortSignal): Promise<Selection> {
    if (!Number.isInteger(start) || !Number.isInteger(stop) || start > stop) {
      throw new SporadikError(
        `[${start}, ${stop}) is not a run of positions; give whole numbers with start <= stop.`,
        { tag: "InvalidArgument", expected: "whole numbers start <= stop", found: [start, stop] },
      );
    }
    if (stop > start) {
      this.#check(start);
      this.#check(stop - 1);
    }
    return this.slicesAt(
      Float64Array.from({ length: stop - start }, (_, k) => start + k),
      signal,
    );
  }

  /** A batch of slices dense over the uncompressed axes: row-major `[positions.length, ...indexShape]`. */
  async denseSlices(
    positions: ArrayLike<number>,
    signal?: AbortSignal,
  ): Promise<{ shape: number[]; values: NumericArray }> {
    return (await this.slicesAt(positions, signal)).toDense();
  }
}
