/**
 * A dataset read back as the row blocks it was written from: one block per tile, columns back in
 * the source's gene order. This is how a dataset feeds another writer (the sporadik streaming
 * writer takes exactly such blocks) without the two packages knowing each other.
 *
 * Renaming the columns breaks their ascending order within each row; it is restored by two counting
 * sorts over the block (to columns, and back to rows): no comparison sort, no per-element allocation.
 */
import type { Dataset } from "./reader.js";
import type { CanonicalRowBlock } from "./source.js";

/** Options of {@link datasetRowBlocks}. */
export interface DatasetRowBlocksOptions {
  /** Tiles decoded ahead of the one handed out (as `Dataset.tiles`). Default: one per decoder thread. */
  prefetch?: number;
  signal?: AbortSignal;
}

/** What {@link datasetRowBlocks} hands out. */
export interface DatasetRowBlocks {
  /**
   * The order of the columns: `"source"`, the input's own (undone through `gene_order.npy`), or
   * `"dataset"` when the dataset has no `gene_order.npy` (it never reordered genes, or no longer
   * knows how), so its columns are as stored.
   */
  geneOrder: "source" | "dataset";
  /** Every cell, in order, a tile at a time: canonical CSR, `indptr` from 0, int32 counts. */
  blocks: AsyncIterable<CanonicalRowBlock>;
}

/**
 * The cells of `ds` as canonical CSR row blocks, one per tile, with genes in the source's order:
 * the matrix a user converted, not the order the tile codec prefers. Reads `gene_order.npy` (when
 * there is one) before it returns; the tiles are read as the blocks are consumed.
 *
 *     const { blocks } = await datasetRowBlocks(ds);
 *     await writeStoreFromRowBlocks(store, blocks, { shape: [ds.nCells, ds.nGenes] });
 */
export async function datasetRowBlocks(
  ds: Dataset,
  options: DatasetRowBlocksOptions = {},
): Promise<DatasetRowBlocks> {
  const columnOf = await ds.geneOrder();
  return { geneOrder: columnOf ? "source" : "dataset", blocks: tileBlocks(ds, columnOf, options) };
}

async function* tileBlocks(
  ds: Dataset,
  columnOf: Int32Array | undefined,
  options: DatasetRowBlocksOptions,
): AsyncGenerator<CanonicalRowBlock> {
  for await (const { cellStart, tile } of ds.tiles(options)) {
    const block = {
      nRows: tile.nCells,
      indptr: tile.indptr,
      indices: tile.indices,
      data: tile.data as Int32Array,
    };
    const rows = columnOf ? remapColumns(block, ds.nGenes, columnOf) : block;
    yield { rowStart: cellStart, ...rows };
  }
}

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
 * the runs in order leaves every new run sorted. `map[j]`, when given, renames position j first;
 * a negative `map[j]` drops it.
 */
function transpose(m: Compressed, map?: Int32Array): Compressed {
  const nnz = m.data.length;
  const indptr = new Int32Array(m.nMinor + 1);
  const src = m.indices;
  if (map) {
    for (let k = 0; k < nnz; k++) {
      const j = map[src[k]!]!;
      if (j >= 0) indptr[j + 1]!++;
    }
  } else for (let k = 0; k < nnz; k++) indptr[src[k]! + 1]!++;
  for (let j = 0; j < m.nMinor; j++) indptr[j + 1]! += indptr[j]!;
  const kept = indptr[m.nMinor]!;
  const next = indptr.slice(0, m.nMinor);
  const indices = new Int32Array(kept);
  const data = new Int32Array(kept);
  const values = m.data;
  for (let i = 0; i < m.nMajor; i++) {
    const hi = m.indptr[i + 1]!;
    for (let k = m.indptr[i]!; k < hi; k++) {
      const j = map ? map[src[k]!]! : src[k]!;
      if (j < 0) continue;
      const at = next[j]!++;
      indices[at] = i;
      data[at] = values[k]!;
    }
  }
  return { nMajor: m.nMinor, nMinor: m.nMajor, indptr, indices, data };
}

/**
 * `block` with column j renamed `columnOf[j]` (into columns `0 .. nCols-1`; a negative entry drops
 * the column's counts), every row's columns ascending again.
 */
export function remapColumns(
  block: { nRows: number; indptr: ArrayLike<number>; indices: Int32Array; data: Int32Array },
  nCols: number,
  columnOf: Int32Array,
): { nRows: number; indptr: Int32Array; indices: Int32Array; data: Int32Array } {
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
