/**
 * `createLoader`: shuffled, sharded, resumable mini-batches of a dataset for training. The plan
 * (plan.ts) decides every batch from the settings and the manifest alone; the feed (feed.ts)
 * decodes the tiles the plan needs, ahead of the batches and within the memory cap; the
 * assembler (assemble.ts) copies rows into recycled batch buffers (batch.ts).
 */

import { loadNativeKernel } from "../codec/native.js";
import { poolTileDecoder } from "../dataset/pool-decoder.js";
import type { Dataset } from "../dataset/reader.js";
import { DeltacellsError } from "../errors.js";
import { Assembler, type Filled } from "./assemble.js";
import {
  type Batch,
  BatchArrays,
  BatchRecycler,
  type BatchSource,
  type CsrBatch,
  type DenseBatch,
  lendBatch,
} from "./batch.js";
import { type SkippedTile, TileFeed, tileCost } from "./feed.js";
import { type ColumnMap, decoderColumns, type LoaderGenes, resolveGenes } from "./genes.js";
import { MemoryLedger } from "./memory.js";
import { type BatchObsColumn, copyObs, ObsGather } from "./obs.js";
import { type LoaderOptions, type LoaderSettings, type LoaderState, settingsOf } from "./options.js";
import type { EpochPlan } from "./plan.js";
import { BatchRing, checkRingSlots, type SharedBatches, sharedBatchesLayout } from "./ring.js";
import { EpochSchedule, type LaneRun, type ScheduledBatch } from "./schedule.js";
import { SlotAssembler, slotsApply } from "./slots.js";

/** What an epoch holds for this rank, known before reading any tile. */
export interface EpochSummary {
  epoch: number;
  rank: number;
  worldSize: number;
  batches: number;
  /** Cells of the dataset this rank yields in the epoch, padding excluded. */
  cells: number;
  /** The cells repeated as padding (at the end of the last batch). */
  padded: Float64Array;
  /** The cells of this rank's share that are not yielded (`dropLast`). */
  dropped: Float64Array;
  /** Elastic order: the epoch's global batch sequence and the part of it this rank yields. */
  elastic?: ElasticSummary;
}

/** Where a rank's batches sit in the epoch's global batch sequence (elastic order). */
export interface ElasticSummary {
  lanes: number;
  /** Global batches in the epoch: `lanes` times the batches of a lane. */
  globalBatches: number;
  /** Global batches consumed before this run of the epoch (a resume's `globalBatchesConsumed`). */
  startGlobalBatch: number;
  /**
   * The global batch of this rank's first batch: its batches are global batches `first`,
   * `first + worldSize`, ...; those at or past `globalBatches` are padding, repeating global
   * batch `g - lanes`.
   */
  firstGlobalBatch: number;
  /** The step of the first batch this rank yields (`index` of its first batch). */
  firstBatch: number;
}

/** Bytes the loader accounts for. */
export interface LoaderMemory {
  /** The `memoryCap` option. */
  capBytes: number;
  /**
   * Of which reserved for batch buffers: as many as the loader can hold at once (the prefetched
   * batches, the one being consumed and, on the slot path, those of the two shuffle windows being
   * decoded), sized for the densest tile.
   */
  batchBytes: number;
  /** Tile bytes held now (stored, plus decoded on the copying path). */
  tileBytes: number;
  /** The most tile bytes held at once so far. */
  peakTileBytes: number;
  /** Batch buffer bytes held now (lent to batches not yet released, or kept for the next ones). */
  heldBatchBytes: number;
  /** The most batch buffer bytes held at once so far. */
  peakBatchBytes: number;
  /** The most bytes held at once so far, tiles and batch buffers together. */
  peakBytes: number;
}

/** Shuffled, sharded, resumable batches; see {@link createLoader}. */
export interface Loader<B extends Batch = Batch> extends AsyncIterable<B> {
  readonly batchSize: number;
  readonly rank: number;
  readonly worldSize: number;
  /** Batches every rank yields per epoch. */
  readonly batchesPerEpoch: number;
  /** The output columns (names, source indices, dataset columns). */
  readonly genes: LoaderGenes;
  /** The obs columns attached to batches. */
  readonly obsColumns: readonly string[];
  /** Tiles left out so far (`onUnreadableTile: "skip"`), with the cells they cost. */
  readonly skipped: readonly SkippedTile[];
  readonly memory: LoaderMemory;
  /** The shared batch file (`sharedBatches`): its layout, and which slot holds a batch. */
  readonly sharedBatches: SharedBatches | undefined;
  /** Where the loader is: serialisable; `createLoader(ds, { ...options, resume: state })` continues from it. */
  state(): LoaderState;
  /** Makes the next iteration yield epoch `epoch` from its first batch (as DistributedSampler.set_epoch). */
  setEpoch(epoch: number): void;
  /** The epoch's batch count and padded or dropped cells for this rank, computed without reading tiles. */
  epochSummary(epoch?: number): EpochSummary;
  /** Stops the worker pool the loader started (`threads`); the dataset stays open. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** What a loader is made of, once {@link createLoader} has read the genes and obs and sized it. */
interface LoaderParts {
  /** The dataset given to `createLoader` (its manifest, genes and obs). */
  ds: Dataset;
  /** The same dataset on the decoder that reads the tiles (the loader's own pool with `threads`). */
  tiles: Dataset;
  settings: LoaderSettings;
  map: ColumnMap;
  obs: ObsGather | undefined;
  /** Whether decoders write rows straight into the batches (slots.ts) instead of this thread copying them. */
  slots: boolean;
  buffers: BatchBuffers;
  ledger: MemoryLedger;
  /** The shared batch file's ring, when the batches are made there. */
  ring: BatchRing | undefined;
  /** Tiles fetched or decoding at once, at most. */
  maxInFlight: number;
  /** What `close()` runs (stopping the loader's pool). */
  onClose: () => Promise<void>;
  signal: AbortSignal | undefined;
}

class DatasetLoader implements Loader {
  readonly batchSize: number;
  readonly rank: number;
  readonly worldSize: number;
  readonly batchesPerEpoch: number;
  readonly obsColumns: readonly string[];
  readonly skipped: SkippedTile[] = [];
  private epoch: number;
  private position: number;
  /** Elastic order: the global batches of the current epoch consumed before this loader's run of it. */
  private origin: number;
  private iterating = false;
  private memo: { epoch: number; origin: number; schedule: EpochSchedule } | undefined;
  private readonly recycler: BatchSource;
  private readonly ring: BatchRing | undefined;
  private readonly ds: Dataset;
  private readonly tiles: Dataset;
  private readonly s: LoaderSettings;
  private readonly map: ColumnMap;
  private readonly obs: ObsGather | undefined;
  private readonly slots: boolean;
  private readonly ledger: MemoryLedger;
  private readonly maxInFlight: number;
  private readonly onClose: () => Promise<void>;
  private readonly signal: AbortSignal | undefined;

  constructor(o: LoaderParts) {
    const { settings: s, map, buffers, ledger } = o;
    this.ds = o.ds;
    this.tiles = o.tiles;
    this.s = s;
    this.map = map;
    this.obs = o.obs;
    this.slots = o.slots;
    this.ledger = ledger;
    this.maxInFlight = o.maxInFlight;
    this.onClose = o.onClose;
    this.signal = o.signal;
    this.batchSize = s.batchSize;
    this.rank = s.rank;
    this.worldSize = s.worldSize;
    this.epoch = s.epoch;
    this.position = s.startBatch;
    this.origin = s.startGlobalBatch;
    this.obsColumns = s.obs;
    const full = this.schedule(s.epoch, 0);
    this.batchesPerEpoch = full.batches;
    if (this.origin > full.globalBatches)
      throw new DeltacellsError(
        `loader option startGlobalBatch is ${this.origin} but an epoch has ${full.globalBatches} global batches`,
        {
          tag: "InvalidInput",
          field: "startGlobalBatch",
          expected: `0 .. ${full.globalBatches}`,
          found: this.origin,
        },
      );
    if (this.position > this.batchesPerEpoch)
      throw new DeltacellsError(
        `loader option startBatch is ${this.position} but an epoch has ${this.batchesPerEpoch} batches on each rank`,
        {
          tag: "InvalidInput",
          field: "startBatch",
          expected: `0 .. ${this.batchesPerEpoch}`,
          found: this.position,
        },
      );
    if (this.position === this.schedule(this.epoch, this.origin).batches) this.nextEpoch();
    const shared = o.slots && o.tiles.scatters!.shared;
    this.ring = o.ring;
    this.recycler =
      o.ring ??
      new BatchRecycler(
        () => new BatchArrays(s.batchSize, map.count, s.output, s.values, buffers.nnzHint, shared, ledger),
        buffers.count,
        ledger,
      );
  }

  get sharedBatches(): SharedBatches | undefined {
    return this.ring;
  }

  get genes(): LoaderGenes {
    const { count, sourceIndices, datasetColumns, names } = this.map;
    return { count, sourceIndices, datasetColumns, names };
  }

  get memory(): LoaderMemory {
    const l = this.ledger;
    return {
      capBytes: this.s.memoryCap,
      batchBytes: l.reservedBatches,
      tileBytes: l.tiles,
      peakTileBytes: l.peakTiles,
      heldBatchBytes: l.batches,
      peakBatchBytes: l.peakBatches,
      peakBytes: l.peak,
    };
  }

  /** The epoch's schedule from `origin` on (memoised: `state()` may be called at every batch). */
  private schedule(epoch: number, origin: number): EpochSchedule {
    const m = this.memo;
    if (m?.epoch === epoch && m.origin === origin) return m.schedule;
    const s = this.s;
    const schedule = new EpochSchedule(
      {
        tileCells: this.ds.manifest.tile_cells,
        batchSize: s.batchSize,
        shuffle: s.shuffle,
        seed: s.seed,
        rank: s.rank,
        worldSize: s.worldSize,
        bufferTiles: s.bufferTiles,
        dropLast: s.dropLast,
        order: s.order,
        lanes: s.lanes,
      },
      epoch,
      origin,
    );
    this.memo = { epoch, origin, schedule };
    return schedule;
  }

  private nextEpoch(): void {
    this.epoch++;
    this.position = 0;
    this.origin = 0;
  }

  state(): LoaderState {
    const s = this.s;
    const state: LoaderState = {
      seed: s.seed,
      epoch: this.epoch,
      batchesYielded: this.position,
      batchSize: s.batchSize,
      shuffle: s.shuffle,
      bufferTiles: s.bufferTiles,
      dropLast: s.dropLast,
      rank: s.rank,
      worldSize: s.worldSize,
      nCells: this.ds.nCells,
    };
    if (s.order !== "elastic") return state;
    const sc = this.schedule(this.epoch, this.origin);
    const consumed = this.origin + (this.position - sc.first) * s.worldSize;
    return {
      ...state,
      order: "elastic",
      lanes: s.lanes,
      globalBatchesConsumed: Math.min(sc.globalBatches, consumed),
    };
  }

  setEpoch(epoch: number): void {
    if (!Number.isSafeInteger(epoch) || epoch < 0)
      throw new DeltacellsError(`setEpoch takes an integer >= 0, found ${epoch}`, {
        tag: "InvalidInput",
        field: "epoch",
        expected: ">= 0",
        found: epoch,
      });
    if (this.iterating) throw busy("setEpoch");
    this.epoch = epoch;
    this.position = 0;
    this.origin = 0;
  }

  epochSummary(epoch = this.epoch): EpochSummary {
    const sc = this.schedule(epoch, epoch === this.epoch ? this.origin : 0);
    const { cells, padded, dropped } = sc.cells();
    const summary: EpochSummary = {
      epoch,
      rank: this.rank,
      worldSize: this.worldSize,
      batches: sc.batches,
      cells,
      padded,
      dropped,
    };
    if (this.s.order === "elastic")
      summary.elastic = {
        lanes: this.s.lanes,
        globalBatches: sc.globalBatches,
        startGlobalBatch: sc.origin,
        firstGlobalBatch: sc.origin + this.rank,
        firstBatch: sc.first,
      };
    return summary;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Batch> {
    if (this.iterating) throw busy("a second iteration");
    this.iterating = true;
    const s = this.s;
    const epoch = this.epoch;
    const schedule = this.schedule(epoch, this.origin);
    const start = this.position;
    const runs = schedule.lanesFrom(start);
    const pipes = new Map<number, LanePipe>();
    // Fetches shared out among the lanes (the default order has one: the rank's share).
    const inFlight = Math.max(1, Math.ceil(this.maxInFlight / Math.max(1, runs.length)));
    for (const run of runs) pipes.set(run.lane, this.pipe(schedule.plans[run.lane]!, run, inFlight));
    // Elastic order: a padding batch repeating one this rank yields is a copy of it.
    const copyAt = schedule.paddingSource(start);
    let copy: Promise<Made> | undefined;
    let copyLent = false;
    const pending: Promise<Batch>[] = [];
    // An abort ends a wait for a slot of the shared batch file, which nothing else would.
    const onAbort = () => this.recycler.cancelWaits(this.signal!.reason);
    this.signal?.addEventListener("abort", onAbort);
    let made = start;
    const make = () => {
      const k = made++;
      const entry = schedule.at(k);
      let p: Promise<Batch>;
      if (entry.padding && copy !== undefined) {
        p = copy.then((m) => {
          copyLent = true;
          return this.lend(m, epoch, k, entry);
        });
      } else {
        const pipe = pipes.get(entry.lane)!;
        const done = pipe.chain.then(() => this.assemble(pipe.asm, entry));
        pipe.chain = done.catch(() => {});
        if (k === copyAt) {
          copy = done.then((m) => this.copyOf(m));
          copy.catch(() => {});
        }
        p = done.then((m) => this.lend(m, epoch, k, entry));
      }
      p.catch(() => {}); // observed when its turn comes
      pending.push(p);
    };
    try {
      for (let k = start; k < schedule.batches; k++) {
        this.signal?.throwIfAborted();
        while (made < schedule.batches && pending.length < s.prefetch + 1) make();
        const batch = await pending.shift()!;
        if (this.signal?.aborted) {
          batch.release();
          this.signal.throwIfAborted();
        }
        this.position = k + 1;
        if (this.position === schedule.batches) this.nextEpoch();
        yield batch;
      }
      if (schedule.batches === start) this.nextEpoch();
    } finally {
      // Stopped early (break, error): batches made ahead were never handed out, and the windows
      // they wait for need not be decoded.
      this.signal?.removeEventListener("abort", onAbort);
      for (const pipe of pipes.values()) pipe.feed.stop();
      // A batch waiting for a slot of the shared batch file would wait for good.
      this.recycler.cancelWaits();
      for (const r of await Promise.allSettled(pending)) if (r.status === "fulfilled") r.value.release();
      if (copy !== undefined && !copyLent) {
        const [r] = await Promise.allSettled([copy]);
        if (r!.status === "fulfilled") this.recycler.release(r!.value.arrays);
      }
      for (const pipe of pipes.values()) {
        await pipe.chain;
        await pipe.asm.finish();
        await pipe.feed.close();
      }
      this.iterating = false;
    }
  }

  /** The feed and assembler making one lane's batches `[run.from, run.to)`. */
  private pipe(plan: EpochPlan, run: LaneRun, maxInFlight: number): LanePipe {
    const s = this.s;
    const windows = plan.windowsFor(run.from, run.to);
    const feed = new TileFeed({
      ds: this.tiles,
      plan,
      windows,
      ledger: this.ledger,
      maxInFlight,
      values: s.values,
      columns: decoderColumns(this.map),
      signal: this.signal,
      stored: this.slots,
    });
    const asm = this.slots
      ? new SlotAssembler({
          ds: this.tiles,
          plan,
          feed,
          windows,
          firstPos: plan.batchRange(run.from)[0],
          map: this.map,
          output: s.output,
          obs: this.obs,
          acquire: () => this.recycler.acquire(),
          giveBack: (a) => this.recycler.release(a),
          ahead: lanesPerRank(s) === 1,
        })
      : new Assembler({
          ds: this.ds,
          plan,
          feed,
          map: this.map,
          obs: this.obs,
          sortIndices: s.sortIndices,
          policy: s.onUnreadableTile,
          onSkip: (skip) => this.skipped.push(skip),
        });
    return { feed, asm, chain: Promise.resolve() };
  }

  private async assemble(asm: Assembler | SlotAssembler, entry: ScheduledBatch): Promise<Made> {
    const made = (arrays: BatchArrays, f: Filled): Made => ({
      arrays,
      size: f.size,
      nnz: f.nnz,
      // A padding batch repeats a batch yielded before: every row is a repeat.
      padded: entry.padding ? f.size : f.padded,
      skipped: f.skipped,
      sorted: asm.sorted,
      obs: f.obs?.finish(f.size) ?? {},
    });
    if (asm instanceof SlotAssembler) {
      const { arrays, filled } = await asm.fill(entry.laneBatch);
      return made(arrays, filled);
    }
    const arrays = await this.recycler.acquire();
    try {
      return made(arrays, await asm.fill(entry.laneBatch, arrays));
    } catch (err) {
      this.recycler.release(arrays);
      throw err;
    }
  }

  /** A copy of a made batch, in buffers of its own: the padding batch that repeats it. */
  private async copyOf(m: Made): Promise<Made> {
    const arrays = await this.recycler.acquire();
    arrays.copyFrom(m.arrays, m.size, m.nnz);
    return { ...m, arrays, padded: m.size, obs: copyObs(m.obs) };
  }

  private lend(m: Made, epoch: number, k: number, entry: ScheduledBatch): Batch {
    this.ring?.seal(m.arrays, { epoch, index: k, size: m.size, nnz: m.nnz }, m.obs);
    return lendBatch(
      m.arrays,
      {
        epoch,
        index: k,
        globalIndex: entry.global,
        size: m.size,
        nnz: m.nnz,
        padded: m.padded,
        skipped: m.skipped,
        sortedIndices: m.sorted,
        obs: m.obs,
      },
      (a) => this.recycler.release(a),
    );
  }

  async close(): Promise<void> {
    await this.onClose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** One lane's feed and assembler during an iteration, and the chain its batches are made on, in order. */
interface LanePipe {
  feed: TileFeed;
  asm: Assembler | SlotAssembler;
  chain: Promise<unknown>;
}

/** A batch assembled and not yet lent. */
interface Made {
  arrays: BatchArrays;
  size: number;
  nnz: number;
  padded: number;
  skipped: number;
  sorted: boolean;
  obs: Record<string, BatchObsColumn>;
}

function busy(what: string): DeltacellsError {
  return new DeltacellsError(
    `${what} while the loader is being iterated: finish or break out of the running loop first`,
    { tag: "InvalidInput", found: "iterating" },
  );
}

/** The batch buffers a loader can hold at once: how many, their nonzeros, their bytes. */
interface BatchBuffers {
  count: number;
  nnzHint: number;
  /** All of them (as the ledger counts them: not the obs arrays made for each batch). */
  bytes: number;
  /** Buffers the loader needs free to finish its next batch while its consumer holds the others. */
  minFree: number;
}

/**
 * The batch buffers a loader holds at most at once. Copying path: the `prefetch` batches made
 * ahead, the one being made and the one being consumed. Slot path: a window's tiles are laid out
 * over every batch they fill before any is decoded, and the next window is laid out while this
 * one decodes; while batch j (the last made ahead, window w) is being made, the batches from the
 * one consumed (j - prefetch - 1) to the last one window w + 1 writes into are held: those after
 * j hold the cells of at most two windows from inside batch j, `ceil(2C / B)` more batches.
 */
function batchBuffers(
  ds: Dataset,
  s: LoaderSettings,
  map: ColumnMap,
  slots: boolean,
  categories: readonly string[],
): BatchBuffers {
  // Sized for the densest tile, with room for a batch somewhat denser than that (a buffer that
  // grows is counted as grown; see memory.ts).
  const nnzHint = Math.ceil(1.1 * s.batchSize * densest(ds) * (map.count / ds.nGenes));
  const maxWindow = s.bufferTiles * ds.manifest.tile_cells.reduce((a, b) => Math.max(a, b), 0);
  const lanes = lanesPerRank(s);
  // Elastic order: every lane lays its windows out (one at a time when a rank serves several: no
  // window ahead), and a padding batch may copy a batch.
  const laidOut =
    lanes === 1 ? Math.ceil((2 * maxWindow) / s.batchSize) : lanes * Math.ceil(maxWindow / s.batchSize);
  const elastic = s.order === "elastic" ? 1 : 0;
  const count = s.prefetch + 2 + (slots ? laidOut : 0) + elastic;
  // Free buffers the loader needs to finish its next batch whatever its consumer holds: the slot
  // path lays a window out over every batch it touches before decoding it (each lane its own);
  // with several lanes the batches made ahead may be another lane's, and a padding batch copies
  // one. The copying path fills one batch at a time.
  const window = Math.ceil(maxWindow / s.batchSize) + 1;
  const minFree = slots ? (lanes === 1 ? window : lanes * window + s.prefetch + 1) + elastic : 1 + elastic;
  const shared = s.sharedBatches;
  if (shared !== undefined) {
    const slotCount = shared.slots ?? Math.max(count, minFree + 1);
    const layout = sharedBatchesLayout(
      slotCount,
      s.batchSize,
      BatchArrays.nnzFor(nnzHint),
      s.values,
      minFree,
      categories,
    );
    return { count: slotCount, nnzHint, bytes: layout.bytes, minFree };
  }
  return {
    count,
    nnzHint,
    bytes: count * BatchArrays.bytesFor(s.batchSize, map.count, s.output, nnzHint),
    minFree,
  };
}

/** The lanes a rank serves at once: 1 in the default order (its own share), `lanes / worldSize` in the elastic one. */
function lanesPerRank(s: LoaderSettings): number {
  return s.lanes / s.worldSize;
}

/** The bytes of the `bufferTiles` largest tiles: a shuffle window at most. */
function windowBytes(ds: Dataset, s: LoaderSettings, slots: boolean): number {
  const costs = Array.from({ length: ds.nTiles }, (_, t) => tileCost(ds, t, slots)).sort((a, b) => b - a);
  return costs.slice(0, s.bufferTiles).reduce((a, b) => a + b, 0);
}

/** The largest mean nonzeros per cell over the tiles. */
function densest(ds: Dataset): number {
  let most = 0;
  const m = ds.manifest;
  for (let t = 0; t < ds.nTiles; t++) most = Math.max(most, m.tile_nnz[t]! / Math.max(1, m.tile_cells[t]!));
  return most;
}

/**
 * A loader of `dataset`'s cells in shuffled, sharded, resumable mini-batches: iterate it with
 * `for await`, and `release()` each batch when done with it (its buffers then hold a later
 * batch; a batch not released is garbage-collected and the loader allocates anew).
 *
 *     const ds = await openDataset("s3://bucket/pbmc", { threads: 2 });
 *     const loader = await createLoader(ds, { batchSize: 4096, seed: 1, rank, worldSize, obs: ["cell_type"] });
 *     for (let epoch = 0; epoch < 10; epoch++) {
 *       loader.setEpoch(epoch);
 *       for await (const batch of loader) {
 *         train(batch.indptr, batch.indices, batch.data, batch.obs.cell_type);
 *         batch.release();
 *       }
 *     }
 *
 * Every batch is a deterministic function of (seed, epoch, rank, worldSize, batchSize,
 * bufferTiles, shuffle, dropLast) and the manifest: each rank reads only the tiles of its own
 * share, all ranks yield the same number of batches, and `loader.state()` resumes exactly. With
 * `order: "elastic"` the epoch's global batch sequence depends on `lanes` instead of the world
 * size, and a state resumes at any world size dividing `lanes`. See
 * docs/loader.md for the semantics of shuffling, sharding, padding and memory. Transient storage
 * errors are retried by the store (`withRetries` from `@deltacells/storage`); a tile that stays
 * unreadable stops the epoch with an `UnreadableTile` error, or is skipped and reported.
 */
export async function createLoader(
  dataset: Dataset,
  options: LoaderOptions & { output: "dense" },
): Promise<Loader<DenseBatch>>;
export async function createLoader(
  dataset: Dataset,
  options?: LoaderOptions & { output?: "csr" },
): Promise<Loader<CsrBatch>>;
export async function createLoader(dataset: Dataset, options?: LoaderOptions): Promise<Loader>;
export async function createLoader(dataset: Dataset, options: LoaderOptions = {}): Promise<Loader> {
  const s = settingsOf(dataset, options);
  // The pool's workers start up (a thread each, the codec's modules, zstd) while the genes and
  // obs columns are read, instead of when the first tile is sent.
  let tiles = dataset;
  let onClose = async () => {};
  if (s.threads !== undefined) {
    const pool = poolTileDecoder(s.threads);
    pool.start();
    // The whole dataset, version pin included: a rewrite under the loader is refused, not read.
    tiles = dataset.withDecoder(pool.decoder);
    onClose = pool.close;
  }
  try {
    return await prepareLoader(dataset, tiles, s, options, onClose);
  } catch (err) {
    // Whatever failed (the genes, the obs, the sizing, the options), the pool started above stops.
    await onClose();
    throw err;
  }
}

async function prepareLoader(
  dataset: Dataset,
  tiles: Dataset,
  s: LoaderSettings,
  options: LoaderOptions,
  onClose: () => Promise<void>,
): Promise<Loader> {
  const map = await resolveGenes(dataset, options.genes, s.columnOrder);
  const frame =
    s.obs.length > 0
      ? await dataset.obs(s.obs, { cacheDir: options.obsCacheDir, signal: options.signal })
      : undefined;
  const obs = frame && new ObsGather(frame.columns, s.obsLabels);
  // The category columns' codes go into a shared batch file's slots beside the rows.
  const categories = (frame?.columns ?? []).filter((c) => c.kind === "category").map((c) => c.name);

  // What each path holds at most (tiles and batch buffers); the slot path holds more batch
  // buffers and no decoded tiles: where only the copying path fits the cap, it is taken.
  const needs = (slots: boolean) => {
    const buffers = batchBuffers(dataset, s, map, slots, categories);
    // Elastic order: a rank serves lanes / worldSize lanes, each holding its own window.
    const window = lanesPerRank(s) * windowBytes(dataset, s, slots);
    return { slots, buffers, window, total: window + buffers.bytes };
  };
  // The copying path's needs only when the slot path is not taken (each sorts every tile's cost).
  const slotted = slotsApply(tiles, map, s) ? needs(true) : undefined;
  const copying = slotted && slotted.total <= s.memoryCap ? undefined : needs(false);
  const chosen = copying ?? slotted!;
  if (copying && copying.total > s.memoryCap) {
    // The path that needs least says how much is enough.
    const least = slotted && slotted.total < copying.total ? slotted : copying;
    const { window, buffers } = least;
    const lanes = lanesPerRank(s);
    const windows =
      lanes > 1
        ? `${lanes} shuffle windows of ${s.bufferTiles} tiles (one per lane this rank serves: lanes ${s.lanes} / worldSize ${s.worldSize})`
        : `a shuffle window of ${s.bufferTiles} tiles`;
    throw new DeltacellsError(
      `loader option memoryCap is ${s.memoryCap} bytes but ${windows} can need ${window} bytes and the ${buffers.count} batch buffers the loader holds at once about ${buffers.bytes}: raise memoryCap to at least ${least.total}, or lower bufferTiles, batchSize or prefetch${lanes > 1 ? ", or run on more ranks" : ""}`,
      { tag: "InvalidInput", field: "memoryCap", expected: `>= ${least.total}`, found: s.memoryCap },
    );
  }
  const ledger = new MemoryLedger(s.memoryCap, chosen.buffers.bytes);
  let ring: BatchRing | undefined;
  if (s.sharedBatches !== undefined) {
    const { count, nnzHint, minFree } = chosen.buffers;
    checkRingSlots(count, minFree);
    await loadNativeKernel();
    const layout = sharedBatchesLayout(
      count,
      s.batchSize,
      BatchArrays.nnzFor(nnzHint),
      s.values,
      minFree,
      categories,
    );
    const shared = chosen.slots && tiles.scatters!.shared;
    ring = new BatchRing(s.sharedBatches.fd, layout, map.count, shared, ledger);
  }
  // Tiles fetched or decoding at once: twice the workers `tiles` decodes on (the loader's pool when
  // `threads` is given, else the dataset's decoder).
  const maxInFlight = Math.max(4, 2 * (tiles.threads ?? 1));
  return new DatasetLoader({
    ds: dataset,
    tiles,
    settings: s,
    map,
    obs,
    slots: chosen.slots,
    buffers: chosen.buffers,
    ledger,
    ring,
    maxInFlight,
    onClose,
    signal: options.signal,
  });
}
