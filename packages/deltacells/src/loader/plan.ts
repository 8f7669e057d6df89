/**
 * The epoch plan: which cells a rank yields, in which order, cut into which batches. It is a pure
 * function of the settings and the manifest's `tile_cells`, never of the data, so a rank reads only
 * its own tiles, all ranks agree on the batch count without talking to each other, and a loader
 * resumed at batch k starts at the right tile without decoding the ones before.
 *
 * 1. The epoch's tiles are permuted (seed, epoch); their cells, concatenated in that order, form
 *    the epoch's cell sequence.
 * 2. Rank r takes the contiguous share `[floor(r N / W), floor((r + 1) N / W))` of that sequence:
 *    whole tiles, plus at most a partial tile at each end (shared with the neighbouring rank).
 * 3. The rank's tiles (segments) are grouped `bufferTiles` at a time into shuffle windows, and the
 *    cells of each window are permuted (seed, epoch, rank, window): the rank's stream.
 * 4. Every rank yields the same number of positions: `ceil(N / W)` (padding: a rank one short
 *    repeats cells of its last window) or, with `dropLast`, `floor(N / W)` cut to whole batches
 *    (the rest of the stream is dropped). Batch k is positions `[k B, (k + 1) B)`.
 */
import { identity, seededRandom, shuffleInPlace } from "./random.js";

/** Stream labels mixed into the seed so the tile order and the window shuffles are independent. */
const TILE_ORDER = 0x7469;
const WINDOW_ORDER = 0x77696e;

export interface PlanSettings {
  tileCells: readonly number[];
  batchSize: number;
  shuffle: boolean;
  seed: number;
  epoch: number;
  rank: number;
  worldSize: number;
  bufferTiles: number;
  dropLast: boolean;
}

/** Rows `[lo, hi)` of tile `tile`, whose first cell is global cell `cellStart`. */
export interface Segment {
  tile: number;
  lo: number;
  hi: number;
  cellStart: number;
}

/** A shuffle window: consecutive segments of the rank's share whose cells are shuffled together. */
export interface ShuffleWindow {
  index: number;
  segments: Segment[];
  /** Stream position of the window's first cell. */
  start: number;
  cells: number;
  /** `offsets[s]`: the window-local index of segment s's first cell (one more entry: `cells`). */
  offsets: Int32Array;
}

export class EpochPlan {
  readonly windows: ShuffleWindow[];
  /** The rank's own cells (its share of the epoch's cell sequence). */
  readonly real: number;
  /** Positions yielded, padding included; batches cover `[0, length)`. */
  readonly length: number;
  readonly batches: number;
  /** Positions `[real, length)` repeat earlier cells. */
  readonly padded: number;
  /** Positions `[length, real)` are not yielded. */
  readonly dropped: number;
  private readonly cellTotal: number;

  constructor(readonly settings: PlanSettings) {
    const { tileCells, batchSize: B, worldSize: W, rank, shuffle, seed, epoch } = settings;
    const nTiles = tileCells.length;
    let n = 0;
    const tileStart = new Float64Array(nTiles);
    for (let t = 0; t < nTiles; t++) {
      tileStart[t] = n;
      n += tileCells[t]!;
    }
    this.cellTotal = n;
    const order = identity(nTiles);
    if (shuffle) shuffleInPlace(order, seededRandom([seed, epoch, TILE_ORDER]));
    const a = Math.floor((rank * n) / W);
    const b = Math.floor(((rank + 1) * n) / W);
    this.real = b - a;
    // The rank's segments: the tiles (in epoch order) overlapping [a, b) of the cell sequence.
    const segments: Segment[] = [];
    let at = 0;
    for (let k = 0; k < nTiles && at < b; k++) {
      const t = order[k]!;
      const cells = tileCells[t]!;
      const lo = Math.max(a, at) - at;
      const hi = Math.min(b, at + cells) - at;
      if (hi > lo) segments.push({ tile: t, lo, hi, cellStart: tileStart[t]! });
      at += cells;
    }
    this.windows = [];
    let start = 0;
    for (let s = 0; s < segments.length; s += settings.bufferTiles) {
      const group = segments.slice(s, s + settings.bufferTiles);
      const offsets = new Int32Array(group.length + 1);
      group.forEach((g, i) => {
        offsets[i + 1] = offsets[i]! + g.hi - g.lo;
      });
      const cells = offsets[group.length]!;
      this.windows.push({ index: this.windows.length, segments: group, start, cells, offsets });
      start += cells;
    }
    if (settings.dropLast) {
      const quota = Math.floor(n / W);
      this.batches = Math.floor(quota / B);
      this.length = this.batches * B;
      this.padded = 0;
      this.dropped = this.real - this.length;
    } else {
      const quota = Math.ceil(n / W);
      this.batches = Math.ceil(quota / B);
      this.length = quota;
      this.padded = quota - this.real;
      this.dropped = 0;
    }
  }

  /** Positions of batch k: `[from, to)`. */
  batchRange(k: number): [number, number] {
    const B = this.settings.batchSize;
    return [k * B, Math.min((k + 1) * B, this.length)];
  }

  /** The real position a stream position reads: itself, or for padding a cell of the last window. */
  source(pos: number): number {
    if (pos < this.real) return pos;
    const last = this.windows[this.windows.length - 1]!;
    return last.start + ((pos - this.real) % last.cells);
  }

  /** The window holding real position `pos` (binary search; windows are in stream order). */
  windowOf(pos: number): number {
    let lo = 0;
    let hi = this.windows.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.windows[mid]!.start <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The windows batches `[fromBatch, batches)` read: `[first, end)`. */
  windowsFrom(fromBatch: number): [number, number] {
    return this.windowsFor(fromBatch, this.batches);
  }

  /** The windows batches `[fromBatch, toBatch)` read: `[first, end)`. */
  windowsFor(fromBatch: number, toBatch: number): [number, number] {
    if (fromBatch >= toBatch || this.windows.length === 0) return [0, 0];
    const [from] = this.batchRange(fromBatch);
    const [, to] = this.batchRange(toBatch - 1);
    const first = this.windowOf(this.source(from));
    // Padding reads the last window, which ends the rank's share anyway.
    const end = to > this.real ? this.windows.length : this.windowOf(to - 1) + 1;
    return [Math.min(first, end - 1), end];
  }

  /**
   * The window's cell order: `order[i]` is the window-local index (concatenated segments) of the
   * window's i-th stream cell. `into` is reused when large enough.
   */
  windowOrder(w: number, into?: Int32Array): Int32Array {
    const win = this.windows[w]!;
    const order = identity(win.cells, into);
    if (this.settings.shuffle) {
      const { seed, epoch, rank } = this.settings;
      shuffleInPlace(order, seededRandom([seed, epoch, WINDOW_ORDER, rank, w]));
    }
    return order;
  }

  private memo: { w: number; order: Int32Array } | undefined;

  /** The global cell at real position `pos` (slow path: for reports, not batches). */
  cellAt(pos: number): number {
    const w = this.windowOf(pos);
    const win = this.windows[w]!;
    if (this.memo?.w !== w) this.memo = { w, order: this.windowOrder(w) };
    const local = this.memo.order[pos - win.start]!;
    let s = 0;
    while (win.offsets[s + 1]! <= local) s++;
    const seg = win.segments[s]!;
    return seg.cellStart + seg.lo + (local - win.offsets[s]!);
  }

  /** The global cells of positions `[from, to)` (real positions or padding), for reports. */
  cellsAt(from: number, to: number): Float64Array {
    const out = new Float64Array(Math.max(0, to - from));
    for (let p = from; p < to; p++) out[p - from] = this.cellAt(this.source(p));
    return out;
  }

  /** Cells in the dataset. */
  get nCells(): number {
    return this.cellTotal;
  }
}
