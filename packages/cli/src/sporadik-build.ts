/**
 * A dataset's row blocks with their columns renamed back to the source's order, for the sporadik
 * streaming writer. Renaming breaks the ascending column order within each row; it is restored by
 * two counting sorts over the block (to columns, and back to rows), no comparison sort, no
 * per-element allocation.
 */
import type { RowBlock } from "@deltacells/sporadik";

/** A block in one direction: `nMajor` runs over `nMinor` positions, `indptr` from 0. */
interface Compressed {
  nMajor: number;
  nMinor: number;
  indptr: Int32Array;
  indices: Int32Array;
  data: Int32Array;
}

/**
 * The other direction of `m` by a counting sort: runs become positions and positions runs. Walking
 * the runs in order leaves every new run sorted. `map[j]`, when given, renames position j first.
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
 * `block` (columns `0 .. nCols-1`) with column j renamed `columnOf[j]` (a permutation), every row's
 * columns ascending again.
 */
export function remapColumns(
  block: { nRows: number; indptr: ArrayLike<number>; indices: Int32Array; data: Int32Array },
  nCols: number,
  columnOf: Int32Array,
): RowBlock {
  const base = block.indptr[0] as number;
  const end = block.indptr[block.nRows] as number;
  const indptr = new Int32Array(block.nRows + 1);
  for (let r = 1; r <= block.nRows; r++) indptr[r] = (block.indptr[r] as number) - base;
  const rows: Compressed = {
    nMajor: block.nRows,
    nMinor: nCols,
    indptr,
    indices: block.indices.subarray(base, end),
    data: block.data.subarray(base, end),
  };
  const back = transpose(transpose(rows, columnOf));
  return { nRows: block.nRows, indptr: back.indptr, indices: back.indices, data: back.data };
}
