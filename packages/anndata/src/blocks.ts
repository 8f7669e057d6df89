/**
 * Row blocks out of the three array layouts a container may hold (CSR, CSC, dense), shared by
 * AnnData and 10x HDF5 readers. Memory stays bounded by the block, not by the matrix:
 * - CSR: per block, a hyperslab of indptr (block cells + 1), then of indices and data;
 * - dense: hyperslabs of whole rows, at most ~4M values each, into one block;
 * - CSC: one sequential pass over the columns in slabs of 1M entries into a {@link CellBucketSpill}
 *   (in memory when small, temporary files otherwise), then the blocks bucket by bucket.
 */

import { BlockBuffers, csrSliceToBlock, RowBlockBuilder } from "./canonical.js";
import { AnndataError, objectIn } from "./errors.js";
import { CellBucketSpill } from "./spill.js";
import { type TreeArray, toNumbers } from "./tree.js";
import type { CanonicalRowBlock } from "./types.js";

/** A compressed sparse matrix: indptr over cells (csr) or over genes (csc). */
export interface SparseLayout {
  kind: "csr" | "csc";
  /** Path of the group holding the arrays, for messages. */
  group: string;
  indptr: TreeArray;
  indices: TreeArray;
  data: TreeArray;
}

export interface MatrixShape {
  location: string;
  nCells: number;
  nGenes: number;
}

/** Cells `[start, end)` of a matrix: the blocks a reader that can seek yields. */
export interface CellRange {
  start: number;
  end: number;
}

/** The first cell and the end of `range` over a matrix of `nCells` (all of them without one). */
function span(nCells: number, range: CellRange | undefined): { from: number; to: number } {
  if (range === undefined) return { from: 0, to: nCells };
  const to = Math.min(nCells, Math.max(0, range.end));
  return { from: Math.min(to, Math.max(0, range.start)), to };
}

const CSC_SLAB = 1 << 20;
const DENSE_SLAB_VALUES = 1 << 22;

/**
 * How large a row block may be: at most `cells` cells and, where the layout lets a reader know
 * before it reads (CSR's indptr) or as it builds (dense rows), about `nnz` nonzeros (a single cell
 * with more is a block of its own). Memory per block follows the nonzeros, not the cells: 4,096
 * cells of ~2,250 genes each are 9 M nonzeros, and h5wasm's WebAssembly memory, which never
 * shrinks, grows to the largest read.
 */
export interface BlockSize {
  cells: number;
  nnz: number;
  /** The consumer is done with a block once it asks for the next (`RowBlockOptions.reuse`). */
  reuse?: boolean;
}

/** CSR row blocks (of the cells of `range` only, when given: a CSR matrix seeks). */
export async function* csrBlocks(
  m: MatrixShape,
  l: SparseLayout,
  size: BlockSize,
  signal?: AbortSignal,
  range?: CellRange,
): AsyncGenerator<CanonicalRowBlock> {
  checkSparseLengths(m, l, m.nCells);
  const { from, to } = span(m.nCells, range);
  if (m.nCells === 0) {
    yield csrSliceToBlock(0, 0, m.nGenes, [0], [], []);
    return;
  }
  const buffers = size.reuse ? new BlockBuffers() : undefined;
  for (let start = from; start < to; ) {
    signal?.throwIfAborted();
    // indptr of up to `size.cells` cells at once, cut into blocks of at most `size.nnz` nonzeros
    const window = Math.min(size.cells, to - start);
    const indptr = toNumbers(await l.indptr.read(start, start + window + 1));
    checkOffsets(m, l, indptr, start);
    for (let r = 0; r < window; ) {
      signal?.throwIfAborted();
      const lo = indptr[r] as number;
      let e = r + 1;
      while (e < window && (indptr[e + 1] as number) - lo <= size.nnz) e++;
      const hi = indptr[e] as number;
      const offsets = new Float64Array(e - r + 1);
      for (let k = r; k <= e; k++) offsets[k - r] = indptr[k] as number;
      const indices = toNumbers(await l.indices.read(lo, hi));
      const data = toNumbers(await l.data.read(lo, hi));
      // resumed: the consumer asked for this block, so it is done with the one before
      buffers?.recycle();
      yield csrSliceToBlock(start + r, e - r, m.nGenes, offsets, indices, data, buffers);
      r = e;
    }
    start += window;
  }
}

/**
 * Dense row blocks (a cells x genes array), read in slabs of at most ~4M values, each block closed
 * once it holds `size.nnz` nonzeros or `size.cells` cells; `range` as for CSR.
 */
export async function* denseBlocks(
  m: MatrixShape,
  array: TreeArray,
  size: BlockSize,
  signal?: AbortSignal,
  slabValues = DENSE_SLAB_VALUES,
  range?: CellRange,
): AsyncGenerator<CanonicalRowBlock> {
  const slabRows = Math.max(1, Math.floor(slabValues / Math.max(1, m.nGenes)));
  const { from, to } = span(m.nCells, range);
  if (m.nCells === 0) {
    yield new RowBlockBuilder(0, 0, m.nGenes).finish();
    return;
  }
  let b: RowBlockBuilder | undefined;
  for (let start = from; start < to; start += slabRows) {
    signal?.throwIfAborted();
    const n = Math.min(slabRows, to - start);
    const values = toNumbers(await array.read(start, start + n));
    for (let k = 0; k < n; k++) {
      const cell = start + k;
      b ??= new RowBlockBuilder(cell, Math.min(size.cells, to - cell), m.nGenes);
      b.pushDense(values, k * m.nGenes, (k + 1) * m.nGenes);
      b.endRow();
      if (b.rowsDone === b.nRows || b.nnzDone >= size.nnz) {
        yield b.finishClosed();
        b = undefined;
      }
    }
  }
}

/** CSC (indptr over genes) row blocks, via a cell-bucket spill. */
export async function* cscBlocks(
  m: MatrixShape,
  l: SparseLayout,
  blockCells: number,
  signal?: AbortSignal,
  spillBytes?: number,
): AsyncGenerator<CanonicalRowBlock> {
  checkSparseLengths(m, l, m.nGenes);
  const indptr = toNumbers(await l.indptr.read(0, m.nGenes + 1));
  checkOffsets(m, l, indptr, 0);
  const nnz = indptr[m.nGenes] as number;
  const spill = new CellBucketSpill(m.nCells, m.nGenes, { blockCells, nnzHint: nnz, spillBytes });
  try {
    let gene = 0;
    for (let lo = indptr[0] as number; lo < nnz; lo += CSC_SLAB) {
      signal?.throwIfAborted();
      const hi = Math.min(nnz, lo + CSC_SLAB);
      const cells = toNumbers(await l.indices.read(lo, hi));
      const values = toNumbers(await l.data.read(lo, hi));
      for (let k = lo; k < hi; k++) {
        while ((indptr[gene + 1] as number) <= k) gene++;
        const cell = cells[k - lo] as number;
        if (!(cell >= 0 && cell < m.nCells)) {
          throw new AnndataError(
            `${m.location}: ${l.group}/indices holds cell ${cell} in gene ${gene}, outside [0, ${m.nCells}).`,
            { tag: "MalformedInput", object: objectIn(m.location, `${l.group}/indices`) },
          );
        }
        spill.add(cell, gene, values[k - lo] as number);
      }
    }
    yield* spill.blocks(signal);
  } finally {
    spill.dispose();
  }
}

function checkSparseLengths(m: MatrixShape, l: SparseLayout, major: number): void {
  const bad = (what: string) =>
    new AnndataError(`${m.location}: sparse matrix ${l.group}: ${what}.`, {
      tag: "MalformedInput",
      object: objectIn(m.location, l.group),
    });
  if (l.indptr.shape[0] !== major + 1)
    throw bad(`indptr has ${l.indptr.shape[0]} entries, expected ${major + 1}`);
  if (l.indices.shape[0] !== l.data.shape[0]) {
    throw bad(`indices (${l.indices.shape[0]}) and data (${l.data.shape[0]}) differ in length`);
  }
}

function checkOffsets(m: MatrixShape, l: SparseLayout, indptr: ArrayLike<number>, first: number): void {
  const total = l.data.shape[0] as number;
  for (let i = 0; i < indptr.length; i++) {
    const v = indptr[i] as number;
    if (!(v >= 0 && v <= total && (i === 0 || v >= (indptr[i - 1] as number)))) {
      throw new AnndataError(
        `${m.location}: ${l.group}/indptr[${first + i}] = ${v} is not a non-decreasing offset within [0, ${total}].`,
        { tag: "MalformedInput", object: objectIn(m.location, `${l.group}/indptr`) },
      );
    }
  }
}
