/**
 * A sporadik store written from a matrix that arrives as row blocks, in bounded memory, with the
 * same bytes {@link writeStore} writes for the whole matrix.
 *
 * - Axis 0 (cells contiguous, CSR) is written as rows arrive, chunk by chunk.
 * - Axis 1 (genes contiguous, CSC) is a transposition in batches of rows: each batch is
 *   counting-sorted by gene block into one record per nonzero, its value and a 32-bit code (the
 *   gene's offset in its block, high 16 bits; the row's offset in the batch, low 16 bits), so a
 *   nonzero takes 4 bytes plus its value. Batches are kept in memory up to
 *   {@link StreamWriteOptions.transposeMemory} bytes (a matrix that fits is transposed without
 *   touching a disk), and past it appended to one temporary file, one large write per batch. Once
 *   every row is in, each gene block takes its segment of every batch, in order, and is
 *   counting-sorted by gene (rows stay ascending, since batches are in row order) and written.
 *   A block too large for the assembly budget is assembled in several passes over its segments.
 * - `maxima` of both layouts are kept on the fly (one value per row, streamed; one per gene).
 *
 * The root is written first without a block and the block last, so a run that stops anywhere in
 * between leaves a store every reader refuses as incomplete.
 *
 * @module
 */
import type { RowBlock as SharedRowBlock } from "@deltacells/storage";
import {
  ArrayWriter,
  type ChunkEncoder,
  DeferredArray,
  InFlight,
  narrow,
  wasmEncoder,
} from "./array-stream.js";
import { constructorOf, type DataType, dtypeOf, isBigArray, type NumericArray } from "./dtypes.js";
import { LayoutError, SporadikError } from "./errors.js";
import { needsInt64 } from "./layout.js";
import { BLOCK_KEY, type Block, blockFor, ENCODING_VERSION, LAYOUTS_GROUP, layoutPath } from "./spec.js";
import { MemorySpill, type SpillFile, type SpillSpace } from "./spill.js";
import { keyOf, normalizePrefix, type WritableStore } from "./store.js";
import { checkChecksums } from "./writer.js";
import { groupMetadataText } from "./zarr.js";

/**
 * Consecutive rows of a CSR matrix, as input readers hand them over: `indptr` may start past 0
 * (the shared `RowBlock` of @deltacells/storage).
 */
export type RowBlock = SharedRowBlock;

/** What the writer is doing, for a progress bar. */
export type StreamProgress =
  | { phase: "rows"; done: number; total: number }
  | { phase: "columns"; done: number; total: number };

/** Options of {@link StreamWriter.open}. */
export interface StreamWriteOptions {
  /** `[rows, columns]` of the whole matrix. */
  shape: readonly [number, number];
  /** The layouts to write: 0 (rows contiguous), 1 (columns contiguous), or both. Default both. */
  axes?: readonly number[];
  /** Type of the values. Default: that of the first block's `data`. */
  dtype?: DataType;
  /**
   * The number of nonzeros, when known before the rows arrive. It decides the width of `indices`
   * and `indptr` (int64 past int32, as scipy) up front, so axis 0 streams them straight out;
   * without it they are spooled to temporary space until the count is known. Checked at the end.
   */
  nnz?: number;
  /**
   * An upper bound on the nonzeros, when only that is known (the stored entries of an input whose
   * explicit zeros the rows leave out, `MatrixSource.nnz`): below 2^31 it fixes `int32` indices
   * up front as `nnz` would (the count is below it too), and it sizes the transposition. Checked
   * at the end.
   */
  nnzAtMost?: number;
  /** Elements per chunk for every array (as {@link WriteOptions.chunk}). */
  chunk?: number;
  /** One uncompressed chunk per array (as {@link WriteOptions.byteAddressable}). */
  byteAddressable?: boolean;
  /** zstd's content checksum on every chunk (as {@link WriteOptions.checksums}). Default false. */
  checksums?: boolean;
  /** Also write each layout's `maxima`. Default true. */
  maxima?: boolean;
  /** Where in the store the prefix is. Default: the store's root. */
  prefix?: string;
  /** Chunk writes in flight at once. Default 8. */
  concurrency?: number;
  /** Compresses chunks. Default: WebAssembly zstd on this thread (the Node entry has a native pool). */
  encoder?: ChunkEncoder;
  /** Temporary space. Default: memory (fine for small matrices; use files in Node for large ones). */
  spill?: SpillSpace;
  /**
   * Gene blocks of the transposition (each read back as one segment per batch). Default: with a
   * known `nnz`, few enough for large segments, enough that a typical block is half the assembly
   * budget (`2 nnz / assembly`, at least 1);
   * else 256. Capped at the number of columns; by default, enough that a block holds at most
   * 1,024 genes.
   */
  spillFiles?: number;
  /** Nonzeros sorted by gene block at once before they are appended to the spill. Default 2,097,152. */
  spillFrame?: number;
  /**
   * Nonzeros of axis 1 assembled in memory at once. Default 1,048,576: two buffers (one assembled
   * while the other is written) of at most 8 MiB at 4+4 bytes, sized to the largest range, and
   * gene blocks of about half that by default (`spillFiles`), so the buffers stop growing with
   * the matrix early: at 8 Mi they were ~6 MiB at 13.5 M nonzeros and ~50 MiB at 67 M.
   */
  assembly?: number;
  /**
   * Bytes of the transposition (4 bytes plus the value per nonzero) kept in memory before the rest
   * goes to {@link spill}: a matrix whose nonzeros fit is transposed without a disk, a larger one
   * spills only what is past this. The batches kept share one buffer, allocated when the first is
   * kept: this large, or as the records of `nnz`/`nnzAtMost` need (only the pages written take
   * memory). Default 0 (every nonzero to `spill`);
   * `writeStoreFromRowBlocks` in Node defaults to its `TRANSPOSE_MEMORY` (64 MiB).
   */
  transposeMemory?: number;
  /** Called as rows are taken and as gene blocks are written. */
  onProgress?: (progress: StreamProgress) => void;
}

/** What a finished write did. */
export interface StreamWriteResult {
  block: Block;
  nnz: number;
  /** Bytes spilled to temporary space in all (nonzeros for axis 1, spooled arrays). */
  bytesSpilled: number;
  /** Bytes of the transposition kept in memory instead ({@link StreamWriteOptions.transposeMemory}). */
  bytesInMemory: number;
  /** The most temporary bytes held at once. */
  peakSpillBytes: number;
}

/** Bytes one nonzero takes in the transposition: its code (gene in block, row in batch) and value. */
function spillBytesPerNonzero(dtype: DataType): number {
  return 4 + constructorOf(dtype).BYTES_PER_ELEMENT;
}

/** Genes per block and rows per batch that a record's 16-bit offsets can hold. */
const OFFSETS = 65_536;
/**
 * Genes per block at most by default: the assembly writes one output stream per gene of its
 * block, and fewer streams stay in cache (measured on the bench matrix: 12-15 ns a nonzero for
 * the whole assembly with 4,000 genes per block, 7-11 ns with 500-1,000; bench/RESULTS.md).
 */
const GENE_BLOCK = 1024;

/**
 * Bytes of temporary space ({@link StreamWriteOptions.spill}) a {@link StreamWriter} takes per
 * nonzero with these options, to check a disk has room before the first row is read: for axis 1,
 * each nonzero's value and a 4-byte code (gene in its block, row in its batch), at most (what
 * {@link StreamWriteOptions.transposeMemory} keeps in memory is not spilled); for axis 0 without
 * a known `nnz` (or a bound below 2^31), its `indices` spooled until the count decides their width.
 */
export function temporaryBytesPerNonzero(
  options: Pick<StreamWriteOptions, "axes" | "nnz" | "nnzAtMost"> & { dtype: DataType },
): number {
  const axes = options.axes ?? [0, 1];
  const widthKnown =
    options.nnz !== undefined || (options.nnzAtMost !== undefined && options.nnzAtMost < 2 ** 31);
  return (
    (axes.includes(1) ? spillBytesPerNonzero(options.dtype) : 0) + (!widthKnown && axes.includes(0) ? 4 : 0)
  );
}

const encoder = new TextEncoder();
/** Default {@link StreamWriteOptions.assembly}. */
const ASSEMBLY = 1_048_576;

/**
 * One batch of nonzeros, sorted by gene block: `n` values, then `n` codes (gene offset in its block
 * << 16 | row offset in the batch), in memory or in the spill file.
 */
interface Batch {
  /** Byte offset of the batch in the spill file (when not in memory). */
  offset: number;
  /** The batch itself, when kept in memory: the bytes from `at` of `memory`. */
  memory: ArrayBuffer | undefined;
  at: number;
  /** Nonzeros in the batch. */
  n: number;
  /** The batch's first row. */
  row0: number;
  /** Where each gene block's segment starts (in nonzeros), and the end: `blocks + 1` entries. */
  starts: Float64Array;
}

/** The arrays of one layout while it is written. */
interface LayoutArrays {
  group: string;
  data: ArrayWriter;
  indices: ArrayWriter | DeferredArray;
  indptr: ArrayWriter | DeferredArray;
  maxima: ArrayWriter | undefined;
}

function positiveInteger(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) && value >= 1)) {
    throw new SporadikError(`${name} must be a positive whole number, not ${value}.`, {
      tag: "InvalidArgument",
      expected: "a positive whole number",
      found: value,
    });
  }
  return value;
}

/**
 * Writes a sporadik store from row blocks: {@link open}, {@link writeRows} for every block in row
 * order, then {@link finish}. {@link abort} removes the temporary space after a failure (the store
 * is left without a block, which every reader refuses).
 */
export class StreamWriter {
  readonly #store: WritableStore;
  readonly #root: string;
  readonly #nRows: number;
  readonly #nCols: number;
  readonly #axes: number[];
  readonly #maxima: boolean;
  readonly #spill: SpillSpace;
  readonly #inFlight: InFlight;
  readonly #options: StreamWriteOptions;
  #dtype: DataType | undefined;
  /** Index width fixed up front from the shape or the declared nnz, or undefined until the end. */
  readonly #wide: boolean | undefined;
  #rows = 0;
  #nnz = 0;
  #finished = false;
  #begun = false;
  /** Whether axis 0's `indptr` has its leading 0. */
  #indptrStarted = false;
  #axis0: LayoutArrays | undefined;
  /** Axis 1: nonzeros per column, largest |value| per column, the gene blocks. */
  #counts: Float64Array | undefined;
  #colMax: NumericArray | undefined;
  /** Gene blocks, and the columns in each. */
  #blocks = 0;
  #perBucket = 1;
  /** The spill file of axis 1, and the batches in it, in row order. */
  #spillFile: SpillFile | undefined;
  #batches: Batch[] = [];
  /**
   * Nonzeros per batch, and two scratch buffers for batches bound for the spill file, each with
   * the append writing it (awaited before the buffer is reused, and before the spill is read): a
   * batch is sorted into one while the other is written.
   */
  #frame = 0;
  #scratch: ArrayBuffer[] = [new ArrayBuffer(0), new ArrayBuffer(0)];
  #appending: (Promise<void> | undefined)[] = [undefined, undefined];
  #turn = 0;
  #starts = new Float64Array(0);
  /** Bytes of batches in memory, and the most allowed. */
  #inMemory = 0;
  #memoryBudget = 0;
  /**
   * The batches kept in memory, one after another (each 8-byte aligned), in one buffer allocated
   * when the first is kept, and the end of the last. One buffer instead of one per batch (16 MiB
   * each by default): V8 answered each new batch's external memory with another garbage
   * collection (twice as many main-thread mark-compacts), and the batches' backing stores were
   * each allocated and freed (bench/RESULTS.md, "sporadik writes").
   */
  #region: ArrayBuffer | undefined;
  #regionEnd = 0;

  /**
   * Bytes of the region: the memory budget, or less when the nonzeros are known (their records
   * and 8 bytes of alignment per batch, at most one batch per row), so a small matrix does not
   * reserve the whole budget.
   */
  #regionBytes(width: number): number {
    const bound = this.#options.nnz ?? this.#options.nnzAtMost;
    if (bound === undefined) return this.#memoryBudget;
    return Math.min(this.#memoryBudget, bound * (4 + width) + 8 * (this.#nRows + 1));
  }

  private constructor(store: WritableStore, options: StreamWriteOptions) {
    const [nRows, nCols] = options.shape;
    for (const size of options.shape) {
      if (!(Number.isSafeInteger(size) && size >= 0)) {
        throw new LayoutError(
          `shape [${options.shape.join(", ")}] has ${size}, which is not a length; the streaming writer takes [rows, columns] of whole numbers.`,
        );
      }
    }
    if (options.shape.length !== 2) {
      throw new LayoutError(
        `The streaming writer takes rank-two matrices, but shape is [${options.shape.join(", ")}]. Use writeStore above rank two.`,
      );
    }
    if (nRows > 2 ** 32 - 1 || nCols > 2 ** 32 - 1) {
      throw new LayoutError(
        `shape [${options.shape.join(", ")}] has an axis past 2^32 - 1 positions, which the spill files (uint32 positions) cannot hold.`,
      );
    }
    const axes = [...new Set(options.axes ?? [0, 1])].sort((a, b) => a - b);
    if (axes.length === 0 || axes.some((axis) => axis !== 0 && axis !== 1)) {
      throw new LayoutError(
        `axes must name 0 (rows contiguous), 1 (columns contiguous) or both, not [${(options.axes ?? []).join(", ")}].`,
      );
    }
    if (options.nnz !== undefined && !(Number.isSafeInteger(options.nnz) && options.nnz >= 0)) {
      throw new LayoutError(`nnz must be the number of nonzeros, a whole number, not ${options.nnz}.`);
    }
    const bound = options.nnzAtMost;
    if (bound !== undefined && !(Number.isSafeInteger(bound) && bound >= 0)) {
      throw new LayoutError(`nnzAtMost must be a bound on the nonzeros, a whole number, not ${bound}.`);
    }
    positiveInteger(options.chunk, "chunk", 1);
    this.#store = store;
    this.#options = options;
    this.#root = normalizePrefix(options.prefix);
    this.#nRows = nRows;
    this.#nCols = nCols;
    this.#axes = axes;
    this.#maxima = options.maxima !== false;
    this.#spill = options.spill ?? new MemorySpill();
    this.#inFlight = new InFlight(positiveInteger(options.concurrency, "concurrency", 8));
    this.#dtype = options.dtype;
    // The width depends on the nonzeros only while the axes fit int32; past that it is int64 anyway.
    const byShape = needsInt64(options.shape, [1], 0);
    this.#wide = byShape
      ? true
      : options.nnz !== undefined
        ? needsInt64(options.shape, [1], options.nnz)
        : bound !== undefined && !needsInt64(options.shape, [1], bound)
          ? false
          : undefined;
  }

  /**
   * Start a store: its root (without a block) and layouts group, so that from here on an
   * interrupted write leaves a store readers refuse, never one they read as zeros.
   */
  static async open(store: WritableStore, options: StreamWriteOptions): Promise<StreamWriter> {
    checkChecksums(options);
    const writer = new StreamWriter(store, options);
    await writer.#start();
    return writer;
  }

  /** Every array started, so a failure can drop objects still being written in parts. */
  readonly #arrays: ArrayWriter[] = [];

  #array(path: string, dtype: DataType, expectedLength?: number): ArrayWriter {
    const array = new ArrayWriter(this.#context, path, dtype, expectedLength);
    this.#arrays.push(array);
    return array;
  }

  /** Write-behind pieces of the objects written in parts, recycled from object to object. */
  readonly #pieces: ArrayBuffer[] = [];

  get #context() {
    return {
      pieces: this.#pieces,
      store: this.#store,
      encoder: this.#options.encoder ?? wasmEncoder,
      inFlight: this.#inFlight,
      spill: this.#spill,
      byteAddressable: this.#options.byteAddressable === true,
      checksums: this.#options.checksums === true,
      chunk: this.#options.chunk,
    };
  }

  #group(axis: number): string {
    return `${this.#root ? `${this.#root}/` : ""}${layoutPath(axis)}`;
  }

  async #start(): Promise<void> {
    await this.#store.set(keyOf(this.#root, "zarr.json"), encoder.encode(groupMetadataText({})));
    const layouts = this.#root ? `${this.#root}/${LAYOUTS_GROUP}` : LAYOUTS_GROUP;
    await this.#store.set(keyOf(layouts, "zarr.json"), encoder.encode(groupMetadataText({})));
    if (this.#axes.includes(1)) {
      this.#counts = new Float64Array(this.#nCols);
      const assembly = positiveInteger(this.#options.assembly, "assembly", ASSEMBLY);
      const wanted =
        this.#options.spillFiles !== undefined
          ? positiveInteger(this.#options.spillFiles, "spillFiles", 1)
          : (this.#options.nnz ?? this.#options.nnzAtMost) !== undefined
            ? Math.ceil((2 * ((this.#options.nnz ?? this.#options.nnzAtMost) as number)) / assembly)
            : 256;
      const buckets = Math.max(1, Math.min(wanted, this.#nCols));
      // A record holds the gene's offset in its block in 16 bits; by default a block holds at most
      // GENE_BLOCK genes (docs/sporadik.md), a count asked for (`spillFiles`) is kept.
      const most = this.#options.spillFiles === undefined ? GENE_BLOCK : OFFSETS;
      this.#perBucket = Math.min(most, Math.max(1, Math.ceil(this.#nCols / buckets)));
      this.#blocks = Math.max(1, Math.ceil(this.#nCols / this.#perBucket));
      this.#memoryBudget =
        this.#options.transposeMemory === undefined || this.#options.transposeMemory === 0
          ? 0
          : positiveInteger(this.#options.transposeMemory, "transposeMemory", 0);
      this.#frame = positiveInteger(this.#options.spillFrame, "spillFrame", 2_097_152);
      this.#starts = new Float64Array(this.#blocks + 1);
    }
    // With the value type declared, the arrays start now: a store taking objects in parts opens
    // them (a file, an upload) while the caller reads its first rows, instead of after.
    if (this.#dtype !== undefined) this.#begin(this.#dtype);
  }

  async #groupMetadata(axis: number): Promise<void> {
    const attributes = {
      "encoding-type": axis === 0 ? "csr_matrix" : "csc_matrix",
      "encoding-version": ENCODING_VERSION,
      shape: [this.#nRows, this.#nCols],
    };
    await this.#store.set(
      keyOf(this.#group(axis), "zarr.json"),
      encoder.encode(groupMetadataText(attributes)),
    );
  }

  /** The value type is known from the first block on: allocate what depends on it. */
  #begin(dtype: DataType): void {
    this.#begun = true;
    this.#dtype = dtype;
    const Ctor = constructorOf(dtype);
    const context = this.#context;
    if (this.#axes.includes(0)) {
      const group = this.#group(0);
      const width = this.#wide === undefined ? undefined : this.#wide ? "int64" : "int32";
      this.#axis0 = {
        group,
        data: this.#array(`${group}/data`, dtype, this.#options.nnz),
        indices: width
          ? this.#array(`${group}/indices`, width, this.#options.nnz)
          : new DeferredArray(context, `${group}/indices`, "int32"),
        indptr: width
          ? this.#array(`${group}/indptr`, width, this.#nRows + 1)
          : new DeferredArray(context, `${group}/indptr`, "float64"),
        maxima: this.#maxima ? this.#array(`${group}/maxima`, dtype, this.#nRows) : undefined,
      };
    }
    if (this.#axes.includes(1)) this.#colMax = new Ctor(this.#nCols);
  }

  /** A writeRows still running: blocks come one at a time, in order. */
  #taking = false;

  /** Take the next rows, in order. Resolves once they are copied or spilled; await it before the next. */
  async writeRows(block: RowBlock): Promise<void> {
    if (this.#finished)
      throw new LayoutError("writeRows after finish: the store is written; open a new writer.");
    if (this.#taking) {
      throw new SporadikError(
        "writeRows was called before the previous block was taken; await each writeRows before the next (rows must arrive in order).",
        { tag: "StateError" },
      );
    }
    this.#taking = true;
    try {
      await this.#writeRows(block);
    } finally {
      this.#taking = false;
    }
  }

  async #writeRows(block: RowBlock): Promise<void> {
    const { nRows, indptr, indices, data } = block;
    if (isBigArray(data)) {
      throw new LayoutError(
        "The streaming writer takes number values (int8 to int32, uint8 to uint32, float32, float64), not 64-bit integers; write such a matrix with writeStore.",
      );
    }
    if (!this.#begun) this.#begin(this.#dtype ?? dtypeOf(data));
    if (dtypeOf(data) !== this.#dtype) {
      throw new LayoutError(
        `A block's values are ${dtypeOf(data)}, but the store's are ${this.#dtype}. Every block of one matrix has one value type; convert the block first.`,
      );
    }
    if (!(Number.isSafeInteger(nRows) && nRows >= 0) || indptr.length !== nRows + 1) {
      throw new LayoutError(
        `A block of ${nRows} rows has indptr of ${indptr.length} entries, not ${nRows + 1}; every row has a start and an end.`,
      );
    }
    if (this.#rows + nRows > this.#nRows) {
      throw new LayoutError(
        `Rows ${this.#rows} to ${this.#rows + nRows - 1} were given, but the matrix declared ${this.#nRows}. Declare the shape the source really has.`,
      );
    }
    const base = indptr[0] as number;
    const end = indptr[nRows] as number;
    if (!(base >= 0 && end >= base && end <= indices.length && end <= data.length)) {
      throw new LayoutError(
        `A block's indptr runs from ${base} to ${end}, outside its ${indices.length} indices and ${data.length} values.`,
      );
    }
    const rowMax = this.#axis0?.maxima ? new (constructorOf(this.#dtype as DataType))(nRows) : undefined;
    const lead = this.#axis0 !== undefined && !this.#indptrStarted;
    const offsets = this.#axis0 ? new Float64Array(lead ? nRows + 1 : nRows) : undefined;
    if (offsets && lead) offsets[0] = 0;
    this.#indptrStarted ||= lead;
    // Axis 1 takes the rows in batches of about a frame (the spill's scratch); axis 0 alone, at once.
    const spilling = this.#counts !== undefined;
    // Parts of the caller's block lent to axis 0's objects (written in parts), each resolved once
    // the store is done with it: awaited before this call returns, so the caller's memory is free then.
    const lent: Promise<void>[] = [];
    try {
      if (this.#axis0)
        await this.#appendAxis0(this.#axis0, data, indices, base, end, spilling ? lent : undefined);
      await this.#batchRows(block, base, spilling, rowMax, offsets, lead);
    } finally {
      await Promise.all(lent);
    }
    if (this.#axis0) {
      const { indptr: indptrOut, maxima } = this.#axis0;
      const offs = offsets as Float64Array;
      if (indptrOut instanceof DeferredArray) await indptrOut.append(offs);
      else await indptrOut.append(narrow(offs, indptrOut.dtype as "int32" | "int64"));
      if (maxima && rowMax) await maxima.append(rowMax);
    }
    this.#rows += nRows;
    this.#nnz += end - base;
    this.#options.onProgress?.({ phase: "rows", done: this.#rows, total: this.#nRows });
  }

  /**
   * Axis 0's values and columns of a block (they need no pass over the rows), before the rows are
   * checked and batched: their chunks compress, or their parts are written, meanwhile. A block
   * refused there leaves chunks but no block, like any failed write. With `lent`, the block's
   * memory is lent to objects written in parts (no copy; the batching reads it as the store
   * writes it) and `lent` gets the promise of each part's release.
   */
  async #appendAxis0(
    arrays: LayoutArrays,
    data: NumericArray,
    indices: Int32Array | Uint32Array,
    base: number,
    end: number,
    lent: Promise<void>[] | undefined,
  ): Promise<void> {
    const lend = () => {
      if (lent === undefined) return undefined;
      let release = () => {};
      lent.push(new Promise<void>((resolve) => (release = resolve)));
      return release;
    };
    const { data: dataOut, indices: indicesOut } = arrays;
    await dataOut.append(data.subarray(base, end), lend());
    const slice = indices.subarray(base, end);
    if (indicesOut instanceof DeferredArray) await indicesOut.append(asInt32(slice));
    else if (indicesOut.dtype === "int32") await indicesOut.append(asInt32(slice), lend());
    else await indicesOut.append(toBig(slice));
  }

  /** Check and batch the rows of a block (see {@link #take}), for axis 1 in batches of about a frame. */
  async #batchRows(
    block: RowBlock,
    base: number,
    spilling: boolean,
    rowMax: NumericArray | undefined,
    offsets: Float64Array | undefined,
    lead: boolean,
  ): Promise<void> {
    const { nRows, indptr, indices, data } = block;
    for (let r = 0; r < nRows; ) {
      let r1 = nRows;
      if (spilling) {
        // At most a frame of nonzeros (or one row past it) and the rows a record's 16 bits hold.
        const lo = indptr[r] as number;
        const most = Math.min(nRows, r + OFFSETS);
        r1 = r + 1;
        while (r1 < most && (indptr[r1 + 1] as number) - lo <= this.#frame) r1++;
      }
      this.#take(indptr, indices, data, r, r1, base, rowMax, offsets, lead ? 1 : 0);
      if (spilling) await this.#spillBatch(indptr, indices, data, r, r1);
      r = r1;
      // The store's writes (axis 0's parts, the spill) go on only in the event loop's turns.
      await nextTurn();
    }
  }

  /**
   * One pass over rows `[r0, r1)` of a block: checks every column, keeps each row's largest |value|
   * and axis 0's offsets, and for axis 1 counts nonzeros per column and per gene block (the batch's
   * counting sort, into `#starts`) and keeps each column's largest |value|.
   */
  #take(
    indptr: ArrayLike<number>,
    indices: Int32Array | Uint32Array,
    data: NumericArray,
    r0: number,
    r1: number,
    base: number,
    rowMax: NumericArray | undefined,
    offsets: Float64Array | undefined,
    lead: number,
  ): void {
    const counts = this.#counts;
    const colMax = this.#colMax as Float64Array | undefined;
    const starts = this.#starts;
    const per = this.#perBucket;
    const nCols = this.#nCols;
    const values = data as Float64Array;
    const maxima = rowMax as Float64Array | undefined;
    if (counts !== undefined) starts.fill(0);
    for (let r = r0; r < r1; r++) {
      const lo = indptr[r] as number;
      const hi = indptr[r + 1] as number;
      if (!(hi >= lo)) {
        throw new LayoutError(
          `indptr decreases at row ${this.#rows + r} (${lo} then ${hi}); each row must start where the previous one ended.`,
        );
      }
      let best = 0;
      let previous = -1;
      if (counts !== undefined && colMax !== undefined) {
        // A row's columns ascend, so the nonzeros it gives each gene block are one run: counted
        // for the batch's counting sort when the run ends, not one by one.
        let block = 0;
        let limit = per;
        let run = lo;
        for (let k = lo; k < hi; k++) {
          const g = indices[k] as number;
          if (!(g > previous && g < nCols)) this.#disorder(r, g, previous);
          previous = g;
          const a = Math.abs(values[k] as number);
          // NaN wins every comparison, as it does in writeStore's maxima.
          if (a > best || Number.isNaN(a)) best = a;
          counts[g] = (counts[g] as number) + 1;
          if (a > (colMax[g] as number) || Number.isNaN(a)) colMax[g] = a;
          if (g >= limit) {
            starts[block + 1] = (starts[block + 1] as number) + (k - run);
            run = k;
            block = Math.floor(g / per);
            limit = (block + 1) * per;
          }
        }
        starts[block + 1] = (starts[block + 1] as number) + (hi - run);
      } else {
        for (let k = lo; k < hi; k++) {
          const g = indices[k] as number;
          if (!(g > previous && g < nCols)) this.#disorder(r, g, previous);
          previous = g;
          const a = Math.abs(values[k] as number);
          if (a > best || Number.isNaN(a)) best = a;
        }
      }
      if (maxima) maxima[r] = best;
      if (offsets) offsets[r + lead] = this.#nnz + hi - base;
    }
  }

  /** The refusal of column `g` after column `previous` in row `r` of the block being taken. */
  #disorder(r: number, g: number, previous: number): never {
    if (!(g >= 0 && g < this.#nCols)) {
      throw new LayoutError(
        `Row ${this.#rows + r} has a value in column ${g}, but the matrix has ${this.#nCols} columns. Nothing was finished; check the declared shape.`,
      );
    }
    throw new LayoutError(
      `Row ${this.#rows + r} has column ${g} after column ${previous}: a row's columns must be strictly ascending (canonical CSR, as readers require). Nothing was finished; sort each row's entries and sum duplicates first.`,
    );
  }

  /**
   * Batch rows `[r0, r1)` of a block for axis 1 (their gene blocks counted by `#take`): a counting
   * sort by gene block into records, in a buffer of their own while the memory budget allows, else
   * in scratch appended to the spill file (awaited before the scratch is reused).
   */
  async #spillBatch(
    indptr: ArrayLike<number>,
    indices: Int32Array | Uint32Array,
    data: NumericArray,
    r0: number,
    r1: number,
  ): Promise<void> {
    const per = this.#perBucket;
    const starts = this.#starts;
    const used = this.#blocks;
    const values = data as Float64Array;
    const n = (indptr[r1] as number) - (indptr[r0] as number);
    if (n === 0) return;
    const Ctor = constructorOf(this.#dtype as DataType);
    const width = Ctor.BYTES_PER_ELEMENT;
    const size = codesAt(n, width) + 4 * n;
    // Kept batches sit one after another (8-byte aligned) in one region, allocated at the first.
    const place = Math.ceil(this.#regionEnd / 8) * 8;
    const keep = this.#memoryBudget > 0 && place + size <= this.#regionBytes(width);
    const turn = this.#turn;
    if (!keep) {
      // This scratch's previous batch must be written before it is overwritten.
      await this.#appending[turn];
      if ((this.#scratch[turn] as ArrayBuffer).byteLength < size) {
        const room = Math.max(n, this.#frame);
        this.#scratch[turn] = new ArrayBuffer(codesAt(room, width) + 4 * room);
      }
      this.#turn = 1 - turn;
    }
    if (keep) this.#region ??= new ArrayBuffer(this.#regionBytes(width));
    const buffer = keep ? (this.#region as ArrayBuffer) : (this.#scratch[turn] as ArrayBuffer);
    const from = keep ? place : 0;
    // Values first: a float64 value is 8-byte aligned there; codes follow at a multiple of 4.
    const vals = new Ctor(buffer, from, n) as Float64Array;
    const codes = new Uint32Array(buffer, from + codesAt(n, width), n);
    for (let b = 0; b < used; b++) starts[b + 1] = (starts[b + 1] as number) + (starts[b] as number);
    const next = starts.slice(0, used);
    // Each row's run of nonzeros in a gene block (its columns ascend) is copied in one go:
    // sequential writes, the block looked up once per run.
    for (let row = r0; row < r1; row++) {
      const end = indptr[row + 1] as number;
      const offset = row - r0;
      let k = indptr[row] as number;
      while (k < end) {
        const b = Math.floor((indices[k] as number) / per);
        const first = b * per;
        const limit = first + per;
        let at = next[b] as number;
        for (; k < end; k++) {
          const g = indices[k] as number;
          if (g >= limit) break;
          codes[at] = ((g - first) << 16) | offset;
          vals[at] = values[k] as number;
          at++;
        }
        next[b] = at;
      }
    }
    const batch: Batch = {
      offset: 0,
      memory: undefined,
      at: 0,
      n,
      row0: this.#rows + r0,
      starts: starts.slice(),
    };
    this.#batches.push(batch);
    if (keep) {
      batch.memory = buffer;
      batch.at = place;
      this.#regionEnd = place + size;
      this.#inMemory += size;
      return;
    }
    this.#spillFile ??= await this.#spill.create("columns");
    const file = this.#spillFile;
    batch.offset = this.#spillEnd;
    // Written while the next batch is sorted into the other scratch; appends run one at a time,
    // in order (each starts once the one before it ended), so offsets follow `batch.offset`.
    const before = this.#appending[1 - turn];
    const appending = (async () => {
      await before;
      await file.append([new Uint8Array(buffer, 0, size)]);
    })();
    // Awaited before the scratch is reused or the spill read; marked handled until then.
    appending.catch(() => undefined);
    this.#appending[turn] = appending;
    this.#spillEnd = batch.offset + size;
  }

  /** Bytes in the spill file once the appends started are done. */
  #spillEnd = 0;

  /** Wait for the batches being appended to the spill file (before it is read, or removed). */
  async #settleSpill(): Promise<void> {
    const pending = this.#appending;
    this.#appending = [undefined, undefined];
    await Promise.all(pending);
  }

  /**
   * Write what is left (every gene block of axis 1, the arrays whose length or width was unknown),
   * wait for every chunk, then land the block. Temporary space is removed, success or not.
   */
  async finish(): Promise<StreamWriteResult> {
    if (this.#finished) throw new LayoutError("finish called twice: the store is already written.");
    this.#finished = true;
    let axis0: Promise<void> = Promise.resolve();
    try {
      if (this.#rows !== this.#nRows) {
        throw new LayoutError(
          `${this.#rows} rows were written, but the matrix declared ${this.#nRows}. The store has no block and readers refuse it; write every row, or declare the shape the source has.`,
        );
      }
      if (this.#options.nnz !== undefined && this.#options.nnz !== this.#nnz) {
        throw new LayoutError(
          `${this.#nnz} nonzeros were written, but ${this.#options.nnz} were declared. The store has no block and readers refuse it; declare the count the source has, or none.`,
        );
      }
      if (this.#options.nnzAtMost !== undefined && this.#nnz > this.#options.nnzAtMost) {
        throw new LayoutError(
          `${this.#nnz} nonzeros were written, above the bound of ${this.#options.nnzAtMost} declared (nnzAtMost). The store has no block and readers refuse it; declare a bound the source keeps, or none.`,
        );
      }
      if (!this.#begun) this.#begin(this.#dtype ?? "float32");
      const width = needsInt64([this.#nRows, this.#nCols], [1], this.#nnz) ? "int64" : "int32";
      // Axis 0 closes (its last parts written) while axis 1's first range is assembled; axis 1's
      // objects are opened only once axis 0's are closed (see ArrayWriter.end).
      axis0 = this.#axis0 ? this.#finishAxis0(this.#axis0, width) : Promise.resolve();
      axis0.catch(() => undefined);
      if (this.#axes.includes(1)) await this.#finishAxis1(width, axis0);
      await axis0;
      await this.#inFlight.drain();
      // Every chunk durable before the block says the store is complete.
      await this.#store.flush?.();
      const layouts = new Map(this.#axes.map((axis) => [axis, { indexOrder: [1 - axis] }]));
      const block = blockFor([this.#nRows, this.#nCols], layouts);
      await this.#store.set(
        keyOf(this.#root, "zarr.json"),
        encoder.encode(groupMetadataText({ [BLOCK_KEY]: block })),
      );
      return {
        block,
        nnz: this.#nnz,
        bytesSpilled: this.#spill.bytesSpilled,
        bytesInMemory: this.#inMemory,
        peakSpillBytes: this.#spill.peakBytes,
      };
    } catch (error) {
      // Axis 0 may still be closing when axis 1 fails: nothing of it runs on after the failure
      // (writing metadata, reading a spilled part while the spill is removed).
      await axis0.catch(() => undefined);
      await Promise.all(this.#arrays.map((array) => array.abort()));
      throw error;
    } finally {
      // No append still writing into the spill while it is removed (its failure is already thrown).
      await this.#settleSpill().catch(() => undefined);
      await this.#spill.dispose();
    }
  }

  /** Give up: remove the temporary space. The store keeps no block, so readers refuse it. */
  async abort(): Promise<void> {
    this.#finished = true;
    await Promise.all(this.#arrays.map((array) => array.abort()));
    await this.#settleSpill().catch(() => undefined);
    await this.#spill.dispose();
  }

  async #finishAxis0(arrays: LayoutArrays, width: "int32" | "int64"): Promise<void> {
    if (!this.#indptrStarted) {
      // No row ever came: indptr is the single 0.
      const zero = Float64Array.of(0);
      if (arrays.indptr instanceof DeferredArray) await arrays.indptr.append(zero);
      else await arrays.indptr.append(narrow(zero, arrays.indptr.dtype as "int32" | "int64"));
    }
    // Objects written in parts closed first, in the order they were opened (see ArrayWriter.end).
    for (const array of [arrays.data, arrays.indices, arrays.indptr, arrays.maxima])
      if (array instanceof ArrayWriter) await array.end();
    await this.#groupMetadata(0);
    await arrays.data.finish();
    if (arrays.indices instanceof DeferredArray) await arrays.indices.finish(width);
    else await arrays.indices.finish();
    if (arrays.indptr instanceof DeferredArray) await arrays.indptr.finish(width);
    else await arrays.indptr.finish();
    await arrays.maxima?.finish();
  }

  /** Axis 1, once every row is in; nothing goes to the store before `axis0` (its closing) is done. */
  async #finishAxis1(width: "int32" | "int64", axis0: Promise<void>): Promise<void> {
    const dtype = this.#dtype as DataType;
    const Ctor = constructorOf(dtype);
    const counts = this.#counts as Float64Array;
    await this.#settleSpill();
    this.#scratch = [new ArrayBuffer(0), new ArrayBuffer(0)];
    const group = this.#group(1);
    let arrays: { data: ArrayWriter; indices: ArrayWriter } | undefined;
    const open = async () => {
      await axis0;
      await this.#groupMetadata(1);
      return {
        data: this.#array(`${group}/data`, dtype, this.#nnz),
        indices: this.#array(`${group}/indices`, width, this.#nnz),
      };
    };
    const budget = positiveInteger(this.#options.assembly, "assembly", ASSEMBLY);
    // Each gene block in ranges of at most `budget` nonzeros (a single gene may exceed it: it is
    // one column), and one assembly buffer for all, as large as the largest range.
    const ranges: { block: number; lo: number; hi: number; total: number; last: boolean }[] = [];
    let room = 0;
    for (let b = 0; b < this.#blocks; b++) {
      const first = b * this.#perBucket;
      const last = Math.min(first + this.#perBucket, this.#nCols);
      for (let lo = first; lo < last; ) {
        let hi = lo;
        let total = 0;
        while (hi < last && (hi === lo || total + (counts[hi] as number) <= budget)) {
          total += counts[hi] as number;
          hi++;
        }
        ranges.push({ block: b, lo, hi, total, last: hi === last });
        room = Math.max(room, total);
        lo = hi;
      }
    }
    // Two assembly buffers, taken in turn: a range assembled in one is lent to the store (written
    // from there, not copied into write-behind pieces) while the next is assembled in the other.
    const assemblies = new Assemblies(2, () => ({ rows: new Uint32Array(room), vals: new Ctor(room) }));
    for (const { block, lo, hi, total, last } of ranges) {
      if (total > 0) {
        const assembly = await assemblies.take();
        const [rows, vals] = await this.#assemble(block, lo, hi, total, Ctor, assembly);
        arrays ??= await open();
        const lent = width === "int32" ? 2 : 1;
        const release = assemblies.lend(assembly, lent);
        await arrays.data.append(vals, release);
        if (width === "int32")
          await arrays.indices.append(new Int32Array(rows.buffer, rows.byteOffset, rows.length), release);
        else await arrays.indices.append(toBig(rows));
        // A turn of the event loop: the store starts the next writes before the next assembly.
        await nextTurn();
      }
      if (last) this.#options.onProgress?.({ phase: "columns", done: hi, total: this.#nCols });
    }
    await this.#spillFile?.remove();
    this.#spillFile = undefined;
    this.#batches = [];
    this.#region = undefined;
    const { data, indices } = arrays ?? (await open());
    await data.end();
    await indices.end();
    await data.finish();
    await indices.finish();
    const offsets = new Float64Array(this.#nCols + 1);
    for (let g = 0; g < this.#nCols; g++) offsets[g + 1] = (offsets[g] as number) + (counts[g] as number);
    const indptr = this.#array(`${group}/indptr`, width, this.#nCols + 1);
    await indptr.append(narrow(offsets, width));
    await indptr.finish();
    if (this.#maxima) {
      const maxima = this.#array(`${group}/maxima`, dtype, this.#nCols);
      await maxima.append(this.#colMax as NumericArray);
      await maxima.finish();
    }
  }

  /**
   * Columns `[lo, hi)` of gene block `block`, `total` nonzeros, in column order, into `into`: a
   * counting sort of the block's segment of every batch, in order, so each column's rows stay
   * ascending.
   */
  async #assemble(
    block: number,
    lo: number,
    hi: number,
    total: number,
    Ctor: ReturnType<typeof constructorOf>,
    into: { rows: Uint32Array; vals: NumericArray },
  ): Promise<[Uint32Array, NumericArray]> {
    const counts = this.#counts as Float64Array;
    // int32 cursors are faster than float64 ones; a range past 2^31 nonzeros (one gene of more
    // rows than that) keeps float64.
    const next = total < 2 ** 31 ? new Int32Array(hi - lo) : new Float64Array(hi - lo);
    for (let g = lo + 1; g < hi; g++) next[g - lo] = (next[g - lo - 1] as number) + (counts[g - 1] as number);
    const rows = into.rows;
    const vals = into.vals as Float64Array;
    const width = Ctor.BYTES_PER_ELEMENT;
    const first = block * this.#perBucket;
    // Codes hold the gene's offset in the block; the range's columns are [lo - first, hi - first).
    const from0 = lo - first;
    const to0 = hi - first;
    const whole = from0 === 0 && hi === Math.min(first + this.#perBucket, this.#nCols);
    const segment = (batch: Batch) => {
      const from = batch.starts[block] as number;
      const n = (batch.starts[block + 1] as number) - from;
      if (n === 0) return undefined;
      const read = this.#segment(batch, from, n, Ctor, width);
      // Awaited below; marked handled so a failure while an earlier one is thrown is not unhandled.
      read.catch(() => undefined);
      return read;
    };
    const batches = this.#batches;
    // The next batch's segment is read (when spilled) while this one is scattered.
    let ahead = batches.length > 0 ? segment(batches[0] as Batch) : undefined;
    for (let index = 0; index < batches.length; index++) {
      const batch = batches[index] as Batch;
      const current = ahead;
      ahead = index + 1 < batches.length ? segment(batches[index + 1] as Batch) : undefined;
      if (current === undefined) continue;
      const [segmentVals, codes] = await current;
      // A turn of the event loop every few segments: the store's writes and axis 0's closing
      // (a chain of file operations, each started in a turn) go on while the range is assembled.
      if (index % TURN_EVERY === TURN_EVERY - 1) await nextTurn();
      const n = codes.length;
      const row0 = batch.row0;
      if (whole) {
        // The whole block in one pass: every nonzero of the segment belongs here.
        for (let i = 0; i < n; i++) {
          const code = codes[i] as number;
          const g = code >>> 16;
          const at = next[g] as number;
          next[g] = at + 1;
          rows[at] = row0 + (code & 0xffff);
          vals[at] = segmentVals[i] as number;
        }
        continue;
      }
      for (let i = 0; i < n; i++) {
        const code = codes[i] as number;
        const g = code >>> 16;
        if (g < from0 || g >= to0) continue;
        const at = next[g - from0] as number;
        next[g - from0] = at + 1;
        rows[at] = row0 + (code & 0xffff);
        vals[at] = segmentVals[i] as number;
      }
    }
    return [rows.subarray(0, total), vals.subarray(0, total)];
  }

  /** The values and codes of `n` records of `batch` from record `from`: views in memory, or read. */
  async #segment(
    batch: Batch,
    from: number,
    n: number,
    Ctor: ReturnType<typeof constructorOf>,
    width: number,
  ): Promise<[Float64Array, Uint32Array]> {
    if (batch.memory !== undefined) {
      return [
        new Ctor(batch.memory, batch.at + width * from, n) as Float64Array,
        new Uint32Array(batch.memory, batch.at + codesAt(batch.n, width) + 4 * from, n),
      ];
    }
    const file = this.#spillFile as SpillFile;
    const [valueBytes, codeBytes] = await Promise.all([
      file.read(batch.offset + width * from, width * n),
      file.read(batch.offset + codesAt(batch.n, width) + 4 * from, 4 * n),
    ]);
    return [
      new Ctor(valueBytes.buffer, valueBytes.byteOffset, n) as Float64Array,
      new Uint32Array(codeBytes.buffer, codeBytes.byteOffset, n),
    ];
  }
}

/**
 * At most `most` assembly buffers, made on demand: {@link take} waits for one lent to the store to
 * come back once all are made. A buffer lent in `parts` parts is back when each has been released.
 */
class Assemblies<T> {
  readonly #free: T[] = [];
  #made = 0;
  #waiting: (() => void)[] = [];
  constructor(
    readonly most: number,
    readonly make: () => T,
  ) {}

  async take(): Promise<T> {
    for (;;) {
      const free = this.#free.pop();
      if (free !== undefined) return free;
      if (this.#made < this.most) {
        this.#made++;
        return this.make();
      }
      await new Promise<void>((wake) => this.#waiting.push(wake));
    }
  }

  /** The release of `buffer`'s `parts` parts (called once each). */
  lend(buffer: T, parts: number): () => void {
    let out = parts;
    return () => {
      if (--out > 0) return;
      this.#free.push(buffer);
      this.#waiting.shift()?.();
    };
  }
}

/** Batch segments assembled between two turns of the event loop. */
const TURN_EVERY = 4;

/** Resolves in a later task (setImmediate, else a message), after the I/O callbacks waiting. */
function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    const immediate = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
    if (immediate !== undefined) {
      immediate(resolve);
      return;
    }
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(undefined);
  });
}

/** Where a batch of `n` values of `width` bytes has its codes: after the values, 4-byte aligned. */
function codesAt(n: number, width: number): number {
  return Math.ceil((n * width) / 4) * 4;
}

function asInt32(values: Int32Array | Uint32Array): Int32Array {
  return values instanceof Int32Array
    ? values
    : new Int32Array(values.buffer, values.byteOffset, values.length);
}

function toBig(values: ArrayLike<number>): BigInt64Array {
  const out = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = BigInt(values[i] as number);
  return out;
}

/**
 * Write a sporadik store from row blocks in one call: {@link StreamWriter.open}, every block, then
 * {@link StreamWriter.finish}; temporary space is removed on failure too.
 */
export async function writeStoreFromRows(
  store: WritableStore,
  blocks: Iterable<RowBlock> | AsyncIterable<RowBlock>,
  options: StreamWriteOptions,
): Promise<StreamWriteResult> {
  const writer = await StreamWriter.open(store, options);
  try {
    for await (const block of blocks) await writer.writeRows(block);
  } catch (error) {
    await writer.abort();
    throw error;
  }
  return writer.finish();
}
