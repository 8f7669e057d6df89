/**
 * Batches and the buffers behind them. A batch's arrays are views of buffers the loader keeps and
 * lends, like the reader's tiles: `release()` gives them back for a later batch, after which the
 * batch refuses to be read (so a kept reference fails loudly instead of showing other cells).
 */
import { DeltacellsError } from "../errors.js";
import type { MemoryLedger } from "./memory.js";
import type { BatchObsColumn } from "./obs.js";

interface BatchCommon {
  /** The epoch this batch belongs to. */
  readonly epoch: number;
  /** Its number within the epoch (0-based; the same on every rank). */
  readonly index: number;
  /**
   * Elastic order: its number in the epoch's global batch sequence (rank r of W yields r, r + W,
   * ... from where the run started); at or past the epoch's global batch count, a padding batch
   * repeating global batch `globalIndex - lanes`. Absent in the default order.
   */
  readonly globalIndex?: number;
  /** Cells (rows) in the batch. */
  readonly size: number;
  /** Output columns: the gene selection's length, or every gene. */
  readonly nGenes: number;
  /**
   * The global index of each row's cell in the dataset (exact integers: a float64 holds every
   * index below 2^53; `int64Of` converts to a BigInt64Array for an int64 tensor or Arrow column).
   */
  readonly cells: Float64Array;
  /** The last `padded` rows repeat cells this rank already yielded this epoch (see `dropLast`). */
  readonly padded: number;
  /** Rows left out of this batch because their tile was unreadable and skipped (`onUnreadableTile: "skip"`). */
  readonly skipped: number;
  /** The requested obs columns, one entry per row. */
  readonly obs: Readonly<Record<string, BatchObsColumn>>;
  /** Gives the arrays back to the loader; reading the batch afterwards throws. Idempotent. */
  release(): void;
  readonly released: boolean;
  /** `release()`, for `using batch = ...`. */
  [Symbol.dispose](): void;
}

/** A batch in CSR form (`output: "csr"`, the default). */
export interface CsrBatch extends BatchCommon {
  readonly format: "csr";
  /** `size + 1` offsets into `indices` / `data`, starting at 0 (exact integers). */
  readonly indptr: Float64Array;
  /** Output column of each nonzero. */
  readonly indices: Int32Array;
  /** Counts: int32, or float32 with `values: "float32"`. */
  readonly data: Int32Array | Float32Array;
  /**
   * Whether each row's `indices` increase. False when the output column order differs from the
   * tiles' (source order on a dataset with `gene_order.npy`, or an unsorted selection) and
   * `sortIndices` is off: still valid CSR (scipy, torch accept it), just not canonical.
   */
  readonly sortedIndices: boolean;
}

/** A batch as dense float32 rows (`output: "dense"`). */
export interface DenseBatch extends BatchCommon {
  readonly format: "dense";
  /** `size x nGenes` counts, row-major (cell-major). */
  readonly values: Float32Array;
}

export type Batch = CsrBatch | DenseBatch;

/** Nonzeros a CSR batch's arrays start with: at least this, else the hint. */
const MIN_NNZ = 1024;

/** Element counts of a batch's arrays: `cells` and `indptr` (float64), `nnz` (int32 indices and 32-bit data), `dense` (float32). */
interface Lengths {
  cells: number;
  indptr: number;
  nnz: number;
  dense: number;
}

function lengthsFor(batchSize: number, nCols: number, format: "csr" | "dense", nnzHint: number): Lengths {
  const csr = format === "csr";
  return {
    cells: batchSize,
    indptr: csr ? batchSize + 1 : 0,
    nnz: csr ? Math.max(MIN_NNZ, nnzHint) : 0,
    dense: csr ? 0 : batchSize * nCols,
  };
}

const bytesOf = (l: Lengths) => 8 * l.cells + 8 * l.indptr + 8 * l.nnz + 4 * l.dense;

/**
 * A slot of a shared batch file (ring.ts): a CSR batch's `indptr`, `indices` and `data` there
 * instead of in the loader's own memory, so that another process reads them where they were
 * written.
 */
export interface BatchSlot {
  slot: number;
  cells: Float64Array;
  indptr: Float64Array;
  indices: Int32Array;
  data: Int32Array | Float32Array;
}

/** The recycled arrays of one batch, counted in the loader's memory ledger as allocated and grown. */
export class BatchArrays {
  cells: Float64Array;
  indptr: Float64Array;
  indices: Int32Array;
  data: Int32Array | Float32Array;
  dense: Float32Array;

  constructor(
    readonly batchSize: number,
    readonly nCols: number,
    readonly format: "csr" | "dense",
    readonly values: "int32" | "float32",
    nnzHint: number,
    /** Rows and values in shared memory (a pool's workers write them; see the slot path). */
    readonly shared = false,
    private readonly ledger?: MemoryLedger,
    /** The slot of a shared batch file these arrays live in (its memory counted by the ring). */
    readonly home?: BatchSlot,
  ) {
    const l = lengthsFor(batchSize, nCols, format, nnzHint);
    if (home !== undefined) {
      this.cells = home.cells;
      this.indptr = home.indptr;
      this.indices = home.indices;
      this.data = home.data;
      this.dense = new Float32Array(0);
      return;
    }
    this.cells = new Float64Array(l.cells);
    this.indptr = new Float64Array(l.indptr);
    this.indices = this.ints(l.nnz);
    this.data = values === "float32" ? this.floats(l.nnz) : this.ints(l.nnz);
    this.dense = this.floats(l.dense);
    ledger?.addBatches(this.bytes);
  }

  /** Whether the nonzeros are in {@link home} (not grown out of it into the loader's memory). */
  get inSlot(): boolean {
    return this.home !== undefined && this.indices === this.home.indices;
  }

  /** Back into {@link home} after a batch outgrew it (the grown arrays are dropped). */
  restore(): void {
    if (this.home === undefined || this.inSlot) return;
    this.ledger?.addBatches(-8 * this.indices.length);
    this.indices = this.home.indices;
    this.data = this.home.data;
  }

  /** The nonzeros the constructor makes room for with `nnzHint`. */
  static nnzFor(nnzHint: number): number {
    return Math.max(MIN_NNZ, nnzHint);
  }

  /** The bytes the constructor allocates for these arguments (what `bytes` is until a `grow`). */
  static bytesFor(batchSize: number, nCols: number, format: "csr" | "dense", nnzHint: number): number {
    return bytesOf(lengthsFor(batchSize, nCols, format, nnzHint));
  }

  private ints(n: number): Int32Array {
    return this.shared ? new Int32Array(new SharedArrayBuffer(4 * n)) : new Int32Array(n);
  }

  private floats(n: number): Float32Array {
    return this.shared ? new Float32Array(new SharedArrayBuffer(4 * n)) : new Float32Array(n);
  }

  /**
   * Makes room for `need` nonzeros, keeping the first `keep`. By a quarter at least (copied rows
   * come one at a time), not doubling: the buffer is kept for later batches and counted against
   * the memory cap.
   */
  grow(need: number, keep: number): void {
    const before = this.bytes;
    // Out of its slot, the slot's memory stays held (by the ring): the new arrays come on top.
    const fromSlot = this.inSlot;
    const cap = Math.max(need, Math.ceil(1.25 * this.indices.length));
    const indices = this.ints(cap);
    indices.set(this.indices.subarray(0, keep));
    const data = this.values === "float32" ? this.floats(cap) : this.ints(cap);
    (data as Int32Array).set((this.data as Int32Array).subarray(0, keep));
    this.indices = indices;
    this.data = data;
    this.ledger?.addBatches(fromSlot ? 8 * cap : this.bytes - before);
  }

  /** Copies the first `size` rows (`nnz` nonzeros) of `src`, arrays of the same shape. */
  copyFrom(src: BatchArrays, size: number, nnz: number): void {
    this.cells.set(src.cells.subarray(0, size));
    if (this.format === "dense") {
      this.dense.set(src.dense.subarray(0, size * this.nCols));
      return;
    }
    this.indptr.set(src.indptr.subarray(0, size + 1));
    if (nnz > this.indices.length) this.grow(nnz, 0);
    this.indices.set(src.indices.subarray(0, nnz));
    (this.data as Int32Array).set((src.data as Int32Array).subarray(0, nnz));
  }

  /** Bytes held. */
  get bytes(): number {
    const { cells, indptr, indices, dense } = this;
    return bytesOf({ cells: cells.length, indptr: indptr.length, nnz: indices.length, dense: dense.length });
  }
}

/**
 * Where an assembler gets a batch's arrays and gives back those of a batch never handed out:
 * {@link BatchRecycler}, or a shared batch file's ring (ring.ts), whose `acquire` waits for a slot.
 */
export interface BatchSource {
  acquire(): BatchArrays | Promise<BatchArrays>;
  release(a: BatchArrays): void;
  /** Ends every wait of `acquire`, rejected with `reason` (the iteration stops). */
  cancelWaits(reason?: unknown): void;
}

/** Keeps released batch arrays for the next batches (at most as many as the loader can hold at once). */
export class BatchRecycler implements BatchSource {
  private readonly free: BatchArrays[] = [];

  constructor(
    private readonly make: () => BatchArrays,
    private readonly keep: number,
    private readonly ledger?: MemoryLedger,
  ) {}

  acquire(): BatchArrays {
    return this.free.pop() ?? this.make();
  }

  release(a: BatchArrays): void {
    if (this.free.length < this.keep) this.free.push(a);
    else this.ledger?.addBatches(-a.bytes);
  }

  /** Nothing waits here: a batch's arrays are made when none is free. */
  cancelWaits(): void {}
}

export interface BatchFields {
  epoch: number;
  index: number;
  globalIndex: number | undefined;
  size: number;
  nnz: number;
  padded: number;
  skipped: number;
  sortedIndices: boolean;
  obs: Record<string, BatchObsColumn>;
}

const disposeKey = (Symbol as { dispose?: symbol }).dispose;

function releasedError(field: string, f: BatchFields): DeltacellsError {
  return new DeltacellsError(
    `batch ${f.index} of epoch ${f.epoch} was released and its ${field} now holds another batch: copy what you keep (e.g. .slice()) before release()`,
    { tag: "InvalidInput", field, expected: "a batch not yet released", found: "released" },
  );
}

/** The batch lending `arrays` (given back by `release()`). */
export function lendBatch(arrays: BatchArrays, f: BatchFields, giveBack: (a: BatchArrays) => void): Batch {
  let released = false;
  const guard = <T>(field: string, value: () => T) => ({
    enumerable: true,
    get(): T {
      if (released) throw releasedError(field, f);
      return value();
    },
  });
  const cells = arrays.cells.subarray(0, f.size);
  const batch = {
    format: arrays.format,
    epoch: f.epoch,
    index: f.index,
    ...(f.globalIndex !== undefined && { globalIndex: f.globalIndex }),
    size: f.size,
    nGenes: arrays.nCols,
    padded: f.padded,
    skipped: f.skipped,
    get released() {
      return released;
    },
    release() {
      if (released) return;
      released = true;
      giveBack(arrays);
    },
  };
  Object.defineProperty(
    batch,
    "cells",
    guard("cells", () => cells),
  );
  Object.defineProperty(
    batch,
    "obs",
    guard("obs", () => f.obs),
  );
  if (arrays.format === "csr") {
    const indptr = arrays.indptr.subarray(0, f.size + 1);
    const indices = arrays.indices.subarray(0, f.nnz);
    const data = arrays.data.subarray(0, f.nnz);
    Object.defineProperty(
      batch,
      "indptr",
      guard("indptr", () => indptr),
    );
    Object.defineProperty(
      batch,
      "indices",
      guard("indices", () => indices),
    );
    Object.defineProperty(
      batch,
      "data",
      guard("data", () => data),
    );
    Object.defineProperty(batch, "sortedIndices", { value: f.sortedIndices, enumerable: true });
  } else {
    const values = arrays.dense.subarray(0, f.size * arrays.nCols);
    Object.defineProperty(
      batch,
      "values",
      guard("values", () => values),
    );
  }
  if (disposeKey !== undefined) (batch as Record<symbol, unknown>)[disposeKey] = batch.release;
  return batch as unknown as Batch;
}

/**
 * `values` as a BigInt64Array (for an int64 tensor or Arrow column) without a BigInt per element:
 * each exact integer below 2^53 is written as two 32-bit words.
 */
export function int64Of(values: Float64Array, out?: BigInt64Array): BigInt64Array {
  const result = out && out.length >= values.length ? out : new BigInt64Array(values.length);
  const words = new Uint32Array(result.buffer, result.byteOffset, 2 * values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!(Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER))
      throw new DeltacellsError(`int64Of: ${v} is not an integer in 0 .. 2^53 - 1`, {
        tag: "InvalidInput",
        found: v,
      });
    words[2 * i] = v >>> 0;
    words[2 * i + 1] = Math.floor(v / 4294967296);
  }
  return result.subarray(0, values.length);
}
