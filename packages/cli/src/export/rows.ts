/**
 * Streaming the rows of a cell range tile by tile, in the dataset's column order or mapped back
 * to the source's, for the exporters. Only the (at most two) partially covered edge tiles are
 * decoded ahead, to know the exact number of nonzeros before writing a header.
 */
import type { Dataset, DecodedTile } from "@deltacells/core";

export interface RowsPart {
  /** First cell of the part, relative to the exported range. */
  rowOffset: number;
  nCells: number;
  /** indptr from 0. */
  indptr: Float64Array;
  indices: Int32Array;
  data: Int32Array;
}

export interface ExportPlan {
  nCells: number;
  nGenes: number;
  nnz: number;
  parts(): AsyncGenerator<RowsPart>;
}

function rebase(t: DecodedTile): { indptr: Float64Array; indices: Int32Array; data: Int32Array } {
  const base = t.indptr[0]!;
  const end = t.indptr[t.nCells]!;
  const indptr = base === 0 ? t.indptr : t.indptr.map((p) => p - base);
  return { indptr, indices: t.indices.subarray(base, end), data: (t.data as Int32Array).subarray(base, end) };
}

/** Map each row's output columns to source columns (`order[j]`), re-sorting each row. */
function toSourceOrder(part: RowsPart, order: Int32Array, scratch: Int32Array): RowsPart {
  const indices = new Int32Array(part.indices.length);
  const data = new Int32Array(part.data.length);
  for (let r = 0; r < part.nCells; r++) {
    const a = part.indptr[r]!;
    const b = part.indptr[r + 1]!;
    for (let k = a; k < b; k++) {
      const g = order[part.indices[k]!]!;
      scratch[g] = part.data[k]!;
      indices[k] = g;
    }
    indices.subarray(a, b).sort();
    for (let k = a; k < b; k++) data[k] = scratch[indices[k]!]!;
  }
  return { ...part, indices, data };
}

/** Plan an export of cells `a .. b-1`; `sourceOrder` maps the columns back with gene_order.npy. */
export async function planExport(
  ds: Dataset,
  a: number,
  b: number,
  order: Int32Array | undefined,
): Promise<ExportPlan> {
  const nCells = b - a;
  if (nCells === 0) {
    return { nCells: 0, nGenes: ds.nGenes, nnz: 0, async *parts() {} };
  }
  const first = ds.locate(a).tile;
  const last = ds.locate(b - 1).tile;
  const edges = new Map<number, DecodedTile>();
  for (const t of new Set([first, last])) {
    const start = ds.tileStart(t);
    const lo = Math.max(a, start) - start;
    const hi = Math.min(b, ds.limits[t]!) - start;
    if (lo !== 0 || hi !== ds.manifest.tile_cells[t])
      edges.set(t, await ds.tileFromBytes(t, await ds.tileBytes(t), { cells: [lo, hi] }));
  }
  let nnz = 0;
  for (let t = first; t <= last; t++) {
    const e = edges.get(t);
    nnz += e ? e.indptr[e.nCells]! - e.indptr[0]! : ds.manifest.tile_nnz[t]!;
  }
  const scratch = order ? new Int32Array(ds.nGenes) : undefined;
  return {
    nCells,
    nGenes: ds.nGenes,
    nnz,
    async *parts() {
      const middleStart = edges.has(first) ? first + 1 : first;
      const middleEnd = edges.has(last) && last !== first ? last : last + 1;
      const emit = (t: number, tile: DecodedTile): RowsPart => {
        const part = { rowOffset: Math.max(a, ds.tileStart(t)) - a, nCells: tile.nCells, ...rebase(tile) };
        return order ? toSourceOrder(part, order, scratch!) : part;
      };
      if (edges.has(first)) yield emit(first, edges.get(first)!);
      if (middleStart < middleEnd) {
        for await (const { index, tile } of ds.tiles({ start: middleStart, end: middleEnd }))
          yield emit(index, tile);
      }
      if (last !== first && edges.has(last)) yield emit(last, edges.get(last)!);
    },
  };
}
