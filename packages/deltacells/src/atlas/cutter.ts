/**
 * Cutting cells into tiles: each cell's genes renumbered into the dataset's order (genes the
 * dataset does not keep dropped), re-sorted, and appended to the tile being filled. Memory is one
 * tile's rows and one gene-length scratch array.
 */
import type { TileRows } from "../codec/encode.js";
import type { CanonicalRowBlock } from "../dataset/source.js";
import { invalidInput } from "./scan.js";

export class TileCutter {
  private indptr: Float64Array;
  private indices: Int32Array;
  private data: Int32Array;
  /** Scratch: the count of gene g in the current row. */
  private readonly valueAt: Int32Array;
  nCells = 0;
  nnz = 0;
  /** Nonzeros and counts appended since the cutter was made. */
  nnzSeen = 0;
  totalSeen = 0;

  constructor(
    readonly tileSize: number,
    readonly nGenes: number,
  ) {
    this.indptr = new Float64Array(tileSize + 1);
    this.indices = new Int32Array(1024);
    this.data = new Int32Array(1024);
    this.valueAt = new Int32Array(nGenes);
  }

  private reserve(extra: number): void {
    const need = this.nnz + extra;
    if (need <= this.indices.length) return;
    const cap = Math.max(need, Math.ceil(this.indices.length * 1.5));
    const indices = new Int32Array(cap);
    indices.set(this.indices.subarray(0, this.nnz));
    const data = new Int32Array(cap);
    data.set(this.data.subarray(0, this.nnz));
    this.indices = indices;
    this.data = data;
  }

  /**
   * Append row `r` of `block`, its genes mapped by `map` (input gene -> output column, -1: not
   * kept); zeros are not stored. `location` names the input in a refusal.
   */
  addRow(block: CanonicalRowBlock, r: number, map: Int32Array, location: string): void {
    const lo = block.indptr[r]!;
    const hi = block.indptr[r + 1]!;
    this.reserve(hi - lo);
    const { indices, data } = block;
    const out = this.indices;
    const valueAt = this.valueAt;
    const start = this.nnz;
    let n = start;
    let total = 0;
    for (let k = lo; k < hi; k++) {
      const v = data[k]!;
      if (v === 0) continue;
      const g = map[indices[k]!];
      if (g === undefined || v < 0) {
        throw invalidInput(
          location,
          `cell ${block.rowStart + r}: ${g === undefined ? `gene index ${indices[k]} is outside 0 .. ${map.length - 1}` : `count ${v} is negative`}; the input changed since it was scanned, or its reader is wrong`,
        );
      }
      if (g < 0) continue;
      valueAt[g] = v;
      out[n++] = g;
      total += v;
    }
    out.subarray(start, n).sort();
    const vals = this.data;
    for (let k = start; k < n; k++) vals[k] = valueAt[out[k]!]!;
    this.nnzSeen += n - start;
    this.totalSeen += total;
    this.nnz = n;
    this.nCells++;
    this.indptr[this.nCells] = n;
  }

  /** The tile's rows in exactly sized arrays (the pool may take them); the cutter starts a new tile. */
  take(): TileRows {
    const rows = {
      nGenes: this.nGenes,
      indptr: this.indptr.slice(0, this.nCells + 1),
      indices: this.indices.slice(0, this.nnz),
      data: this.data.slice(0, this.nnz),
    };
    this.nCells = 0;
    this.nnz = 0;
    return rows;
  }
}
