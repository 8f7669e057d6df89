/**
 * A count matrix gathered in memory as CSR, and the sporadik layouts built from it. sporadik's
 * writer takes whole layouts, so the whole matrix is held: every step here is a counting sort over
 * typed arrays (no comparison sort, no per-element allocation), about 8 bytes per nonzero per copy.
 */
import { type Layout, layoutFromCompressed } from "@deltacells/sporadik";

/** A cells x genes matrix in CSR form; `indptr` starts at 0. */
export interface Csr {
  nRows: number;
  nCols: number;
  indptr: Int32Array;
  indices: Int32Array;
  data: Int32Array;
}

/** A matrix in one direction, `nMajor` runs over `nMinor` positions (CSR rows or CSC columns). */
interface Compressed {
  nMajor: number;
  nMinor: number;
  indptr: Int32Array;
  indices: Int32Array;
  data: Int32Array;
}

/** One run of consecutive rows as the readers hand them over: `indptr` may start past 0. */
export interface RowPart {
  nRows: number;
  indptr: ArrayLike<number>;
  indices: Int32Array;
  data: Int32Array;
}

/** The parts, in row order, concatenated into one CSR of `nnz` nonzeros. */
export function concatRows(parts: readonly RowPart[], nCols: number, nnz: number): Csr {
  let nRows = 0;
  for (const p of parts) nRows += p.nRows;
  const indptr = new Int32Array(nRows + 1);
  const indices = new Int32Array(nnz);
  const data = new Int32Array(nnz);
  let row = 0;
  let at = 0;
  for (const p of parts) {
    const base = p.indptr[0] as number;
    const end = p.indptr[p.nRows] as number;
    for (let r = 1; r <= p.nRows; r++) indptr[row + r] = at + (p.indptr[r] as number) - base;
    indices.set(p.indices.subarray(base, end), at);
    data.set(p.data.subarray(base, end), at);
    row += p.nRows;
    at += end - base;
  }
  return { nRows, nCols, indptr, indices, data };
}

/**
 * The other direction of `m` by a counting sort: runs become positions and positions runs. Walking
 * the runs in order leaves every new run sorted. `map[j]`, when given, renames position j first
 * (the new runs are then over the renamed positions).
 */
function transpose(m: Compressed, map?: Int32Array): Compressed {
  const nnz = m.data.length;
  const indptr = new Int32Array(m.nMinor + 1);
  const src = m.indices;
  if (map) for (let k = 0; k < nnz; k++) indptr[(map[src[k]!] as number) + 1]!++;
  else for (let k = 0; k < nnz; k++) indptr[src[k]! + 1]!++;
  for (let j = 0; j < m.nMinor; j++) indptr[j + 1]! += indptr[j]!;
  const next = indptr.slice(0, m.nMinor);
  const indices = new Int32Array(nnz);
  const data = new Int32Array(nnz);
  const values = m.data;
  for (let i = 0; i < m.nMajor; i++) {
    const hi = m.indptr[i + 1]!;
    for (let k = m.indptr[i]!; k < hi; k++) {
      const j = map ? map[src[k]!]! : src[k]!;
      const at = next[j]!++;
      indices[at] = i;
      data[at] = values[k]!;
    }
  }
  return { nMajor: m.nMinor, nMinor: m.nMajor, indptr, indices, data };
}

/**
 * The layouts of `csr` along `axes` (0: cells contiguous, CSR; 1: genes contiguous, CSC). With
 * `columnOf`, output column j becomes column `columnOf[j]` (a permutation) and every run stays
 * sorted: the CSC is built straight from the renaming, the CSR back from the CSC.
 */
export function layoutsOf(csr: Csr, axes: readonly number[], columnOf?: Int32Array): Layout[] {
  const shape = [csr.nRows, csr.nCols] as const;
  const rows: Compressed = { ...csr, nMajor: csr.nRows, nMinor: csr.nCols };
  const cols = axes.includes(1) || columnOf ? transpose(rows, columnOf) : undefined;
  const layouts: Layout[] = [];
  if (axes.includes(0)) {
    const major = columnOf ? transpose(cols as Compressed) : rows;
    layouts.push(layoutFromCompressed({ format: "csr", shape, ...major }));
  }
  if (axes.includes(1)) layouts.push(layoutFromCompressed({ format: "csc", shape, ...(cols as Compressed) }));
  return layouts;
}
