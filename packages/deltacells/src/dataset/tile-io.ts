/**
 * A dataset's tile I/O: each tile one GET (refused unless its size is the manifest's
 * `tile_bytes`, and, under the version pin, unless it is unchanged since the dataset was opened),
 * decoded by the dataset's decoder and checked against the manifest's cells and nonzeros; or its
 * layout checked and its rows scattered into other arrays (the loader's slot path). {@link Dataset}
 * hands these calls on.
 */
import { isStorageError, type ReadableStore } from "@deltacells/storage";
import { checkColumns, renumberColumns } from "../codec/columns.js";
import type { DecodedTile } from "../codec/decode.js";
import { inspectTile, type TileLayout } from "../codec/layout.js";
import { type LentBytes, ownedTile, type RecycledTile } from "../codec/recycle.js";
import type { ScatterJob } from "../codec/scatter.js";
import { DeltacellsError, isDeltacellsError } from "../errors.js";
import { type DatasetManifest, tileKey } from "./manifest.js";
import { pinned, rethrowChanged } from "./pin.js";

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

/** A tile's stored bytes, held until `done()` (see {@link TileReader.fetchTile}). */
export interface FetchedTile {
  bytes: Uint8Array;
  done(): void;
}

/** Reads, checks and decodes the tiles of one dataset (one version of it: `openedAt`). */
export class TileReader {
  readonly store: ReadableStore;
  readonly manifest: DatasetManifest;
  readonly url: string;
  readonly openedAt: number | undefined;
  readonly nTiles: number;
  readonly nGenes: number;
  private readonly decoder: TileDecoder;

  constructor(parts: {
    store: ReadableStore;
    manifest: DatasetManifest;
    url: string;
    openedAt: number | undefined;
    decoder: TileDecoder;
  }) {
    this.store = parts.store;
    this.manifest = parts.manifest;
    this.url = parts.url;
    this.openedAt = parts.openedAt;
    this.decoder = parts.decoder;
    this.nTiles = parts.manifest.tile_cells.length;
    this.nGenes = parts.manifest.n_genes;
  }

  /** Refuses an index that is none of the manifest's tiles. */
  checkTile(i: number): void {
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

  /**
   * Tile `i`'s bytes for a decode that lets go of them when it resolves: read straight into memory
   * the reader's own decoder lends (shared memory for its pool, so no copy on the way to the
   * workers) when the store can read into the caller's memory (`getInto`: local folders), else
   * {@link tileBytes}. `done()` gives the memory back (the loader holds them until a tile is
   * decoded into its batches: {@link scatterTile}).
   */
  async fetchTile(i: number, signal?: AbortSignal): Promise<FetchedTile> {
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
  async decodeFetched(
    i: number,
    fetched: FetchedTile,
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
}
