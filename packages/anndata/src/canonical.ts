/**
 * Building canonical CSR row blocks from whatever order an input stores its entries in, and
 * refusing values that are not counts. Browser-safe.
 */

import { AnndataError, type NotCountsReason } from "./errors.js";
import type { CanonicalRowBlock } from "./types.js";

/** Largest count a block can hold (int32). */
const MAX_COUNT = 2147483647;

/**
 * Thrown by the builder on the first value that is not a count (tag `NotCounts`, `found` the
 * value); the reader that drives the builder turns it into a {@link NotCountsError} with names
 * and suggestions.
 */
export class BadCount extends AnndataError {
  constructor(
    readonly cell: number,
    readonly gene: number,
    readonly value: number,
    readonly reason: NotCountsReason,
  ) {
    super(`cell ${cell}, gene ${gene}: ${reason} value ${value}`, {
      tag: "NotCounts",
      expected: "a non-negative integer below 2^31",
      found: value,
    });
  }
}

/** Thrown when a gene index falls outside [0, nGenes) (tag `MalformedInput`, `found` the index). */
export class BadGeneIndex extends AnndataError {
  constructor(
    readonly cell: number,
    readonly gene: number,
    readonly nGenes: number,
  ) {
    super(`cell ${cell} has gene index ${gene}, outside [0, ${nGenes})`, {
      tag: "MalformedInput",
      expected: `0 <= gene < ${nGenes}`,
      found: gene,
    });
  }
}

/** Why `v` is not a count, or undefined when it is one (0 included). */
export function countProblem(v: number): NotCountsReason | undefined {
  if (v >= 0 && v <= MAX_COUNT && Math.floor(v) === v) return undefined;
  if (Number.isNaN(v) || v === Number.POSITIVE_INFINITY || v === Number.NEGATIVE_INFINITY)
    return "not-finite";
  if (v < 0) return "negative";
  if (Math.floor(v) !== v) return "not-integer";
  return "too-large";
}

/**
 * The arrays of a reader's blocks when its consumer lets them be reused (`RowBlockOptions.reuse`):
 * each block is built into buffers the blocks before it gave back, so a pass over millions of
 * nonzeros allocates a few buffers instead of 8 bytes per nonzero (garbage that the collector
 * frees late and that the C heap keeps once freed). A buffer given back is detached (moved to a
 * new handle), so a block kept by mistake reads as empty and copying it throws: it never shows
 * the numbers of a later block.
 */
export class BlockBuffers {
  private free: ArrayBuffer[] = [];
  private lent: ArrayBuffer[] = [];

  /** An int32 array of `length` values on a free buffer that fits (the smallest), else a new one. */
  int32(length: number): Int32Array {
    const bytes = length * 4;
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!.byteLength;
      if (b >= bytes && (best < 0 || b < this.free[best]!.byteLength)) best = i;
    }
    const buffer = best >= 0 ? this.free.splice(best, 1)[0]! : new ArrayBuffer(sizeClass(bytes));
    this.lent.push(buffer);
    return new Int32Array(buffer, 0, length);
  }

  /**
   * Every buffer lent so far comes back: call it once the consumer is done with the blocks built
   * on them (it asked for the next). Kept: as many as were lent (one block's worth), the others
   * are left to the collector. A buffer the consumer moved away (transferred) is dropped.
   */
  recycle(): void {
    const back = this.lent.filter((b) => b.byteLength > 0).map((b) => structuredClone(b, { transfer: [b] }));
    this.free = [...back, ...this.free].slice(0, Math.max(2, back.length));
    this.lent = [];
  }
}

/** Sizes in steps of 1/8 of a power of two (at least 64 KiB): blocks of similar sizes share buffers. */
function sizeClass(bytes: number): number {
  if (bytes <= 1 << 16) return 1 << 16;
  const step = 2 ** (Math.ceil(Math.log2(bytes)) - 3);
  return Math.ceil(bytes / step) * step;
}

/** Array-like numeric storage the builder accepts values from. */
export type NumericArrayLike = ArrayLike<number>;

/**
 * Accumulates cells one at a time, entries of a cell in any order, into a canonical {@link CanonicalRowBlock}:
 * gene indices strictly increasing, duplicates summed (as scipy's sum_duplicates), zeros dropped.
 */
export class RowBlockBuilder {
  private indptr: Float64Array;
  private indices: Int32Array;
  private data: Int32Array;
  private nnz = 0;
  private row = 0;
  // the current row's raw entries, before sorting
  private rowGenes: Int32Array;
  private rowValues: Float64Array;
  private rowLen = 0;
  // the current row's first non-count in gene order, thrown when the row closes
  private rowBad: BadCount | undefined;

  /**
   * With `buffers`, the block's arrays are views of buffers lent by it (see {@link BlockBuffers}),
   * `nnzHint` at least as many as the block holds (more only costs a copy), and the finished
   * block's arrays views of them too.
   */
  constructor(
    readonly rowStart: number,
    readonly nRows: number,
    readonly nGenes: number,
    nnzHint = 1024,
    private readonly buffers?: BlockBuffers,
  ) {
    this.indptr = new Float64Array(nRows + 1);
    const cap = Math.max(16, nnzHint);
    this.indices = buffers ? buffers.int32(cap) : new Int32Array(cap);
    this.data = buffers ? buffers.int32(cap) : new Int32Array(cap);
    this.rowGenes = new Int32Array(64);
    this.rowValues = new Float64Array(64);
  }

  /** Index (in the source) of the cell being built. */
  get currentCell(): number {
    return this.rowStart + this.row;
  }

  /**
   * Adds one entry to the current cell. Zeros are fine (dropped); a non-count makes {@link endRow}
   * throw {@link BadCount} for the cell's smallest offending gene.
   */
  push(gene: number, value: number): void {
    if (!(gene >= 0 && gene < this.nGenes)) throw new BadGeneIndex(this.currentCell, gene, this.nGenes);
    if (value === 0) return;
    const problem = countProblem(value);
    if (problem !== undefined) {
      if (this.rowBad === undefined || gene < this.rowBad.gene)
        this.rowBad = new BadCount(this.currentCell, gene, value, problem);
      return;
    }
    if (this.rowLen === this.rowGenes.length) {
      const g = new Int32Array(this.rowLen * 2);
      g.set(this.rowGenes);
      this.rowGenes = g;
      const v = new Float64Array(this.rowLen * 2);
      v.set(this.rowValues);
      this.rowValues = v;
    }
    this.rowGenes[this.rowLen] = gene;
    this.rowValues[this.rowLen] = value;
    this.rowLen++;
  }

  /** Adds entries `[start, end)` of parallel `genes`/`values` arrays to the current cell. */
  pushMany(genes: NumericArrayLike, values: NumericArrayLike, start: number, end: number): void {
    for (let k = start; k < end; k++) this.push(genes[k] as number, values[k] as number);
  }

  /** Adds a dense row of values (gene j = position j) to the current cell. */
  pushDense(values: NumericArrayLike, start: number, end: number): void {
    for (let k = start; k < end; k++) {
      const v = values[k] as number;
      if (v !== 0) this.push(k - start, v);
    }
  }

  /** Closes the current cell: sorts its entries, sums duplicates, appends them to the block. */
  endRow(): void {
    if (this.row >= this.nRows) {
      throw new AnndataError("RowBlockBuilder: more rows than announced", {
        tag: "InvalidArgument",
        expected: this.nRows,
        found: this.row + 1,
      });
    }
    if (this.rowBad !== undefined) throw this.rowBad;
    const n = this.rowLen;
    const genes = this.rowGenes;
    const values = this.rowValues;
    let sorted = true;
    for (let k = 1; k < n; k++) {
      if ((genes[k] as number) <= (genes[k - 1] as number)) {
        sorted = false;
        break;
      }
    }
    this.reserve(this.nnz + n);
    const outI = this.indices;
    const outD = this.data;
    let out = this.nnz;
    if (sorted) {
      for (let k = 0; k < n; k++) {
        outI[out] = genes[k] as number;
        outD[out] = values[k] as number;
        out++;
      }
    } else {
      const order = Array.from({ length: n }, (_, k) => k).sort(
        (a, b) => (genes[a] as number) - (genes[b] as number) || a - b,
      );
      let prevGene = -1;
      for (const k of order) {
        const g = genes[k] as number;
        const v = values[k] as number;
        if (g === prevGene) {
          const sum = (outD[out - 1] as number) + v;
          if (sum > MAX_COUNT) throw new BadCount(this.currentCell, g, sum, "too-large");
          outD[out - 1] = sum;
        } else {
          outI[out] = g;
          outD[out] = v;
          out++;
          prevGene = g;
        }
      }
    }
    this.nnz = out;
    this.row++;
    this.indptr[this.row] = out;
    this.rowLen = 0;
  }

  /** Number of cells closed so far. */
  get rowsDone(): number {
    return this.row;
  }

  /** Nonzeros of the cells closed so far. */
  get nnzDone(): number {
    return this.nnz;
  }

  /** The block of the cells closed so far: fewer than announced when a block is cut by its nonzeros. */
  finishClosed(): CanonicalRowBlock {
    const indptr = this.row === this.nRows ? this.indptr : this.indptr.slice(0, this.row + 1);
    return { ...this.finishRows(), nRows: this.row, indptr };
  }

  /** The finished block; every announced row must have been closed. */
  finish(): CanonicalRowBlock {
    if (this.row !== this.nRows) {
      throw new AnndataError(`RowBlockBuilder: ${this.row} of ${this.nRows} rows closed`, {
        tag: "InvalidArgument",
        expected: this.nRows,
        found: this.row,
      });
    }
    return this.finishRows();
  }

  private finishRows(): CanonicalRowBlock {
    const exact = (a: Int32Array) =>
      this.nnz === a.length ? a : this.buffers ? a.subarray(0, this.nnz) : a.slice(0, this.nnz);
    return {
      rowStart: this.rowStart,
      nRows: this.nRows,
      indptr: this.indptr,
      indices: exact(this.indices),
      data: exact(this.data),
    };
  }

  private reserve(n: number): void {
    if (n <= this.indices.length) return;
    const cap = Math.max(n, this.indices.length * 2);
    const i = new Int32Array(cap);
    i.set(this.indices.subarray(0, this.nnz));
    this.indices = i;
    const d = new Int32Array(cap);
    d.set(this.data.subarray(0, this.nnz));
    this.data = d;
  }
}

/**
 * Canonicalizes a CSR slice: `indptr[0..nRows]` are absolute offsets whose first value maps to
 * position 0 of `indices`/`values`. With `buffers`, on buffers lent by it.
 */
export function csrSliceToBlock(
  rowStart: number,
  nRows: number,
  nGenes: number,
  indptr: NumericArrayLike,
  indices: NumericArrayLike,
  values: NumericArrayLike,
  buffers?: BlockBuffers,
): CanonicalRowBlock {
  const base = indptr[0] as number;
  // a cell's entries summed and its zeros dropped: never more than the slice's, so never grown
  const b = new RowBlockBuilder(rowStart, nRows, nGenes, values.length, buffers);
  for (let r = 0; r < nRows; r++) {
    b.pushMany(indices, values, (indptr[r] as number) - base, (indptr[r + 1] as number) - base);
    b.endRow();
  }
  return b.finish();
}
