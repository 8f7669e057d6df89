/**
 * The dataset reader. Opening (open.ts) reads `manifest.json` only and checks it (see
 * `parseManifest`); each tile is then one GET, checked against `tile_bytes` and, once decoded,
 * against the manifest's cells and nonzeros (tile-io.ts). The optional gene files are read and
 * checked when first asked for (gene-files.ts), and obs through its shards (obs-access.ts): a
 * reader that streams tiles for training never pays for them, and `validateDataset` checks them all.
 */
import type { ReadableStore } from "@deltacells/storage";
import type { Vector } from "apache-arrow";
import type { TileLayout } from "../codec/layout.js";
import { createLocalDecoder } from "../codec/local-decoder.js";
import type { ScatterJob } from "../codec/scatter.js";
import { DeltacellsError } from "../errors.js";
import type { ObsFrame } from "../obs/frame.js";
import { memoryLocalizer, type ObsLoadOptions, type ObsLocalizer } from "../obs/localize.js";
import type { ObsSchema } from "../obs/schema.js";
import { type CellRows, readCells } from "./cell-rows.js";
import { GeneFiles } from "./gene-files.js";
import type { DatasetManifest } from "./manifest.js";
import { DatasetObs } from "./obs-access.js";
import type { ColumnTable } from "./source.js";
import {
  type DatasetTile,
  type FetchedTile,
  type ReadOptions,
  type TileDecoder,
  TileReader,
  type TileReadOptions,
} from "./tile-io.js";
import { streamTiles, type TileStreamOptions } from "./tile-stream.js";

/** The store's location for messages. */
export function storeLocation(store: ReadableStore): string {
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
  private readonly obsLocalizer: ObsLocalizer;
  private readonly onClose: () => Promise<void>;
  private readonly reader: TileReader;
  private readonly genes: GeneFiles;
  private readonly obsAccess: DatasetObs;

  constructor(parts: DatasetParts) {
    const { store, manifest } = parts;
    this.store = store;
    this.manifest = manifest;
    this.openedAt = parts.openedAt;
    this.obsLocalizer = parts.obsLocalizer ?? memoryLocalizer;
    this.onClose = parts.onClose ?? (async () => {});
    this.url = storeLocation(store);
    this.nCells = manifest.n_cells;
    this.nGenes = manifest.n_genes;
    this.nTiles = manifest.tile_cells.length;
    this.limits = new Float64Array(this.nTiles);
    let acc = 0;
    for (let i = 0; i < this.nTiles; i++) {
      acc += manifest.tile_cells[i]!;
      this.limits[i] = acc;
    }
    const { url, openedAt } = this;
    const decoder = parts.decoder ?? createLocalDecoder();
    this.reader = new TileReader({ store, manifest, url, openedAt, decoder });
    this.genes = new GeneFiles({ store, manifest, url, openedAt });
    this.obsAccess = new DatasetObs({ store, manifest, url, openedAt, localizer: this.obsLocalizer });
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

  /** The tile holding global cell `c` and the cell's index in that tile (binary search over `limits`). */
  locate(c: number): { tile: number; cell: number } {
    this.checkCell(c, "cell");
    let lo = 0;
    let hi = this.nTiles - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.limits[mid]! > c) hi = mid;
      else lo = mid + 1;
    }
    return { tile: lo, cell: c - this.tileStart(lo) };
  }

  private checkCell(c: number, what: string): void {
    if (!Number.isSafeInteger(c) || c < 0 || c >= this.nCells) {
      throw new DeltacellsError(
        `${what} ${c} is outside the dataset's cells 0 .. ${this.nCells - 1} (${this.url})`,
        { tag: "InvalidInput", object: this.url, expected: `0 .. ${this.nCells - 1}`, found: c },
      );
    }
  }

  /** Stops the worker pool that `openDataset(..., { threads })` started; the dataset cannot decode after it. */
  async close(): Promise<void> {
    await this.onClose();
  }

  /** {@link Dataset.close}, for `await using ds = await openDataset(...)`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The stored bytes of tile `i`: one GET, refused unless its size is `tile_bytes[i]`. */
  tileBytes(i: number, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    return this.reader.tileBytes(i, opts);
  }

  /**
   * Tile `i`'s bytes for a decode that lets go of them when it resolves: read straight into memory
   * the reader's own decoder lends (shared memory for its pool, so no copy on the way to the
   * workers) when the store can read into the caller's memory (`getInto`: local folders), else
   * {@link tileBytes}. `done()` gives the memory back (the loader holds them until a tile is
   * decoded into its batches: {@link scatterTile}).
   */
  fetchTile(i: number, signal?: AbortSignal): Promise<FetchedTile> {
    return this.reader.fetchTile(i, signal);
  }

  /**
   * Tile `i` from bytes fetched with {@link tileBytes}: decoded and checked against the manifest, as
   * {@link tile} does. The tile is lent: see {@link DatasetTile}.
   */
  tileFromBytes(
    i: number,
    bytes: Uint8Array,
    opts: TileReadOptions & { cells?: [number, number] } = {},
  ): Promise<DatasetTile> {
    return this.reader.tileFromBytes(i, bytes, opts);
  }

  /** Tile `i`, decoded: one GET. The tile is lent: `release()` it when done (see {@link DatasetTile}). */
  tile(i: number, opts: TileReadOptions = {}): Promise<DatasetTile> {
    return this.reader.tile(i, opts);
  }

  /** The workers of the pool this dataset decodes on (`threads`, or a pool's `decoder`); undefined on the calling thread. */
  get threads(): number | undefined {
    return this.reader.threads;
  }

  /** Whether {@link scatterTile} works here, and whether its targets must be shared memory. */
  get scatters(): { shared: boolean } | undefined {
    return this.reader.scatters;
  }

  /**
   * The checked layout of tile `i` from its stored bytes (header, chunk table and indptr: every
   * row's length, before anything is decompressed), with the same manifest checks as {@link tile}.
   */
  tileLayout(i: number, bytes: Uint8Array): TileLayout {
    return this.reader.tileLayout(i, bytes);
  }

  /**
   * Decodes tile `i` (its stored bytes and {@link tileLayout}) straight into the rows of other
   * arrays: see `ScatterJob`. Only where {@link scatters} says so.
   */
  scatterTile(i: number, bytes: Uint8Array, layout: TileLayout, job: ScatterJob): Promise<void> {
    return this.reader.scatterTile(i, bytes, layout, job);
  }

  /** Cells `a .. b-1` as CSR, fetching each tile they touch once. */
  cells(a: number, b: number, opts: ReadOptions = {}): Promise<CellRows> {
    return readCells(this, this.reader, a, b, opts);
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
  tiles(
    opts: TileStreamOptions = {},
  ): AsyncGenerator<{ index: number; cellStart: number; tile: DatasetTile }> {
    return streamTiles(this.reader, (i) => this.tileStart(i), opts);
  }

  /** Gene names in output column order (`var_names.txt`), or undefined when the dataset has none. */
  geneNames(): Promise<string[] | undefined> {
    return this.genes.geneNames();
  }

  /** `geneOrder()[j]` is the source column of output column j, or undefined when not recorded. */
  geneOrder(): Promise<Int32Array | undefined> {
    return this.genes.geneOrder();
  }

  /** The raw bytes of `var.parquet` (pandas reads them as the source's gene table), or undefined. */
  varTableBytes(): Promise<Uint8Array | undefined> {
    return this.genes.varTableBytes();
  }

  /** The gene table in output column order (`var.parquet`), or undefined when the dataset has none. */
  varTable(): Promise<ColumnTable | undefined> {
    return this.genes.varTable();
  }

  /** `obs/schema.json`: the obs columns, kinds, Arrow types and vocabularies (checked against the fingerprint). */
  obsSchema(opts: { signal?: AbortSignal } = {}): Promise<ObsSchema> {
    return this.obsAccess.schema(opts);
  }

  /**
   * The obs columns named (all by default), localized: in Node through the local Arrow cache
   * (`<cache>/<fingerprint>/obs/<column>.arrow`, fetched once per node, then memory-read), in a
   * browser in memory. Each column is an Arrow table with one record batch per tile; categories
   * come as codes plus the vocabulary (`column.labels(codes)`).
   */
  obs(columns?: string[], opts: ObsLoadOptions = {}): Promise<ObsFrame> {
    return this.obsAccess.frame(columns, opts);
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
    this.reader.checkTile(t);
    return this.obsAccess.tile(t, columns, opts);
  }
}
