/**
 * Fills batches from decoded tiles: for each position of the batch, the cell's row segment is
 * copied from its tile into the batch's recycled arrays (CSR) or scattered into its dense row.
 * The loops run on typed arrays with no allocation per cell; a window's stream order is computed
 * once, into reused scratch arrays, when the batches reach it.
 */

import { copyRange } from "../codec/copy.js";
import { tileKey } from "../dataset/manifest.js";
import type { Dataset } from "../dataset/reader.js";
import { isDeltacellsError } from "../errors.js";
import type { BatchArrays } from "./batch.js";
import {
  type LoadedSegment,
  type SkippedTile,
  STOPPED,
  type TileFeed,
  type UnreadableTilePolicy,
  unreadable,
} from "./feed.js";
import type { ColumnMap } from "./genes.js";
import type { BatchObsBuilder, ObsGather } from "./obs.js";
import type { EpochPlan } from "./plan.js";

/** What filling a batch produced besides its arrays. */
export interface Filled {
  size: number;
  nnz: number;
  padded: number;
  skipped: number;
  obs: BatchObsBuilder | undefined;
}

/** Reused scratch of the current window. */
class WindowScratch {
  order = new Int32Array(0);
  segOfLocal = new Int32Array(0);
  seg = new Int32Array(0);
  row = new Int32Array(0);

  fit(n: number): void {
    if (this.order.length >= n) return;
    const size = Math.max(n, Math.ceil(this.order.length * 1.5));
    this.order = new Int32Array(size);
    this.segOfLocal = new Int32Array(size);
    this.seg = new Int32Array(size);
    this.row = new Int32Array(size);
  }
}

/** What an {@link Assembler} copies from, and what it does with a tile it cannot use. */
export interface AssemblerOptions {
  ds: Dataset;
  plan: EpochPlan;
  /** Decodes the windows' tiles. */
  feed: TileFeed;
  map: ColumnMap;
  obs: ObsGather | undefined;
  sortIndices: boolean;
  policy: UnreadableTilePolicy;
  /** Told of each tile skipped (`policy: "skip"`). */
  onSkip: (s: SkippedTile) => void;
}

export class Assembler {
  private current = -1;
  private start = 0;
  private end = 0;
  private readonly scratch = new WindowScratch();
  // The current window's segments, as plain arrays for the hot loops.
  private indptrs: Float64Array[] = [];
  private indices: Int32Array[] = [];
  private datas: (Int32Array | Float32Array)[] = [];
  private firstCell: number[] = [];
  private ok: boolean[] = [];
  private obsTiles: ReturnType<ObsGather["tile"]>[] = [];
  private sortKeys = new Float64Array(0);
  private sortIdx = new Int32Array(0);
  private sortData = new Float64Array(0);

  private readonly ds: Dataset;
  private readonly plan: EpochPlan;
  private readonly feed: TileFeed;
  private readonly map: ColumnMap;
  private readonly obs: ObsGather | undefined;
  private readonly sortIndices: boolean;
  private readonly policy: UnreadableTilePolicy;
  private readonly onSkip: (s: SkippedTile) => void;

  constructor(o: AssemblerOptions) {
    this.ds = o.ds;
    this.plan = o.plan;
    this.feed = o.feed;
    this.map = o.map;
    this.obs = o.obs;
    this.sortIndices = o.sortIndices;
    this.policy = o.policy;
    this.onSkip = o.onSkip;
  }

  /** Whether rows come out with increasing indices. */
  get sorted(): boolean {
    return this.map.monotone || this.sortIndices;
  }

  /** Moves to the window holding real position `pos`, giving back the one before. */
  private async enter(pos: number): Promise<void> {
    const w = this.plan.windowOf(pos);
    if (this.current >= 0 && this.current !== w) await this.feed.releaseWindow(this.current);
    const loaded = await this.feed.window(w);
    this.current = w;
    const win = this.plan.windows[w]!;
    this.start = win.start;
    this.end = win.start + win.cells;
    this.useSegments(loaded);
    const s = this.scratch;
    s.fit(win.cells);
    const order = this.plan.windowOrder(w, s.order);
    for (let k = 0; k < win.segments.length; k++) s.segOfLocal.fill(k, win.offsets[k]!, win.offsets[k + 1]!);
    for (let i = 0; i < win.cells; i++) {
      const local = order[i]!;
      const k = s.segOfLocal[local]!;
      s.seg[i] = k;
      s.row[i] = win.segments[k]!.lo + local - win.offsets[k]!;
    }
  }

  private useSegments(loaded: LoadedSegment[]): void {
    this.indptrs = [];
    this.indices = [];
    this.datas = [];
    this.firstCell = [];
    this.ok = [];
    this.obsTiles = [];
    for (const l of loaded) {
      const { segment, tile } = l;
      if (tile === undefined) {
        if (l.error === STOPPED) throw STOPPED;
        // A rewritten dataset is never skipped through: every tile after it would be refused too.
        if (this.policy === "error" || isDeltacellsError(l.error, "DatasetChanged"))
          throw unreadable(this.ds, segment.tile, l.error);
        this.onSkip({
          epoch: this.plan.settings.epoch,
          tile: segment.tile,
          key: tileKey(segment.tile),
          cells: Float64Array.from(
            { length: segment.hi - segment.lo },
            (_, i) => segment.cellStart + segment.lo + i,
          ),
          error: l.error,
        });
      }
      this.ok.push(tile !== undefined);
      this.indptrs.push(tile ? tile.indptr : EMPTY_F64);
      this.indices.push(tile ? tile.indices : EMPTY_I32);
      this.datas.push(tile ? tile.data : EMPTY_I32);
      this.firstCell.push(segment.cellStart);
      this.obsTiles.push(this.obs && tile ? this.obs.tile(segment.tile) : []);
    }
  }

  /** Fills `arrays` with batch k. */
  async fill(k: number, arrays: BatchArrays): Promise<Filled> {
    const plan = this.plan;
    const [from, to] = plan.batchRange(k);
    if (arrays.format === "dense") arrays.dense.fill(0, 0, (to - from) * arrays.nCols);
    const run: Run = { n: 0, at: 0, skipped: 0, obs: this.obs?.start(to - from) };
    arrays.indptr[0] = 0;
    let padded = 0;
    // Runs of consecutive positions in one window go through the synchronous loops below; only
    // moving to another window awaits (its tiles).
    for (let p = from; p < to; ) {
      const pos = p < plan.real ? p : plan.source(p);
      if (pos < this.start || pos >= this.end || this.current < 0) await this.enter(pos);
      if (p >= plan.real) {
        // Padding: one position at a time (at most a few per epoch).
        const before = run.n;
        this.copy(arrays, run, pos - this.start, pos - this.start + 1);
        padded += run.n - before;
        p++;
        continue;
      }
      const stop = Math.min(to, plan.real, this.end);
      this.copy(arrays, run, pos - this.start, stop - this.start);
      p = stop;
    }
    return { size: run.n, nnz: run.at, padded, skipped: run.skipped, obs: run.obs };
  }

  /** Copies the cells at window indices `[i0, i1)` (stream order) into the batch. */
  private copy(arrays: BatchArrays, run: Run, i0: number, i1: number): void {
    const segs = this.scratch.seg;
    const rows = this.scratch.row;
    if (arrays.format === "dense") {
      for (let i = i0; i < i1; i++) {
        const s = segs[i]!;
        if (!this.ok[s]) {
          run.skipped++;
          continue;
        }
        const row = rows[i]!;
        const ip = this.indptrs[s]!;
        denseRow(
          arrays.dense,
          run.n * arrays.nCols,
          this.indices[s]!,
          this.datas[s]!,
          ip[row]!,
          ip[row + 1]!,
          this.map,
        );
        this.finishCell(arrays, run, s, row);
      }
      return;
    }
    const sort = this.sortIndices && !this.map.monotone;
    for (let i = i0; i < i1; i++) {
      const s = segs[i]!;
      if (!this.ok[s]) {
        run.skipped++;
        continue;
      }
      const row = rows[i]!;
      const ip = this.indptrs[s]!;
      const a = ip[row]!;
      const b = ip[row + 1]!;
      if (run.at + b - a > arrays.indices.length) arrays.grow(run.at + b - a, run.at);
      const start = run.at;
      const si = this.indices[s]!;
      const sd = this.datas[s]!;
      const map = this.map;
      // Rows come in output columns unless columns are left out (a selection; see decoderColumns).
      run.at = map.complete
        ? copyRow(arrays.indices, arrays.data, start, si, sd, a, b)
        : mapRow(arrays.indices, arrays.data, start, si, sd, a, b, map.toOutput);
      if (sort && run.at - start > 1) this.sortRow(arrays.indices, arrays.data, start, run.at);
      arrays.indptr[run.n + 1] = run.at;
      this.finishCell(arrays, run, s, row);
    }
  }

  private finishCell(arrays: BatchArrays, run: Run, s: number, row: number): void {
    arrays.cells[run.n] = this.firstCell[s]! + row;
    if (run.obs) run.obs.put(run.n, this.obsTiles[s]!, row);
    run.n++;
  }

  /** Sorts one row's nonzeros by column (the option `sortIndices`). */
  private sortRow(oi: Int32Array, od: Int32Array | Float32Array, lo: number, hi: number): void {
    const len = hi - lo;
    if (this.sortKeys.length < len) {
      this.sortKeys = new Float64Array(len * 2);
      this.sortIdx = new Int32Array(len * 2);
      this.sortData = new Float64Array(len * 2);
    }
    // Column * len + position is exact (columns < 2^31, len <= columns < 2^26 in any real dataset).
    const keys = this.sortKeys.subarray(0, len);
    for (let x = 0; x < len; x++) keys[x] = oi[lo + x]! * len + x;
    keys.sort();
    for (let x = 0; x < len; x++) {
      const key = keys[x]!;
      const from = key % len;
      this.sortIdx[x] = (key - from) / len;
      this.sortData[x] = od[lo + from]!;
    }
    for (let x = 0; x < len; x++) {
      oi[lo + x] = this.sortIdx[x]!;
      od[lo + x] = this.sortData[x]!;
    }
  }

  /** Gives back the window still held (the end of the epoch, or a stop). */
  async finish(): Promise<void> {
    if (this.current >= 0) await this.feed.releaseWindow(this.current);
    this.current = -1;
  }
}

/** Where a batch being filled is. */
interface Run {
  n: number;
  at: number;
  skipped: number;
  obs: BatchObsBuilder | undefined;
}

/** Rows at least this long are copied with `TypedArray.set` (memcpy), shorter ones by a loop. */
const MEMCPY_FROM = 32;

/** Copies nonzeros `[a, b)` to `at`; returns the new end. */
function copyRow(
  oi: Int32Array,
  od: Int32Array | Float32Array,
  at: number,
  si: Int32Array,
  sd: Int32Array | Float32Array,
  a: number,
  b: number,
): number {
  if (b - a >= MEMCPY_FROM) {
    // A memcpy runs several times faster than the loop (the native one: tiles from a pool are
    // shared memory, where `set` is slow).
    copyRange(oi, at, si, a, b);
    copyRange(od, at, sd, a, b);
    return at + b - a;
  }
  for (let j = a; j < b; j++) {
    oi[at] = si[j]!;
    od[at] = sd[j]!;
    at++;
  }
  return at;
}

/** Copies the selected nonzeros of `[a, b)` to `at`, renumbered by `map`; returns the new end. */
function mapRow(
  oi: Int32Array,
  od: Int32Array | Float32Array,
  at: number,
  si: Int32Array,
  sd: Int32Array | Float32Array,
  a: number,
  b: number,
  map: Int32Array,
): number {
  for (let j = a; j < b; j++) {
    const o = map[si[j]!]!;
    if (o >= 0) {
      oi[at] = o;
      od[at] = sd[j]!;
      at++;
    }
  }
  return at;
}

/** Scatters nonzeros `[a, b)` into the dense row at `base`. */
function denseRow(
  out: Float32Array,
  base: number,
  si: Int32Array,
  sd: Int32Array | Float32Array,
  a: number,
  b: number,
  map: ColumnMap,
): void {
  if (map.complete) for (let j = a; j < b; j++) out[base + si[j]!] = sd[j]!;
  else {
    const m = map.toOutput;
    for (let j = a; j < b; j++) {
      const o = m[si[j]!]!;
      if (o >= 0) out[base + o] = sd[j]!;
    }
  }
}

const EMPTY_F64 = new Float64Array(1);
const EMPTY_I32 = new Int32Array(0);
