/**
 * The loader's slot path: decoders write each cell's row straight into its place in the batches,
 * so the loader's thread never touches a nonzero. Everything a batch's layout needs is known
 * before decoding: the plan gives every stream position's tile and row, and a stored tile's
 * indptr (uncompressed) gives every row's length. So when the batches reach a shuffle window,
 * the window's stored tiles (fetched by the feed) are laid out over the batches they fill
 * (`indptr`, `cells`, obs on this thread: per cell, not per nonzero), and each tile goes to the
 * decoder with the slots of its rows (`Dataset.scatterTile`: on a pool's workers, chunk by chunk
 * while the chunk is in cache). A batch is ready once every tile writing into it is done.
 *
 * Batches equal the Assembler's (assemble.ts) for the same plan, position by position. This path
 * is taken when the decoder can scatter and nothing is left to do per nonzero on this thread:
 * every gene selected (renumbered by the decoder), rows not to be sorted, unreadable tiles
 * stopping the epoch (a tile found corrupt only while decoding would leave holes in batches
 * already laid out; with `onUnreadableTile: "skip"` the Assembler runs).
 */
import type { Dataset } from "../dataset/reader.js";
import type { Filled } from "./assemble.js";
import type { BatchArrays } from "./batch.js";
import { type LoadedSegment, STOPPED, type TileFeed, unreadable } from "./feed.js";
import { type ColumnMap, decoderColumns } from "./genes.js";
import type { BatchObsBuilder, ObsGather } from "./obs.js";
import type { EpochPlan } from "./plan.js";

/** Whether the slot path can make a loader's batches (see the module comment). */
export function slotsApply(
  ds: Dataset,
  map: ColumnMap,
  opts: { sortIndices: boolean; onUnreadableTile: "error" | "skip" },
): boolean {
  return (
    ds.scatters !== undefined &&
    map.complete &&
    opts.onUnreadableTile === "error" &&
    !(opts.sortIndices && !map.monotone)
  );
}

/** The result of one tile's scatter: never a rejection, so a batch waits for all its tiles. */
interface TileDone {
  tile: number;
  error: unknown;
}

/** A batch being laid out and written. */
interface OpenBatch {
  arrays: BatchArrays;
  /** Stream position of its first cell. */
  from: number;
  /** Cells laid out so far (always the next position in stream order). */
  n: number;
  /** Nonzeros laid out so far (CSR). */
  at: number;
  padded: number;
  obs: BatchObsBuilder | undefined;
  /** The scatters writing into it. */
  jobs: Promise<TileDone>[];
}

/** What a {@link SlotAssembler} lays out, and where its batch buffers come from. */
export interface SlotAssemblerOptions {
  /** The dataset whose decoder scatters the tiles. */
  ds: Dataset;
  plan: EpochPlan;
  /** Fetches the stored tiles (a feed of `stored` tiles). */
  feed: TileFeed;
  /** The plan's windows to lay out, `[first, end)`. */
  windows: [number, number];
  /** Stream position of the first batch made (a resumed loader skips the ones before). */
  firstPos: number;
  map: ColumnMap;
  output: "csr" | "dense";
  obs: ObsGather | undefined;
  /** A batch's buffers (waiting for a shared batch file's slot), and giving back those of a batch never handed out. */
  acquire: () => BatchArrays | Promise<BatchArrays>;
  giveBack: (a: BatchArrays) => void;
  /**
   * Lay the next window out while this one's last batch is filled (default true). Off when the
   * loader interleaves several lanes: the other lanes keep the decoder busy meanwhile, and each
   * lane then holds the batches of one window, not two.
   */
  ahead?: boolean;
}

export class SlotAssembler {
  private next: number;
  /** Each window's layout, by window (settled once its tiles are decoding). */
  private readonly laidOut: Promise<void>[] = [];
  private chain: Promise<void> = Promise.resolve();
  private readonly open = new Map<number, OpenBatch>();
  private readonly windowsDone: Promise<unknown>[] = [];
  // Reused scratch of one window's positions.
  private order = new Int32Array(0);
  private segOfLocal = new Int32Array(0);
  private posSeg = new Int32Array(0);
  private posRow = new Int32Array(0);
  private posAt = new Float64Array(0);
  private readonly columns: Int32Array | undefined;

  private readonly ds: Dataset;
  private readonly plan: EpochPlan;
  private readonly feed: TileFeed;
  private readonly firstPos: number;
  private readonly output: "csr" | "dense";
  private readonly obs: ObsGather | undefined;
  private readonly acquire: () => BatchArrays | Promise<BatchArrays>;
  private readonly giveBack: (a: BatchArrays) => void;
  private readonly ahead: boolean;

  constructor(o: SlotAssemblerOptions) {
    this.ds = o.ds;
    this.plan = o.plan;
    this.feed = o.feed;
    this.firstPos = o.firstPos;
    this.output = o.output;
    this.obs = o.obs;
    this.acquire = o.acquire;
    this.giveBack = o.giveBack;
    this.ahead = o.ahead ?? true;
    [this.next, this.endWindow] = o.windows;
    this.columns = decoderColumns(o.map);
    this.sorted = o.map.monotone;
  }

  private readonly endWindow: number;
  /** Whether rows come out with increasing indices (the slot path never sorts them). */
  readonly sorted: boolean;

  /** Batch k, once every tile writing into it is done; its arrays are the caller's from then on. */
  async fill(k: number): Promise<{ arrays: BatchArrays; filled: Filled }> {
    const plan = this.plan;
    const [from, to] = plan.batchRange(k);
    // Padding reads the last window; else the window of the batch's last position.
    const last = to > plan.real ? plan.windows.length - 1 : plan.windowOf(to - 1);
    while (this.next <= last) this.dispatchNext();
    await this.laidOut[last];
    // One window ahead: its tiles decode while this batch's last ones finish (else the workers
    // would wait for the next fill at every window's end). A failure there belongs to the
    // batches of that window: it is seen when they are filled.
    if (this.ahead && this.next === last + 1 && this.next < this.endWindow) this.dispatchNext();
    const b = this.open.get(k);
    if (b === undefined) throw new Error(`deltacells loader: batch ${k} was never laid out`);
    this.open.delete(k);
    const results = await Promise.all(b.jobs);
    const bad = results.find((r) => r.error !== undefined);
    if (bad !== undefined || b.n !== to - from) {
      this.giveBack(b.arrays);
      if (bad === undefined)
        throw new Error(`deltacells loader: batch ${k} has ${b.n} of ${to - from} cells`);
      throw bad.error === STOPPED ? STOPPED : unreadable(this.ds, bad.tile, bad.error);
    }
    return {
      arrays: b.arrays,
      filled: { size: b.n, nnz: b.at, padded: b.padded, skipped: 0, obs: b.obs },
    };
  }

  private async batch(k: number): Promise<OpenBatch> {
    let b = this.open.get(k);
    if (b !== undefined) return b;
    const [from, to] = this.plan.batchRange(k);
    const arrays = await this.acquire();
    if (arrays.format === "dense") arrays.dense.fill(0, 0, (to - from) * arrays.nCols);
    else arrays.indptr[0] = 0;
    b = { arrays, from, n: 0, at: 0, padded: 0, obs: this.obs?.start(to - from), jobs: [] };
    this.open.set(k, b);
    return b;
  }

  /** Lays the next window out once the one before is (windows are laid out in order). */
  private dispatchNext(): void {
    const w = this.next++;
    this.chain = this.chain.then(() => this.dispatch(w));
    this.laidOut[w] = this.chain;
    // Awaited by the fills that need it; a window laid out ahead may never be.
    this.chain.catch(() => {});
  }

  /** Lays window w out over its batches and starts decoding its tiles into them. */
  private async dispatch(w: number): Promise<void> {
    const loaded = await this.feed.window(w);
    for (const l of loaded)
      if (l.stored === undefined)
        throw l.error === STOPPED ? STOPPED : unreadable(this.ds, l.segment.tile, l.error);
    const plan = this.plan;
    const B = plan.settings.batchSize;
    const win = plan.windows[w]!;
    const m = this.positions(w);
    // The batches this window writes into, each with room for its rows (a batch's arrays are
    // grown only once the tiles already writing into it are done).
    const csr = this.output === "csr";
    const kFirst = m > 0 ? Math.floor(this.posAt[0]! / B) : 0;
    const kLast = m > 0 ? Math.floor(this.posAt[m - 1]! / B) : -1;
    const batches: OpenBatch[] = [];
    for (let k = kFirst; k <= kLast; k++) batches.push(await this.batch(k));
    if (csr) {
      const need = new Float64Array(batches.length);
      for (let i = 0; i < m; i++) {
        const ip = loaded[this.posSeg[i]!]!.stored!.layout.indptr;
        const row = this.posRow[i]!;
        need[Math.floor(this.posAt[i]! / B) - kFirst]! += ip[row + 1]! - ip[row]!;
      }
      for (let j = 0; j < batches.length; j++) {
        const b = batches[j]!;
        if (b.at + need[j]! > b.arrays.indices.length) {
          await Promise.all(b.jobs);
          b.arrays.grow(b.at + need[j]!, b.at);
        }
      }
    }
    // Slots, per segment: (row, target, offset) in stream order, sorted by row below.
    const nSeg = win.segments.length;
    const perSeg = new Int32Array(nSeg);
    for (let i = 0; i < m; i++) perSeg[this.posSeg[i]!]!++;
    const slots = Array.from({ length: nSeg }, (_, s) => new Float64Array(3 * perSeg[s]!));
    const filled = new Int32Array(nSeg);
    const obsTiles = this.obs ? win.segments.map((g) => this.obs!.tile(g.tile)) : [];
    for (let i = 0; i < m; i++) {
      const pos = this.posAt[i]!;
      const s = this.posSeg[i]!;
      const row = this.posRow[i]!;
      const j = Math.floor(pos / B) - kFirst;
      const b = batches[j]!;
      const slot = pos - b.from;
      if (slot !== b.n) throw new Error(`deltacells loader: position ${pos} laid out out of order`);
      const a = b.arrays;
      let offset: number;
      if (csr) {
        const ip = loaded[s]!.stored!.layout.indptr;
        offset = b.at;
        b.at += ip[row + 1]! - ip[row]!;
        a.indptr[slot + 1] = b.at;
      } else offset = slot * a.nCols;
      a.cells[slot] = win.segments[s]!.cellStart + row;
      if (b.obs) b.obs.put(slot, obsTiles[s]!, row);
      if (pos >= plan.real) b.padded++;
      b.n++;
      const q = 3 * filled[s]!++;
      const out = slots[s]!;
      out[q] = row;
      out[q + 1] = j;
      out[q + 2] = offset;
    }
    const targets = batches.map((b) =>
      csr
        ? { indices: b.arrays.indices, data: b.arrays.data }
        : { dense: b.arrays.dense, nCols: b.arrays.nCols },
    );
    const jobs: Promise<TileDone>[] = [];
    for (let s = 0; s < nSeg; s++) {
      if (perSeg[s] === 0) continue;
      const { segment, stored } = loaded[s] as Required<LoadedSegment>;
      const job = this.ds
        .scatterTile(segment.tile, stored.bytes, stored.layout, {
          values: batches[0]!.arrays.values,
          slots: byRow(slots[s]!, stored.layout.header.nCells),
          targets,
          ...(this.columns && { columns: this.columns }),
        })
        .then(
          () => ({ tile: segment.tile, error: undefined }),
          (error: unknown) => ({ tile: segment.tile, error }),
        );
      jobs.push(job);
    }
    for (const b of batches) b.jobs.push(...jobs);
    // The stored tiles go back once decoded (the feed then fetches further ahead).
    this.windowsDone.push(this.feed.releaseWhenDone(w, Promise.all(jobs)));
  }

  /**
   * The positions of window w this loader yields, in stream order, into the scratch arrays
   * (`posAt`: stream position, `posSeg`/`posRow`: the segment and tile row it reads): the
   * window's real positions from the first batch made on, up to the epoch's end (`dropLast`
   * drops the rest), then, for the last window, the padding. Returns their number.
   */
  private positions(w: number): number {
    const plan = this.plan;
    const win = plan.windows[w]!;
    const isLast = w === plan.windows.length - 1;
    const padding = isLast ? Math.max(0, plan.length - Math.max(plan.real, this.firstPos)) : 0;
    const size = win.cells + padding;
    if (this.posAt.length < size) {
      const n = Math.max(size, Math.ceil(this.posAt.length * 1.5));
      this.posAt = new Float64Array(n);
      this.posSeg = new Int32Array(n);
      this.posRow = new Int32Array(n);
    }
    if (this.order.length < win.cells) {
      const n = Math.max(win.cells, Math.ceil(this.order.length * 1.5));
      this.order = new Int32Array(n);
      this.segOfLocal = new Int32Array(n);
    }
    const order = plan.windowOrder(w, this.order);
    for (let k = 0; k < win.segments.length; k++)
      this.segOfLocal.fill(k, win.offsets[k]!, win.offsets[k + 1]!);
    let m = 0;
    const put = (pos: number, i: number) => {
      const local = order[i]!;
      const s = this.segOfLocal[local]!;
      this.posAt[m] = pos;
      this.posSeg[m] = s;
      this.posRow[m] = win.segments[s]!.lo + local - win.offsets[s]!;
      m++;
    };
    const lo = Math.max(win.start, this.firstPos);
    const hi = Math.min(win.start + win.cells, plan.length);
    for (let pos = lo; pos < hi; pos++) put(pos, pos - win.start);
    if (padding > 0)
      for (let pos = plan.length - padding; pos < plan.length; pos++) put(pos, plan.source(pos) - win.start);
    return m;
  }

  /** Waits for every tile still writing and gives back the batches never handed out. */
  async finish(): Promise<void> {
    await this.chain.catch(() => {});
    for (const b of this.open.values()) {
      await Promise.all(b.jobs);
      this.giveBack(b.arrays);
    }
    this.open.clear();
    await Promise.all(this.windowsDone);
  }
}

/** `(row, target, offset)` triples reordered by row (a counting sort; stable). */
function byRow(slots: Float64Array, nRows: number): Float64Array {
  const n = slots.length / 3;
  const start = new Int32Array(nRows + 1);
  for (let q = 0; q < n; q++) start[slots[3 * q]! + 1]!++;
  for (let r = 0; r < nRows; r++) start[r + 1]! += start[r]!;
  const out = new Float64Array(slots.length);
  for (let q = 0; q < n; q++) {
    const at = 3 * start[slots[3 * q]!]!++;
    out[at] = slots[3 * q]!;
    out[at + 1] = slots[3 * q + 1]!;
    out[at + 2] = slots[3 * q + 2]!;
  }
  return out;
}
