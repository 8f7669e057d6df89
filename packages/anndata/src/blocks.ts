/**
 * Row blocks out of the three array layouts a container may hold (CSR, CSC, dense), shared by
 * AnnData and 10x HDF5 readers. Memory stays bounded by the block, not by the matrix:
 * - CSR: per block, a hyperslab of indptr (block cells + 1), then of indices and data;
 * - dense: hyperslabs of whole rows, at most ~4M values each, into one block;
 * - CSC: one sequential pass over the columns in slabs of 1M entries into a {@link CellBucketSpill}
 *   (in memory when small, temporary files otherwise), then the blocks bucket by bucket.
 */

import { csrSliceToBlock, RowBlockBuilder } from "./canonical.js";
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

/** CSR row blocks (of the cells of `range` only, when given: a CSR matrix seeks). */
export async function* csrBlocks(
  m: MatrixShape,
  l: SparseLayout,
  blockCells: number,
  signal?: AbortSignal,
  range?: CellRange,
): AsyncGenerator<CanonicalRowBlock> {
  checkSparseLengths(m, l, m.nCells);
  const { from, to } = span(m.nCells, range);
  for (let start = from; start < to || (start === 0 && m.nCells === 0); start += blockCells) {
    signal?.throwIfAborted();
    const rows = Math.min(blockCells, to - start);
    const indptr = toNumbers(await l.indptr.read(start, start + rows + 1));
    checkOffsets(m, l, indptr, start);
    const lo = indptr[0] as number;
    const hi = indptr[rows] as number;
    const indices = toNumbers(await l.indices.read(lo, hi));
    const data = toNumbers(await l.data.read(lo, hi));
    yield csrSliceToBlock(start, rows, m.nGenes, indptr, indices, data);
    if (m.nCells === 0) break;
  }
}

/** Dense row blocks (a cells x genes array), read in slabs of at most ~4M values; `range` as for CSR. */
export async function* denseBlocks(
  m: MatrixShape,
  array: TreeArray,
  blockCells: number,
  signal?: AbortSignal,
  slabValues = DENSE_SLAB_VALUES,
  range?: CellRange,
): AsyncGenerator<CanonicalRowBlock> {
  const slabRows = Math.max(1, Math.floor(slabValues / Math.max(1, m.nGenes)));
  const { from, to } = span(m.nCells, range);
  for (let start = from; start < to || (start === 0 && m.nCells === 0); start += blockCells) {
    signal?.throwIfAborted();
    const rows = Math.min(blockCells, to - start);
    const b = new RowBlockBuilder(start, rows, m.nGenes);
    for (let r = 0; r < rows; r += slabRows) {
      const n = Math.min(slabRows, rows - r);
      const values = toNumbers(await array.read(start + r, start + r + n));
      for (let k = 0; k < n; k++) {
        b.pushDense(values, k * m.nGenes, (k + 1) * m.nGenes);
        b.endRow();
      }
    }
    yield b.finish();
    if (m.nCells === 0) break;
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
