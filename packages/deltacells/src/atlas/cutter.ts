/**
 * Cutting cells into tiles: each cell's genes renumbered into the dataset's order (genes the
 * dataset does not keep dropped), re-sorted, and appended to the tile being filled. Memory is one
 * tile's rows per tile being filled or encoded, and one gene-length scratch array: a tile's arrays
 * go to the encoder as they are and come back for a later tile once it is encoded, so a pass over
 * millions of nonzeros does not leave 8 bytes of garbage per nonzero behind.
 */
import type { TileRows } from "../codec/encode.js";
import type { CanonicalRowBlock } from "../dataset/source.js";
import { invalidInput } from "./scan.js";

/** A tile's columns and counts, filled by the cutter: lent to the encoder, then filled again. */
interface TileArrays {
  indices: Int32Array;
  data: Int32Array;
}

/** The rows of a tile the cutter finished, and how to hand their memory back once encoded. */
export interface TakenTile {
  rows: TileRows;
  /**
   * The encoder is done with `rows`: their arrays fill a later tile. They are detached first
   * (moved to a new handle), so rows kept by mistake read as empty instead of another tile's counts.
   */
  giveBack(): void;
}

export class TileCutter {
  private indptr: Float64Array;
  private indices: Int32Array;
  private data: Int32Array;
  /** Scratch: the count of gene g in the current row. */
  private readonly valueAt: Int32Array;
  /** Arrays given back by the encoder, for the next tiles. */
  private free: TileArrays[] = [];
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

  /**
   * The tile's rows (`indices` and `data` views of the cutter's arrays, exactly the tile's
   * nonzeros long); the cutter starts a new tile in arrays given back before, or new ones as large.
   */
  take(): TakenTile {
    const lent: TileArrays = { indices: this.indices, data: this.data };
    const rows = {
      nGenes: this.nGenes,
      indptr: this.indptr.slice(0, this.nCells + 1),
      indices: this.indices.subarray(0, this.nnz),
      data: this.data.subarray(0, this.nnz),
    };
    const next = this.free.pop() ?? {
      indices: new Int32Array(lent.indices.length),
      data: new Int32Array(lent.data.length),
    };
    this.indices = next.indices;
    this.data = next.data;
    this.nCells = 0;
    this.nnz = 0;
    let given = false;
    return {
      rows,
      giveBack: () => {
        if (given) return;
        given = true;
        const indices = detached(lent.indices);
        const data = detached(lent.data);
        // as many pairs as tiles are encoded at once, plus the one being filled
        if (indices && data) this.free.push({ indices, data });
      },
    };
  }
}

/** `a` on a new handle of its buffer (the old handle and its views detached), or undefined when moved away. */
function detached(a: Int32Array): Int32Array | undefined {
  if (a.buffer.byteLength === 0) return undefined;
  return new Int32Array(structuredClone(a.buffer as ArrayBuffer, { transfer: [a.buffer as ArrayBuffer] }));
}
