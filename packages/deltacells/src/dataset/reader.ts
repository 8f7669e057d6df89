/**
 * The dataset reader. Opening reads `manifest.json` only and checks it (see `parseManifest`); each
 * tile is then one GET, checked against `tile_bytes` and, once decoded, against the manifest's
 * cells and nonzeros. The optional gene files are read and checked when first asked for: a
 * reader that streams tiles for training never pays for them, and `validateDataset` checks them all.
 */
import { isStorageError, type ObjectInfo, openStore, type ReadableStore } from "@deltacells/storage";
import type { Vector } from "apache-arrow";
import { checkColumns, permutationFault, renumberColumns } from "../codec/columns.js";
import { copyRange } from "../codec/copy.js";
import type { DecodedTile } from "../codec/decode.js";
import { inspectTile, type TileLayout } from "../codec/layout.js";
import { createLocalDecoder } from "../codec/local-decoder.js";
import { type LentBytes, ownedTile, type RecycledTile } from "../codec/recycle.js";
import type { ScatterJob } from "../codec/scatter.js";
import { DeltacellsError, isDeltacellsError } from "../errors.js";
import { ioTurn } from "../next-task.js";
import { loadArrow } from "../obs/arrow-load.js";
import { ObsFrame } from "../obs/frame.js";
import { memoryLocalizer, type ObsLoadOptions, type ObsLocalizer } from "../obs/localize.js";
import { ObsShards } from "../obs/read.js";
import type { ObsSchema } from "../obs/schema.js";
import {
  type DatasetManifest,
  GENE_ORDER_KEY,
  MANIFEST_KEY,
  parseManifest,
  tileKey,
  VAR_NAMES_KEY,
  VAR_TABLE_KEY,
} from "./manifest.js";
import { decodeNpyInt32 } from "./npy.js";
import { pinned, rethrowChanged } from "./pin.js";
import { poolTileDecoder } from "./pool-decoder.js";
import type { SourceTable } from "./source.js";
import { decodeVarTable } from "./var-table-read.js";

/**
 * A tile the reader lends: valid until `release()`, after which its buffers decode later tiles
 * (see `RecycledTile`). Releasing is optional; it is what makes a loop over tiles allocation-free.
 */
export type DatasetTile = RecycledTile;

/**
 * What decodes tiles: the codec's `decodeTile`, or a `TilePool`'s `decode`. A decoder whose tiles
 * have a `release()` (a `TilePool`) lends them; the reader hands them on as they are.
 */
export interface TileDecoder {
  decode(
    bytes: Uint8Array,
    opts?: { values?: "int32" | "float32"; cells?: [number, number]; object?: string; columns?: Int32Array },
  ): Promise<DecodedTile>;
  /**
   * Whether `decode` applies the `columns` option (the codec's decoders and pools do); when not,
   * the reader renumbers the decoded tile itself.
   */
  readonly renumbers?: boolean;
  /** Number of workers, for a pool: `tiles()` then keeps twice that many tiles decoding ahead. */
  readonly threads?: number;
  /**
   * Decodes a whole tile straight into the rows of other arrays (the codec's decoders and pools;
   * see `scatterTileSync`). The training loader uses it when present, else `decode`.
   */
  scatter?(bytes: Uint8Array, layout: TileLayout, job: ScatterJob): Promise<void>;
  /** Whether `scatter`'s targets must be shared memory (a pool's workers write into them). */
  readonly scatterShared?: boolean;
}

/** Consecutive cells' rows of the matrix in CSR form, as {@link Dataset.cells} returns them; `indptr` starts at 0. */
export interface CellRows {
  nCells: number;
  nGenes: number;
  indptr: Float64Array;
  indices: Int32Array;
  data: Int32Array | Float32Array;
}

export interface ReadOptions {
  /** Decoded counts as int32 (default) or float32 (ready for a tensor). */
  values?: "int32" | "float32";
  signal?: AbortSignal;
}

/** Options of {@link Dataset.tile}. */
export interface TileReadOptions extends ReadOptions {
  /**
   * Renumbers the columns: a nonzero of dataset column j comes out with index `columns[j]` (a
   * permutation of `0 .. nGenes - 1`; keep passing the same array, it is checked and, on a pool,
   * sent to the workers once). Done by the decoder, on its workers when it has some. Each cell's
   * indices then follow the dataset's column order (not increasing unless the map is).
   */
  columns?: Int32Array;
}

export interface OpenDatasetOptions {
  /**
   * Decode on a pool of this many workers (worker_threads, or Web Workers in a browser), started
   * on first use and stopped by `close()`. Default: decode on the calling thread.
   */
  threads?: number;
  /** Decodes tiles instead (e.g. a `TilePool` shared with other work; not closed by `close()`). */
  decoder?: TileDecoder;
  /** Where `obs()` puts columns (default: memory; the Node entry's `openDataset` uses the local cache). */
  obsLocalizer?: ObsLocalizer;
  signal?: AbortSignal;
  /**
   * When `location` is an http(s):// or s3:// URL: retries of a read that failed for a transient
   * reason, and the stall timeout in ms (defaults: `openStore`'s, 3 retries and 15 s).
   */
  retries?: number;
  timeoutMs?: number;
}

/** The network options of {@link OpenDatasetOptions}, for `openStore`. */
export function networkOptions(opts: OpenDatasetOptions): { retries?: number; timeoutMs?: number } {
  return {
    ...(opts.retries === undefined ? {} : { retries: opts.retries }),
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  };
}

/** The store's location for messages. */
function where(store: ReadableStore): string {
  return (store as { url?: string }).url ?? "dataset";
}

/**
 * What a {@link Dataset} is made of: what {@link openDataset} read and chose. A dataset made by hand
 * from a store and a manifest without `openedAt` reads any version of the objects it finds.
 */
export interface DatasetParts {
  store: ReadableStore;
  manifest: DatasetManifest;
  /** When `manifest.json` was read, on the store's clock (`ObjectInfo.readAt`): see {@link Dataset.openedAt}. */
  openedAt?: number | undefined;
  /** Decodes the tiles (default: this thread, into recycled buffers). */
  decoder?: TileDecoder;
  /** Where `obs()` puts columns (default: memory). */
  obsLocalizer?: ObsLocalizer;
  /** What {@link Dataset.close} runs (stopping a pool the dataset started). */
  onClose?: () => Promise<void>;
}

/** An open deltacells dataset. */
export class Dataset {
  readonly store: ReadableStore;
  readonly manifest: DatasetManifest;
  readonly nCells: number;
  readonly nGenes: number;
  readonly nTiles: number;
  /** `limits[i]` is the end (exclusive) of tile i: the cumulative sum of `tile_cells`. */
  readonly limits: Float64Array;
  readonly url: string;
  /**
   * When the manifest was read, on the store's clock (the server's `Date`, or the local clock for a
   * folder), if the store told: an object changed after it belongs to another version of the
   * dataset, and reading it is refused (`DatasetChanged`). See docs/deltacells-dataset.md.
   */
  readonly openedAt: number | undefined;
  private readonly decoder: TileDecoder;
  private readonly obsLocalizer: ObsLocalizer;
  private readonly onClose: () => Promise<void>;
  private geneNamesCache: Promise<string[] | undefined> | undefined;
  private geneOrderCache: Promise<Int32Array | undefined> | undefined;
  private obsShards: ObsShards | undefined;

  constructor(parts: DatasetParts) {
    const { store, manifest } = parts;
    this.store = store;
    this.manifest = manifest;
    this.openedAt = parts.openedAt;
    this.decoder = parts.decoder ?? createLocalDecoder();
    this.obsLocalizer = parts.obsLocalizer ?? memoryLocalizer;
    this.onClose = parts.onClose ?? (async () => {});
    this.url = where(store);
    this.nCells = manifest.n_cells;
    this.nGenes = manifest.n_genes;
    this.nTiles = manifest.tile_cells.length;
    this.limits = new Float64Array(this.nTiles);
    let acc = 0;
    for (let i = 0; i < this.nTiles; i++) {
      acc += manifest.tile_cells[i]!;
      this.limits[i] = acc;
    }
  }

  /**
   * The same dataset, decoding on `decoder`: the same store, manifest, version (`openedAt`: an
   * object rewritten since this handle was opened is refused through the copy as well) and obs
   * localizer. Closing the copy runs `onClose` only (default: nothing), never this handle's.
   */
  withDecoder(decoder: TileDecoder, opts: { onClose?: () => Promise<void> } = {}): Dataset {
    return new Dataset({
      store: this.store,
      manifest: this.manifest,
      openedAt: this.openedAt,
      decoder,
      obsLocalizer: this.obsLocalizer,
      ...(opts.onClose && { onClose: opts.onClose }),
    });
  }

  /** The first cell of tile `i`. */
  tileStart(i: number): number {
    return i === 0 ? 0 : this.limits[i - 1]!;
  }

  /** The tile holding global cell `c` and its row in that tile (binary search over `limits`). */
  locate(c: number): { tile: number; row: number } {
    this.checkCell(c, "cell");
    let lo = 0;
    let hi = this.nTiles - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.limits[mid]! > c) hi = mid;
      else lo = mid + 1;
    }
    return { tile: lo, row: c - this.tileStart(lo) };
  }

  private checkCell(c: number, what: string): void {
    if (!Number.isSafeInteger(c) || c < 0 || c >= this.nCells) {
      throw new DeltacellsError(
        `${what} ${c} is outside the dataset's cells 0 .. ${this.nCells - 1} (${this.url})`,
        { tag: "InvalidInput", object: this.url, expected: `0 .. ${this.nCells - 1}`, found: c },
      );
    }
  }

  private checkTile(i: number): void {
    if (!Number.isSafeInteger(i) || i < 0 || i >= this.nTiles) {
      throw new DeltacellsError(`tile ${i} does not exist: ${this.url} has tiles 0 .. ${this.nTiles - 1}`, {
        tag: "InvalidInput",
        object: this.url,
        found: i,
      });
    }
  }

  /** The stored bytes of tile `i`: one GET, refused unless its size is `tile_bytes[i]`. */
  async tileBytes(i: number, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    this.checkTile(i);
    const bytes = await this.store
      .get(tileKey(i), { signal: opts.signal, ...this.pinned() })
      .catch((err: unknown) => this.rethrow(err, tileKey(i)));
    if (bytes === undefined) throw this.missing(i);
    if (bytes.length !== this.manifest.tile_bytes[i]!) throw this.wrongSize(i, bytes.length);
    return bytes;
  }

  /** Stops the worker pool that `openDataset(..., { threads })` started; the dataset cannot decode after it. */
  async close(): Promise<void> {
    await this.onClose();
  }

  /** {@link Dataset.close}, for `await using ds = await openDataset(...)`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * Tile `i`'s bytes for a decode that lets go of them when it resolves: read straight into memory
   * the reader's own decoder lends (shared memory for its pool, so no copy on the way to the
   * workers) when the store can read into the caller's memory (`getInto`: local folders), else
   * {@link tileBytes}. `done()` gives the memory back (the loader holds them until a tile is
   * decoded into its batches: {@link scatterTile}).
   */
  async fetchTile(i: number, signal?: AbortSignal): Promise<{ bytes: Uint8Array; done(): void }> {
    const lend = (this.decoder as { lend?: (size: number) => LentBytes }).lend;
    const getInto = this.store.getInto;
    if (lend === undefined || getInto === undefined)
      return { bytes: await this.tileBytes(i, { signal }), done() {} };
    this.checkTile(i);
    const key = tileKey(i);
    const expected = this.manifest.tile_bytes[i]!;
    let lent: LentBytes | undefined;
    let size: number | undefined;
    let bytes: Uint8Array | undefined;
    try {
      bytes = await getInto.call(
        this.store,
        key,
        (n) => {
          size = n;
          // Not one byte for an object of the wrong size: it is refused below.
          if (n !== expected) return new Uint8Array(0);
          lent = lend(n);
          return lent.bytes;
        },
        { signal, ...this.pinned() },
      );
    } catch (err) {
      lent?.release();
      if (size !== undefined && size !== expected && !isStorageError(err, "Changed"))
        throw this.wrongSize(i, size);
      this.rethrow(err, key);
    }
    if (bytes === undefined || bytes.length !== expected) {
      lent?.release();
      throw bytes === undefined ? this.missing(i) : this.wrongSize(i, bytes.length);
    }
    return { bytes, done: () => lent?.release() };
  }

  /** The read option that refuses objects changed since the dataset was opened (when the store can tell). */
  private pinned(): { unchangedSince?: number } {
    return pinned(this.openedAt);
  }

  /** `err` as thrown by a read of `key`; a store's `Changed` becomes `DatasetChanged`, naming the dataset. */
  private rethrow(err: unknown, key: string): never {
    rethrowChanged(err, this.url, key);
  }

  private missing(i: number): DeltacellsError {
    const key = tileKey(i);
    return new DeltacellsError(
      `${this.url}/${key} is missing, although the manifest lists ${this.nTiles} tiles`,
      { tag: "NotFound", object: `${this.url}/${key}` },
    );
  }

  private wrongSize(i: number, found: number): DeltacellsError {
    const key = tileKey(i);
    const expected = this.manifest.tile_bytes[i]!;
    return new DeltacellsError(
      `${this.url}/${key} is ${found} bytes but the manifest says ${expected}: the tile was truncated or replaced`,
      { tag: "CorruptTile", object: `${this.url}/${key}`, field: "tile_bytes", expected, found },
    );
  }

  /**
   * Tile `i` from bytes fetched with {@link tileBytes}: decoded and checked against the manifest, as
   * {@link tile} does. The tile is lent: see {@link DatasetTile}.
   */
  async tileFromBytes(
    i: number,
    bytes: Uint8Array,
    opts: TileReadOptions & { cells?: [number, number] } = {},
  ): Promise<DatasetTile> {
    const object = `${this.url}/${tileKey(i)}`;
    let tile: DatasetTile;
    const { columns } = opts;
    try {
      const decoderColumns = this.decoder.renumbers ? columns : undefined;
      if (columns !== undefined && decoderColumns === undefined) checkColumns(columns, this.nGenes, object);
      const d = await this.decoder.decode(bytes, {
        values: opts.values,
        cells: opts.cells,
        object,
        ...(decoderColumns && { columns: decoderColumns }),
      });
      // A decoder that does not renumber (a caller's own): the tile it returned is renumbered here.
      if (columns !== undefined && decoderColumns === undefined && d.nGenes === this.nGenes)
        renumberColumns(d.indices, 0, d.nnz, columns);
      tile = typeof (d as Partial<RecycledTile>).release === "function" ? (d as RecycledTile) : ownedTile(d);
    } catch (err) {
      if (isDeltacellsError(err)) throw err;
      throw new DeltacellsError(`${object} could not be decoded: ${(err as Error).message}`, {
        tag: "CorruptTile",
        object,
        cause: err,
      });
    }
    const expectCells = opts.cells ? opts.cells[1] - opts.cells[0] : this.manifest.tile_cells[i]!;
    const mismatch = (field: string, expected: number, found: number) =>
      new DeltacellsError(`${object} holds ${found} ${field} but the manifest says ${expected}`, {
        tag: "InconsistentManifest",
        object,
        field,
        expected,
        found,
      });
    let fault: DeltacellsError | undefined;
    if (tile.nCells !== expectCells) fault = mismatch("cells", expectCells, tile.nCells);
    else if (tile.nGenes !== this.nGenes) fault = mismatch("genes", this.nGenes, tile.nGenes);
    else if (!opts.cells && tile.nnz !== this.manifest.tile_nnz[i]!)
      fault = mismatch("nonzeros", this.manifest.tile_nnz[i]!, tile.nnz);
    if (fault) {
      tile.release();
      throw fault;
    }
    return tile;
  }

  /** Tile `i`, decoded: one GET. The tile is lent: `release()` it when done (see {@link DatasetTile}). */
  async tile(i: number, opts: TileReadOptions = {}): Promise<DatasetTile> {
    return this.decodeFetched(i, await this.fetchTile(i, opts.signal), opts);
  }

  /** Tile `i` decoded from its fetched bytes, which are given back once decoded (or refused). */
  private async decodeFetched(
    i: number,
    fetched: { bytes: Uint8Array; done(): void },
    opts: TileReadOptions & { cells?: [number, number] },
  ): Promise<DatasetTile> {
    try {
      return await this.tileFromBytes(i, fetched.bytes, opts);
    } finally {
      fetched.done();
    }
  }

  /** The workers of the pool this dataset decodes on (`threads`, or a pool's `decoder`); undefined on the calling thread. */
  get threads(): number | undefined {
    return this.decoder.threads;
  }

  /** Whether {@link scatterTile} works here, and whether its targets must be shared memory. */
  get scatters(): { shared: boolean } | undefined {
    return this.decoder.scatter === undefined ? undefined : { shared: this.decoder.scatterShared === true };
  }

  /**
   * The checked layout of tile `i` from its stored bytes (header, chunk table and indptr: every
   * row's length, before anything is decompressed), with the same manifest checks as {@link tile}.
   */
  tileLayout(i: number, bytes: Uint8Array): TileLayout {
    const object = `${this.url}/${tileKey(i)}`;
    let layout: TileLayout;
    try {
      layout = inspectTile(bytes, { object, skipCrc: true });
    } catch (err) {
      throw this.asCorrupt(err, object);
    }
    const h = layout.header;
    const check = (field: string, expected: number, found: number) => {
      if (expected !== found)
        throw new DeltacellsError(`${object} holds ${found} ${field} but the manifest says ${expected}`, {
          tag: "InconsistentManifest",
          object,
          field,
          expected,
          found,
        });
    };
    check("cells", this.manifest.tile_cells[i]!, h.nCells);
    check("genes", this.nGenes, h.nGenes);
    check("nonzeros", this.manifest.tile_nnz[i]!, layout.indptr[h.nCells]!);
    return layout;
  }

  /**
   * Decodes tile `i` (its stored bytes and {@link tileLayout}) straight into the rows of other
   * arrays: see `ScatterJob`. Only where {@link scatters} says so.
   */
  async scatterTile(i: number, bytes: Uint8Array, layout: TileLayout, job: ScatterJob): Promise<void> {
    const object = `${this.url}/${tileKey(i)}`;
    if (this.decoder.scatter === undefined)
      throw new DeltacellsError(`this dataset's decoder cannot scatter rows (${object})`, {
        tag: "InvalidInput",
        field: "decoder",
        found: "no scatter",
      });
    try {
      await this.decoder.scatter(bytes, layout, { ...job, object });
    } catch (err) {
      throw this.asCorrupt(err, object);
    }
  }

  private asCorrupt(err: unknown, object: string): unknown {
    if (isDeltacellsError(err)) return err;
    return new DeltacellsError(`${object} could not be decoded: ${(err as Error).message}`, {
      tag: "CorruptTile",
      object,
      cause: err,
    });
  }

  /** Cells `a .. b-1` as CSR, fetching each tile they touch once. */
  async cells(a: number, b: number, opts: ReadOptions = {}): Promise<CellRows> {
    if (!(Number.isSafeInteger(a) && Number.isSafeInteger(b) && 0 <= a && a <= b && b <= this.nCells)) {
      throw new DeltacellsError(`cell range ${a}:${b} is not within 0:${this.nCells} (${this.url})`, {
        tag: "InvalidInput",
        object: this.url,
        expected: `0 <= a <= b <= ${this.nCells}`,
        found: [a, b],
      });
    }
    const float = opts.values === "float32";
    if (a === b) {
      return {
        nCells: 0,
        nGenes: this.nGenes,
        indptr: new Float64Array(1),
        indices: new Int32Array(0),
        data: float ? new Float32Array(0) : new Int32Array(0),
      };
    }
    const first = this.locate(a).tile;
    const last = this.locate(b - 1).tile;
    const parts = await Promise.all(
      Array.from({ length: last - first + 1 }, async (_, k) => {
        const t = first + k;
        const start = this.tileStart(t);
        const lo = Math.max(a, start) - start;
        const hi = Math.min(b, this.limits[t]!) - start;
        const whole = lo === 0 && hi === this.manifest.tile_cells[t];
        return this.decodeFetched(
          t,
          await this.fetchTile(t, opts.signal),
          whole ? opts : { ...opts, cells: [lo, hi] },
        );
      }),
    );
    // The decoded tiles are lent: the answer is a copy the caller keeps.
    try {
      return concatRows(parts, this.nGenes, float);
    } finally {
      for (const p of parts) p.release();
    }
  }

  /** One cell's genes (output column order) and counts. */
  async cell(
    c: number,
    opts: ReadOptions = {},
  ): Promise<{ indices: Int32Array; data: Int32Array | Float32Array }> {
    this.checkCell(c, "cell");
    const rows = await this.cells(c, c + 1, opts);
    return { indices: rows.indices, data: rows.data };
  }

  /**
   * The tiles in order, each with its first cell; the next tiles' GETs and decodes start while the
   * caller works on the current one (`prefetch` tiles decoded ahead: default 0 on this thread, where
   * decoding ahead would only trade the buffer just released for a cold one; twice the workers on
   * a pool, so that each worker has a whole tile queued and no tile is split for want of work;
   * GETs run 6 tiles further ahead, none with `prefetch: 0`). Leaving the loop (break,
   * throw, or `signal` aborted, which stops it at the next tile) gives back what was read or
   * decoded ahead. Each tile is lent: `release()` it once done with it (or `using tile = ...`) and
   * the loop runs without allocating; a tile kept unreleased stays valid (see {@link DatasetTile}).
   *
   *     for await (const { cellStart, tile } of ds.tiles()) {
   *       train(cellStart, tile.indptr, tile.indices, tile.data);
   *       tile.release();
   *     }
   */
  async *tiles(
    opts: ReadOptions & { start?: number; end?: number; prefetch?: number } = {},
  ): AsyncGenerator<{ index: number; cellStart: number; tile: DatasetTile }> {
    const start = opts.start ?? 0;
    const end = opts.end ?? this.nTiles;
    // On this thread a tile decoded ahead only helps a caller that awaits something else between
    // tiles, and it costs every caller a second output buffer: the decode then writes into one
    // gone cold instead of the one just released (0.7 -> 0.8x of decodeTileSync's speed with
    // one reused output, bench/RESULTS.md). So by default only the reads run ahead here.
    const ahead = Math.max(0, opts.prefetch ?? 2 * (this.decoder.threads ?? 0));
    // GETs run further ahead than decodes: a tile's bytes are small next to its decoded arrays,
    // and a read from a folder takes several event-loop turns (open, fstat, read, stat), which
    // a busy decoding thread hands out only between tiles.
    const readAhead = opts.prefetch !== undefined && opts.prefetch <= 0 ? 0 : ahead + READ_AHEAD;
    // Tiles i, i+1, ... from the current one: each read started, its decode once within `ahead`.
    const slots: {
      read: Promise<{ bytes: Uint8Array; done(): void }>;
      /** The read has settled (its bytes are here, or it failed). */
      readSettled?: boolean;
      tile?: Promise<DatasetTile>;
      settled?: boolean;
    }[] = [];
    let nextRead = start;
    let reading = 0;
    const read = () => {
      const read = this.fetchTile(nextRead++, opts.signal);
      reading++;
      const slot: (typeof slots)[number] = { read };
      // Observed when its turn comes; the handler also avoids an unhandled rejection meanwhile.
      const settled = () => {
        reading--;
        slot.readSettled = true;
      };
      read.then(settled, settled);
      slots.push(slot);
      return slot;
    };
    const decode = (slot: (typeof slots)[number], t: number) => {
      slot.tile = slot.read.then((fetched) => this.decodeFetched(t, fetched, opts));
      const settled = () => void (slot.settled = true);
      slot.tile.then(settled, settled);
    };
    const fill = (i: number) => {
      while (nextRead < end && nextRead - i <= readAhead) read();
      for (let k = 0; k < slots.length && k <= ahead; k++)
        if (slots[k]!.tile === undefined) decode(slots[k]!, i + k);
    };
    // The first tiles one by one, each decode submitted before the next read starts: a read that
    // blocks (a folder's) would otherwise hold back every decode until all the reads ahead were
    // done, leaving the workers idle for ~2.5 ms (11 reads) at the start of each loop. A read
    // that completes at once settles within a few microtasks; one that waits for I/O is not
    // waited for (the next read starts after those few microtasks).
    const fillFirst = async (i: number) => {
      while (nextRead < end && nextRead - i <= ahead) {
        const slot = read();
        decode(slot, nextRead - 1);
        for (let hop = 0; hop < SETTLE_HOPS && !slot.readSettled; hop++) await undefined;
      }
    };
    try {
      for (let i = start; i < end; i++) {
        // Aborted: stop at the next tile, even one already read and decoded.
        opts.signal?.throwIfAborted();
        if (i === start) await fillFirst(i);
        // Reads still under way from earlier tiles: they wait for I/O callbacks (a read that
        // completes at once, a folder's blocking read or memory, has settled by now).
        const waiting = reading;
        fill(i);
        // An event-loop turn while reads are under way and this tile's bytes are here: the reads
        // advance one step (open, fstat, read, stat) per tile even when no tile waits for I/O
        // (awaiting a settled promise, then decoding, never lets the I/O callbacks run). A pool's
        // replies need turns too, so with workers the reads just started count; on this thread
        // a turn for reads that complete without I/O callbacks only costs (~20 us per tile).
        const slot = slots.shift()!;
        const turn = this.decoder.threads ? reading > 0 : waiting > 0;
        if (turn && (slot.settled || slot.readSettled)) await ioTurn();
        const tile = await slot.tile!;
        yield { index: i, cellStart: this.tileStart(i), tile };
      }
    } finally {
      // Stopped early (break, throw): the tiles read or decoded ahead were never handed out.
      for (const slot of slots) {
        if (slot.tile !== undefined)
          slot.tile.then(
            (t) => t.release(),
            () => {},
          );
        else
          slot.read.then(
            (r) => r.done(),
            () => {},
          );
      }
    }
  }

  private async optional(flag: boolean, key: string): Promise<Uint8Array | undefined> {
    if (!flag) return undefined;
    const bytes = await this.store.get(key, this.pinned()).catch((err: unknown) => this.rethrow(err, key));
    if (bytes === undefined) {
      throw new DeltacellsError(
        `${this.url}/${key} is missing although the manifest says it exists (has_* flag set): the dataset is damaged`,
        { tag: "InconsistentManifest", object: `${this.url}/${key}`, field: key },
      );
    }
    return bytes;
  }

  /** Gene names in output column order (`var_names.txt`), or undefined when the dataset has none. */
  geneNames(): Promise<string[] | undefined> {
    this.geneNamesCache ??= (async () => {
      const bytes = await this.optional(this.manifest.has_var_names, VAR_NAMES_KEY);
      if (!bytes) return undefined;
      const text = new TextDecoder().decode(bytes);
      const names = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
      if (names.length !== this.nGenes) {
        throw new DeltacellsError(
          `${this.url}/${VAR_NAMES_KEY} has ${names.length} names but the dataset has ${this.nGenes} genes`,
          {
            tag: "InconsistentManifest",
            object: `${this.url}/${VAR_NAMES_KEY}`,
            expected: this.nGenes,
            found: names.length,
          },
        );
      }
      return names;
    })();
    return this.geneNamesCache;
  }

  /** `geneOrder()[j]` is the source column of output column j, or undefined when not recorded. */
  geneOrder(): Promise<Int32Array | undefined> {
    this.geneOrderCache ??= (async () => {
      const bytes = await this.optional(this.manifest.has_gene_order, GENE_ORDER_KEY);
      if (!bytes) return undefined;
      const object = `${this.url}/${GENE_ORDER_KEY}`;
      const order = decodeNpyInt32(bytes, object);
      const fault = permutationFault(order, this.nGenes);
      if (fault !== undefined) {
        const found =
          "length" in fault ? `${fault.length} entries` : `gene_order[${fault.at}] = ${fault.value}`;
        throw new DeltacellsError(
          `${object} is not a permutation of 0 .. ${this.nGenes - 1}: ${found}; rewrite the dataset`,
          { tag: "InconsistentManifest", object, expected: `a permutation of ${this.nGenes} genes`, found },
        );
      }
      return order;
    })();
    return this.geneOrderCache;
  }

  /** The obs shards' reader (refuses a dataset without obs). */
  private obsReader(): ObsShards {
    this.obsShards ??= new ObsShards({
      store: this.store,
      manifest: this.manifest,
      url: this.url,
      openedAt: this.openedAt,
    });
    return this.obsShards;
  }

  /** `obs/schema.json`: the obs columns, kinds, Arrow types and vocabularies (checked against the fingerprint). */
  obsSchema(opts: { signal?: AbortSignal } = {}): Promise<ObsSchema> {
    return this.obsReader().schema(opts);
  }

  /**
   * The obs columns named (all by default), localized: in Node through the local Arrow cache
   * (`<cache>/<fingerprint>/obs/<column>.arrow`, fetched once per node, then memory-read), in a
   * browser in memory. Each column is an Arrow table with one record batch per tile; categories
   * come as codes plus the vocabulary (`column.labels(codes)`).
   */
  async obs(columns?: string[], opts: ObsLoadOptions = {}): Promise<ObsFrame> {
    const reader = this.obsReader();
    const wanted = await reader.columns(columns, opts);
    return new ObsFrame(await this.obsLocalizer(reader, wanted, opts), this.nCells);
  }

  /**
   * The obs rows of tile `t` for the named columns (all by default), read from the shards without
   * touching other tiles: that shard's footer and one column chunk per column. Category columns
   * come as codes (the vocabulary is in {@link obsSchema}).
   */
  async obsTile(
    t: number,
    columns?: string[],
    opts: { signal?: AbortSignal } = {},
  ): Promise<Record<string, Vector>> {
    this.checkTile(t);
    const reader = this.obsReader();
    const wanted = await reader.columns(columns, opts);
    const [{ makeVector }, data] = await Promise.all([
      loadArrow(),
      Promise.all(wanted.map((c) => reader.readTile(t, c, opts))),
    ]);
    return Object.fromEntries(wanted.map((c, i) => [c.name, makeVector(data[i]!)]));
  }

  /** The raw bytes of `var.parquet` (pandas reads them as the source's gene table), or undefined. */
  varTableBytes(): Promise<Uint8Array | undefined> {
    return this.optional(this.manifest.has_var_table, VAR_TABLE_KEY);
  }

  /** The gene table in output column order (`var.parquet`), or undefined when the dataset has none. */
  async varTable(): Promise<SourceTable | undefined> {
    const bytes = await this.varTableBytes();
    if (!bytes) return undefined;
    const object = `${this.url}/${VAR_TABLE_KEY}`;
    const table = await decodeVarTable(bytes, object);
    if (table.index.length !== this.nGenes) {
      throw new DeltacellsError(
        `${object} has ${table.index.length} rows but the dataset has ${this.nGenes} genes`,
        { tag: "InconsistentManifest", object, expected: this.nGenes, found: table.index.length },
      );
    }
    return table;
  }
}

/**
 * Tiles {@link Dataset.tiles} reads beyond those it decodes ahead: a folder's read takes four
 * steps (open, fstat, read, stat), each advanced once per tile (see `ioTurn`), so fewer than four
 * reads in flight fall behind the decodes and the thread waits for them.
 */
const READ_AHEAD = 6;

/**
 * Microtasks {@link Dataset.tiles} waits at most for a read to settle before it starts the next
 * (a blocking read through `fetchTile` and the storage wrappers settles in fewer).
 */
const SETTLE_HOPS = 16;

/** The parts copied into new arrays (always: the parts are lent tiles, about to be released). */
function concatRows(parts: DecodedTile[], nGenes: number, float: boolean): CellRows {
  let nCells = 0;
  let nnz = 0;
  for (const p of parts) {
    nCells += p.nCells;
    nnz += p.indptr[p.nCells]! - p.indptr[0]!;
  }
  const indptr = new Float64Array(nCells + 1);
  const indices = new Int32Array(nnz);
  const data = float ? new Float32Array(nnz) : new Int32Array(nnz);
  let row = 0;
  let at = 0;
  for (const p of parts) {
    const base = p.indptr[0]!;
    const end = p.indptr[p.nCells]!;
    for (let r = 1; r <= p.nCells; r++) indptr[row + r] = at + p.indptr[r]! - base;
    copyRange(indices, at, p.indices, base, end);
    copyRange(data, at, p.data, base, end);
    row += p.nCells;
    at += end - base;
  }
  return { nCells, nGenes, indptr, indices, data };
}

/**
 * Open the dataset in a store or at an `http(s)://` or `s3://` URL (local paths: `openDataset`
 * from `@deltacells/core/node`). Reads `manifest.json` only. Refuses a prefix without it (an
 * incomplete dataset), an unknown format or version, and a manifest whose counts disagree (see
 * `parseManifest`); the optional gene files are checked when first read.
 */
export async function openDataset(
  location: string | ReadableStore,
  opts: OpenDatasetOptions = {},
): Promise<Dataset> {
  const store = typeof location === "string" ? openStore(location, networkOptions(opts)) : location;
  const url = where(store);
  let info: ObjectInfo = {};
  const bytes = await store.get(MANIFEST_KEY, { signal: opts.signal, onInfo: (i) => (info = i) });
  if (bytes === undefined) {
    throw new DeltacellsError(
      `${url} has no ${MANIFEST_KEY}: either it is not a deltacells dataset or its conversion never finished (the manifest is written last); convert it again`,
      { tag: "IncompleteDataset", object: `${url}/${MANIFEST_KEY}` },
    );
  }
  const manifest = parseManifest(bytes, `${url}/${MANIFEST_KEY}`);
  const parts: DatasetParts = {
    store,
    manifest,
    openedAt: info.readAt,
    ...(opts.obsLocalizer && { obsLocalizer: opts.obsLocalizer }),
  };
  if (opts.threads !== undefined) {
    if (opts.decoder !== undefined) {
      throw new DeltacellsError("openDataset takes either `threads` or `decoder`, not both", {
        tag: "InvalidInput",
        field: "threads",
        expected: "threads or decoder",
        found: "both",
      });
    }
    const { decoder, close } = poolTileDecoder(opts.threads);
    return new Dataset({ ...parts, decoder, onClose: close });
  }
  return new Dataset({ ...parts, ...(opts.decoder && { decoder: opts.decoder }) });
}
