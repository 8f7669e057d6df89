/**
 * Fetches and decodes the tiles of an epoch's shuffle windows in order, ahead of the batches, as
 * far as the memory cap allows: a tile of a later window is started only when its decoded size
 * (known exactly from the manifest: `tile_cells`, `tile_nnz`) plus its stored size fits beside
 * everything the loader holds (memory.ts); the tiles of the oldest window held always start (the
 * batches wait for them; the loader was refused at creation if a window could not fit). Tiles
 * come from the dataset's reader, whose decoders lend recycled buffers; a window's tiles are given
 * back as soon as the batches have taken every cell of it.
 */

import type { TileLayout } from "../codec/layout.js";
import { outputBytes } from "../codec/recycle.js";
import { tileKey } from "../dataset/manifest.js";
import type { Dataset } from "../dataset/reader.js";
import type { DatasetTile } from "../dataset/tile-io.js";
import { DeltacellsError, isDeltacellsError } from "../errors.js";
import type { MemoryLedger } from "./memory.js";
import type { EpochPlan, Segment } from "./plan.js";

/** What the loader does with a tile it cannot read or decode. */
export type UnreadableTilePolicy = "error" | "skip";

/** A tile left out of an epoch (`onUnreadableTile: "skip"`) and the cells it cost. */
export interface SkippedTile {
  epoch: number;
  tile: number;
  /** The tile's store key (`tiles/tile_000007.dct`). */
  key: string;
  /** The global cells of this rank's share that were left out (every position holding them). */
  cells: Float64Array;
  /** Why the tile could not be used. */
  error: unknown;
}

/** A decoded tile of a window (or, for a feed of stored tiles, its bytes and layout), or the error that kept it out. */
export interface LoadedSegment {
  segment: Segment;
  tile: DatasetTile | undefined;
  /** The stored tile, checked up to its frames (a feed of `stored` tiles). */
  stored?: { bytes: Uint8Array; layout: TileLayout; done(): void };
  error: unknown;
}

/** What a tile or a window waited for answers once the loader has stopped (never reported as a fault). */
export const STOPPED = new Error("the loader stopped before this tile was used");

/**
 * Bytes the loader counts for one tile while it is fetched, decoded and held; `stored`: only
 * fetched (the slot path decodes it straight into the batch buffers, counted on their own).
 */
export function tileCost(ds: Dataset, t: number, stored = false): number {
  const m = ds.manifest;
  return (stored ? 0 : outputBytes(m.tile_cells[t]!, m.tile_nnz[t]!)) + m.tile_bytes[t]!;
}

interface Entry {
  window: number;
  segment: Segment;
  cost: number;
  result: Promise<LoadedSegment> | undefined;
}

/** What a {@link TileFeed} reads, and within what. */
export interface TileFeedOptions {
  ds: Dataset;
  plan: EpochPlan;
  /** The plan's windows to read, `[first, end)`. */
  windows: [number, number];
  ledger: MemoryLedger;
  /** Tiles fetched or decoding at once, at most. */
  maxInFlight: number;
  values: "int32" | "float32";
  /** A renumbering the decoder applies (`Dataset.tile`'s `columns`), or undefined. */
  columns: Int32Array | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Fetch the stored tiles and check their layouts instead of decoding them (the slot path:
   * the tiles are decoded later, straight into the batches). Only the stored bytes are counted.
   */
  stored?: boolean;
}

export class TileFeed {
  private readonly entries: Entry[] = [];
  private readonly byWindow = new Map<number, Entry[]>();
  private next = 0;
  private inFlight = 0;
  /** Windows to be given back once their tiles are decoded (`releaseWhenDone`). */
  private releasing = 0;
  private closed = false;
  private readonly waiters: (() => void)[] = [];
  /** Windows being given back, or given back. */
  private readonly releases = new Map<number, Promise<void>>();
  private readonly ds: Dataset;
  private readonly ledger: MemoryLedger;
  private readonly maxInFlight: number;
  private readonly values: "int32" | "float32";
  private readonly columns: Int32Array | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly stored: boolean;

  constructor(o: TileFeedOptions) {
    const { ds, plan, windows } = o;
    this.ds = ds;
    this.ledger = o.ledger;
    this.maxInFlight = o.maxInFlight;
    this.values = o.values;
    this.columns = o.columns;
    this.signal = o.signal;
    this.stored = o.stored ?? false;
    for (let w = windows[0]; w < windows[1]; w++) {
      const list: Entry[] = [];
      for (const segment of plan.windows[w]!.segments) {
        const e = { window: w, segment, cost: tileCost(ds, segment.tile, this.stored), result: undefined };
        this.entries.push(e);
        list.push(e);
      }
      this.byWindow.set(w, list);
    }
    this.pump();
  }

  private pump(): void {
    while (!this.closed && this.next < this.entries.length && this.inFlight < this.maxInFlight) {
      const e = this.entries[this.next]!;
      // One window ahead of the oldest held is enough to keep the decoder busy; going further
      // only holds more memory (and makes the decoder allocate buffers instead of reusing them).
      if (e.window > this.oldestHeld() + 1) return;
      // The oldest window always goes through, so the cap can never stall the batches.
      if (e.window > this.oldestHeld() && !this.ledger.fits(e.cost)) return;
      this.next++;
      this.ledger.addTiles(e.cost);
      this.inFlight++;
      e.result = this.load(e.segment).finally(() => {
        this.inFlight--;
        this.pump();
        this.wake();
      });
    }
  }

  /** The first window not yet given back. */
  private oldestHeld(): number {
    for (const w of this.byWindow.keys()) return w;
    return Number.POSITIVE_INFINITY;
  }

  private async load(segment: Segment): Promise<LoadedSegment> {
    if (this.stored) {
      try {
        // Read into memory the decoder lends (for a pool: shared, so it reaches the workers as is).
        const { bytes, done } = await this.ds.fetchTile(segment.tile, this.signal);
        let layout: TileLayout;
        try {
          layout = this.ds.tileLayout(segment.tile, bytes);
        } catch (error) {
          done();
          throw error;
        }
        if (this.closed) {
          done();
          return { segment, tile: undefined, error: STOPPED };
        }
        return { segment, tile: undefined, stored: { bytes, layout, done }, error: undefined };
      } catch (error) {
        return { segment, tile: undefined, error };
      }
    }
    try {
      const tile = await this.ds.tile(segment.tile, {
        values: this.values,
        signal: this.signal,
        ...(this.columns && { columns: this.columns }),
      });
      if (this.closed) {
        tile.release();
        return { segment, tile: undefined, error: STOPPED };
      }
      return { segment, tile, error: undefined };
    } catch (error) {
      return { segment, tile: undefined, error };
    }
  }

  /** Window w's tiles, once all are decoded (or failed: see `LoadedSegment.error`). */
  async window(w: number): Promise<LoadedSegment[]> {
    const list = this.byWindow.get(w);
    if (list === undefined) throw new Error(`window ${w} is not in this feed`);
    // Tiles start in order, so every tile of this window starts once the earlier ones are given back.
    while (list.some((e) => e.result === undefined)) {
      if (this.closed) throw STOPPED;
      if (this.inFlight === 0 && this.releasing === 0)
        throw new Error(`the loader's memory cap of ${this.ledger.cap} bytes cannot hold window ${w}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return Promise.all(list.map((e) => e.result!));
  }

  private wake(): void {
    const waiters = this.waiters.splice(0);
    for (const w of waiters) w();
  }

  /** Gives back window w's tiles. */
  releaseWindow(w: number): Promise<void> {
    let p = this.releases.get(w);
    if (p === undefined) {
      p = this.release(w);
      this.releases.set(w, p);
    }
    return p;
  }

  private async release(w: number): Promise<void> {
    const list = this.byWindow.get(w);
    if (list === undefined) return;
    for (const e of list) {
      if (e.result === undefined) continue;
      const r = await e.result;
      r.tile?.release();
      r.stored?.done();
      this.ledger.addTiles(-e.cost);
    }
    // Only now is the next window the oldest held (whose tiles start whatever the cap says).
    this.byWindow.delete(w);
    this.pump();
  }

  /** Gives back window w's tiles once `done` settles (their decoding into the batches). */
  async releaseWhenDone(w: number, done: Promise<unknown>): Promise<void> {
    this.releasing++;
    try {
      await done.catch(() => {});
      await this.releaseWindow(w);
    } finally {
      this.releasing--;
      this.wake();
    }
  }

  /** Stops fetching: nothing new starts, and a wait for a window not yet started fails. */
  stop(): void {
    this.closed = true;
    this.wake();
  }

  /** Stops fetching; every tile already decoded or still coming is given back. */
  async close(): Promise<void> {
    this.stop();
    const windows = [...this.byWindow.keys()];
    await Promise.all(windows.map((w) => this.releaseWindow(w)));
  }
}

/**
 * The tagged error for a tile the loader could not use: `UnreadableTile`, or the reader's own
 * `DatasetChanged` as it is (the tile is not damaged: the dataset was rewritten since it was
 * opened, and what helps is opening it again, not skipping or repairing tiles).
 */
export function unreadable(ds: Dataset, tile: number, cause: unknown): DeltacellsError {
  if (isDeltacellsError(cause, "DatasetChanged")) return cause;
  const key = tileKey(tile);
  const why = cause instanceof Error ? cause.message : String(cause);
  return new DeltacellsError(
    `${ds.url}/${key} could not be read or decoded: ${why}. The epoch stops here; to go on without this tile's cells pass onUnreadableTile: "skip" (they are then listed in loader.skipped), or repair the dataset`,
    { tag: "UnreadableTile", object: `${ds.url}/${key}`, field: "tile", found: tile, cause },
  );
}
