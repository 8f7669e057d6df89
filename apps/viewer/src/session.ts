/**
 * One open dataset: the deltacells dataset (manifest, gene names and order, obs) and its sporadik
 * companion (one gene across all cells, or a batch of cells, each in two reads). Everything is
 * read through `@deltacells/core`, `@deltacells/sporadik` and `@deltacells/storage`, and every store
 * goes through the page's meter.
 */
import {
  addRowMoments,
  type CellRows,
  type ColumnStats,
  companionOf,
  type Dataset,
  type DatasetStats,
  type EmbeddingRows,
  embeddingRowsOf,
  emptyMoments,
  type GeneStats,
  type Moments,
  openDataset,
  openStats,
  TARGET_SUM,
} from "@deltacells/core";
import { openArrayReader, type SparseArrayReader } from "@deltacells/sporadik";
import {
  joinLocation,
  openStore,
  parseLocation,
  type RangeQuery,
  type ReadableStore,
  type StoreOptions,
  withCoalescing,
  withConcurrencyLimit,
} from "@deltacells/storage";
import type { Meter } from "./meter.js";
import { embeddingsOf, type Obs, type ObsValues, openObs } from "./obs.js";

/** Where the data is: the dataset's location, and optionally the companion's (two URLs). */
export interface Locations {
  data: string;
  sporadik?: string;
  /** An S3-compatible endpoint for s3:// URLs (path-style); AWS when absent. */
  endpoint?: string;
  region?: string;
}

/** A page-relative location (`/NAME/`) made absolute against the page's own URL. */
export function absolute(location: string, base: string): string {
  if (parseLocation(location).kind === "url") return location;
  return new URL(location, base).href;
}

function open(location: string, locs: Locations): ReadableStore & { url: string } {
  // The page holds no credentials: s3:// URLs are read unsigned, as public buckets allow.
  const s3 = {
    s3: {
      signRequests: false,
      ...(locs.endpoint || locs.region
        ? { endpoint: locs.endpoint, region: locs.region ?? "us-east-1" }
        : {}),
    },
  };
  const store = openStore(location.replace(/\/+$/, ""), s3) as ReadableStore & { url: string };
  return withConcurrencyLimit(store, MAX_IN_FLIGHT);
}

/**
 * Requests each store of the page (the dataset's, the companion's) has in flight at most. A
 * dataset of millions of cells reads its obs columns as thousands of ranges at once, which
 * Chromium refuses past a few thousand pending requests (`net::ERR_INSUFFICIENT_RESOURCES`); it
 * opens six connections per host anyway, so the cap costs no parallelism.
 */
const MAX_IN_FLIGHT = 12;

/**
 * How whole obs columns are read (`withCoalescing`, above the meter: it counts the merged
 * requests). The embedding is two obs columns whose chunks lie side by side in every row group,
 * a few KB of the other columns between one row group's and the next's: read chunk by chunk,
 * 5,000,000 cells were 2,470 ranges (24 s in the page); merged across gaps of up to 16 KiB they
 * are a few reads of 4 MiB. A single column (a category's codes, ~2 KB a row group beside ~30 KB
 * of coordinates) is not merged across the others: its gaps are longer.
 */
const COLUMN_READS = { maxGapBytes: 16 * 1024, maxMergedBytes: 4 * 1024 * 1024 };

/**
 * The dataset's store, its ranges merged only while whole obs columns are read (`merging` > 0).
 * Other reads (a hovered cell's barcode, a tile's obs) go out at once, not a task later: the
 * meter counts a read against the action running when it reaches it, so a read held back past
 * the start of the next action would be counted there.
 */
class ColumnReads implements ReadableStore {
  merging = 0;
  private readonly merged: ReadableStore;
  constructor(private readonly plain: ReadableStore & { readonly url: string }) {
    this.merged = withCoalescing(plain, COLUMN_READS);
  }
  get url(): string {
    return this.plain.url;
  }
  get(key: string, opts?: StoreOptions) {
    return this.plain.get(key, opts);
  }
  getRange(key: string, range: RangeQuery, opts?: StoreOptions) {
    return (this.merging > 0 ? this.merged : this.plain).getRange(key, range, opts);
  }
}

export interface GeneValues {
  name: string;
  /** The column in the companion (the source's gene order). */
  column: number;
  /** Counts for every cell (0 where not stored). */
  values: Float32Array;
  /** Cells with a nonzero count. */
  nonzero: number;
  /** The stored maximum of the gene (the colour scale's top). */
  max: number;
  /** The stored nonzero values, in cell order. */
  stored: Float32Array;
}

/** Where a selection's rows were read: the rows in embedding order, the companion's, or the tiles. */
export type SelectionSource = "rows in embedding order" | "companion" | "tiles";

export class Session {
  /** Without a companion: every cell, read once from the tiles (the whole matrix, in memory). */
  private rows: Promise<CellRows> | undefined;

  private constructor(
    private readonly store: ColumnReads,
    readonly ds: Dataset,
    readonly url: string,
    readonly companion: SparseArrayReader | undefined,
    readonly companionUrl: string | undefined,
    readonly names: string[],
    /** Companion column of output gene j is `columnOf[j]`. */
    readonly columnOf: Int32Array,
    readonly obs: Obs | undefined,
    private readonly maxima: Float64Array | undefined,
    /** The dataset's statistics (docs/stats.md), when it has usable ones. */
    readonly stats: DatasetStats | undefined,
    /** Why there are none: a sentence for the page (none written, or of another version). */
    readonly statsProblem: string | undefined,
    /** The companion's rows in embedding order (`convert --sporadik`), with what the manifest says of them. */
    private readonly embeddingRows: { reader: SparseArrayReader; named: EmbeddingRows } | undefined,
    /** Why the rows in embedding order are named but not used, when they are. */
    public rowsProblem: string | undefined,
  ) {
    this.nameOfColumn = new Array<string>(names.length);
    for (let j = 0; j < names.length; j++) this.nameOfColumn[columnOf[j]!] = names[j]!;
  }

  /** Gene names by companion (and statistics) column: the source's order. */
  readonly nameOfColumn: string[];
  private totals: Promise<Float32Array | Float64Array> | undefined;
  private readonly columnStatsCache = new Map<string, Promise<ColumnStats | undefined>>();

  get nCells(): number {
    return this.ds.nCells;
  }

  /**
   * Row of each cell in the store of rows in embedding order, once computed from the drawn
   * embedding; undefined when the page has no such store or the embedding drawn is another.
   */
  private rowOfCell: Uint32Array | undefined;
  /** How long computing the embedding order took in the page (ms). */
  rowsOrderMs: number | undefined;

  /** Opens the dataset at `locs.data` and its companion (named in the manifest, or given). */
  static async open(locs: Locations, meter: Meter, signal: AbortSignal): Promise<Session> {
    const store = new ColumnReads(meter.wrap(open(locs.data, locs)));
    const ds = await openDataset(store, { signal });
    const rel = locs.sporadik === undefined ? companionOf(ds) : undefined;
    const companionLoc = locs.sporadik ?? (rel ? joinLocation(locs.data, rel) : undefined);
    const namedRows = companionLoc ? embeddingRowsOf(ds) : undefined;
    const [names, order, obs, companion, rowsReader] = await Promise.all([
      ds.geneNames(),
      ds.geneOrder(),
      openObs(ds, signal),
      companionLoc ? openArrayReader(meter.wrap(open(companionLoc, locs))) : Promise.resolve(undefined),
      namedRows
        ? openArrayReader(meter.wrap(open(joinLocation(locs.data, namedRows.path), locs)))
        : Promise.resolve(undefined),
    ]);
    const geneNames = names ?? Array.from({ length: ds.nGenes }, (_, j) => `gene ${j}`);
    const columnOf = order ?? Int32Array.from({ length: ds.nGenes }, (_, j) => j);
    if (companion && (companion.shape[0] !== ds.nCells || companion.shape[1] !== ds.nGenes)) {
      throw new Error(
        `the sporadik store at ${companionLoc} has shape [${companion.shape.join(", ")}], the dataset [${ds.nCells}, ${ds.nGenes}]: they hold different matrices`,
      );
    }
    let maxima: Float64Array | undefined;
    let stats: DatasetStats | undefined;
    let statsProblem: string | undefined;
    const [max] = await Promise.all([
      companion?.indexedAxes.includes(1) ? companion.maxima({ axis: 1 }) : undefined,
      openStats(ds, { signal }).then(
        (s) => {
          stats = s;
          if (!s)
            statsProblem =
              "this dataset has no statistics: marker genes and dot plots need them (`deltacells stats DATASET` writes them; `convert --sporadik` does at its end)";
        },
        (err: unknown) => {
          // Statistics of another version, or damaged: the page works without them and says why.
          if (signal.aborted) throw err;
          statsProblem = `the dataset's statistics cannot be used: ${(err as Error).message}`;
        },
      ),
    ]);
    if (max) maxima = Float64Array.from(max, Number);
    // Rows of another version of the dataset (cells appended since): not used, and said why.
    const staleRows =
      rowsReader && (rowsReader.shape[0] !== ds.nCells || rowsReader.shape[1] !== ds.nGenes)
        ? `the rows in embedding order at ${namedRows!.path} have shape [${rowsReader.shape.join(", ")}], the dataset [${ds.nCells}, ${ds.nGenes}] (convert again with --sporadik-rows): selections read the companion`
        : undefined;
    if (stats?.geneOrder === "dataset" && order) {
      // Per-gene arrays in the dataset's order while the companion's are the source's: refuse.
      statsProblem =
        "the dataset's statistics are in its own gene order, its companion in the source's: run `deltacells stats DATASET` again";
      stats = undefined;
    }
    return new Session(
      store,
      ds,
      store.url,
      companion,
      companionLoc,
      geneNames,
      columnOf,
      obs,
      maxima,
      stats,
      statsProblem,
      rowsReader && namedRows && !staleRows ? { reader: rowsReader, named: namedRows } : undefined,
      staleRows,
    );
  }

  /**
   * The embedding drawn, as its obs columns hold it (before any flip; moved to a worker, so not
   * used after): when the store of rows in embedding order is ordered by it, each cell's row
   * there is computed from it once, on a worker, and its order checked against the digest the
   * writer recorded. Resolves when done (or at once when there is nothing to compute).
   */
  async useEmbedding(columns: [string, string], x: Float32Array, y: Float32Array): Promise<void> {
    const rows = this.embeddingRows;
    if (!rows || this.rowOfCell) return;
    if (columns[0] !== rows.named.embedding[0] || columns[1] !== rows.named.embedding[1]) return;
    const worker = new Worker(new URL("./order-worker.ts", import.meta.url), { type: "module" });
    try {
      const answer = await new Promise<{ rows: Uint32Array; digest: string; ms: number }>((ok, fail) => {
        worker.onmessage = (event) => ok(event.data);
        worker.onerror = (event) =>
          fail(new Error(`the embedding order could not be computed: ${event.message}`));
        worker.postMessage({ x, y }, [x.buffer, y.buffer]);
      });
      if (answer.digest !== rows.named.digest) {
        this.rowsProblem = `the rows in embedding order at ${rows.named.path} were ordered by other coordinates than this dataset's ${columns.join("/")} (convert again with --sporadik-rows): selections read the companion`;
        return;
      }
      this.rowOfCell = answer.rows;
      this.rowsOrderMs = answer.ms;
    } finally {
      worker.terminate();
    }
  }

  /** The embedding columns present in obs, best first. */
  embeddings() {
    return this.obs ? embeddingsOf(this.obs.columns) : [];
  }

  /** Obs columns a user can colour by (categorical and numeric, embeddings left out). */
  colourColumns() {
    if (!this.obs) return [];
    const emb = new Set(this.embeddings().flatMap((e) => [e.x, e.y]));
    return this.obs.columns.filter(
      (c) => (c.kind === "category" || c.kind === "numeric") && !emb.has(c.name),
    );
  }

  async readObs(names: string[], signal: AbortSignal): Promise<Map<string, ObsValues>> {
    if (!this.obs) throw new Error("this dataset has no obs");
    this.store.merging++;
    try {
      return await this.obs.read(names, signal);
    } finally {
      this.store.merging--;
    }
  }

  /**
   * Every tile, decoded once and kept: the fallback of a dataset without a companion, which costs
   * the whole dataset (the tiles are built to stream cells, not to answer one gene).
   */
  private allRows(signal: AbortSignal | undefined): Promise<CellRows> {
    this.rows ??= this.ds.cells(0, this.nCells, { signal }).catch((err: unknown) => {
      this.rows = undefined;
      throw err;
    });
    return this.rows;
  }

  /** One gene across all cells from the tiles (no companion): the dataset's own gene order. */
  private async geneFromTiles(j: number, signal?: AbortSignal): Promise<GeneValues> {
    const rows = await this.allRows(signal);
    const dense = new Float32Array(this.nCells);
    const stored: number[] = [];
    let max = 0;
    for (let c = 0; c < this.nCells; c++) {
      for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++) {
        if (rows.indices[k] !== j) continue;
        const v = Number(rows.data[k]);
        dense[c] = v;
        stored.push(v);
        if (v > max) max = v;
      }
    }
    return {
      name: this.names[j]!,
      column: j,
      values: dense,
      nonzero: stored.filter((v) => v !== 0).length,
      max,
      stored: Float32Array.from(stored),
    };
  }

  /** One gene across all cells: two reads of the companion's gene-contiguous layout (or every tile without one). */
  async gene(j: number, signal?: AbortSignal): Promise<GeneValues> {
    const array = this.companion;
    if (!array) return this.geneFromTiles(j, signal);
    const column = this.columnOf[j]!;
    const { positions, values } = await array.sliceAt(column, { axis: 1 });
    const dense = new Float32Array(this.nCells);
    const cells = positions;
    const stored = new Float32Array(values.length);
    let nonzero = 0;
    let seenMax = 0;
    for (let k = 0; k < values.length; k++) {
      const v = Number(values[k]);
      dense[Number(cells[k])] = v;
      stored[k] = v;
      if (v !== 0) nonzero++;
      if (v > seenMax) seenMax = v;
    }
    const max = this.maxima ? this.maxima[column]! : seenMax;
    return { name: this.names[j]!, column, values: dense, nonzero, max, stored };
  }

  /** Every cell's total count (from the statistics: one read, kept), or undefined without them. */
  cellTotals(signal?: AbortSignal): Promise<Float32Array | Float64Array> | undefined {
    if (!this.stats) return undefined;
    this.totals ??= this.stats.cellTotals({ signal }).catch((err: unknown) => {
      this.totals = undefined;
      throw err;
    });
    return this.totals;
  }

  /** The per-gene statistics over every cell (one read, kept by the statistics' reader). */
  geneStats(signal?: AbortSignal): Promise<GeneStats> {
    if (!this.stats) throw new Error(this.statsProblem);
    return this.stats.genes({ signal });
  }

  /** A categorical column's statistics (one read, kept), or undefined when it has none. */
  columnStats(name: string, signal?: AbortSignal): Promise<ColumnStats | undefined> {
    if (!this.stats) return Promise.resolve(undefined);
    let p = this.columnStatsCache.get(name);
    if (!p) {
      p = this.stats.column(name, { signal });
      p.catch(() => this.columnStatsCache.delete(name));
      this.columnStatsCache.set(name, p);
    }
    return p;
  }

  /** The obs index (barcodes): the schema's first column when it holds strings. */
  get indexColumn(): string | undefined {
    const first = this.obs?.columns[0];
    return first?.kind === "string" ? first.name : undefined;
  }

  private readonly obsTiles = new Map<string, Promise<Record<string, { get(i: number): unknown }>>>();

  /**
   * Tile `t`'s obs rows of `columns` (all by default): its shard's footer and one chunk per
   * column; the latest 8 kept.
   */
  private obsTile(t: number, columns: string[] | undefined, signal?: AbortSignal) {
    const key = `${t}:${columns?.join("\u0000") ?? ""}`;
    let p = this.obsTiles.get(key);
    if (!p) {
      p = this.ds.obsTile(t, columns, { signal }) as Promise<Record<string, { get(i: number): unknown }>>;
      p.catch(() => this.obsTiles.delete(key));
      this.obsTiles.set(key, p);
      if (this.obsTiles.size > 8) this.obsTiles.delete(this.obsTiles.keys().next().value!);
    }
    return p;
  }

  /**
   * The obs of `cells` (every column; categories as labels): only the tiles holding them are read,
   * so the cost follows the selection, never the dataset.
   */
  async obsRows(
    cells: readonly number[],
    signal?: AbortSignal,
  ): Promise<{ columns: string[]; rows: (string | number | boolean | null)[][] }> {
    if (!this.obs) return { columns: [], rows: cells.map(() => []) };
    const columns = this.obs.columns;
    const byTile = new Map<number, number[]>();
    for (const c of cells) {
      const { tile } = this.ds.locate(c);
      let list = byTile.get(tile);
      if (!list) byTile.set(tile, (list = []));
      list.push(c);
    }
    const out = new Map<number, (string | number | boolean | null)[]>();
    await Promise.all(
      [...byTile].map(async ([t, list]) => {
        const data = await this.obsTile(t, undefined, signal);
        const start = this.ds.tileStart(t);
        for (const c of list) {
          out.set(
            c,
            columns.map((col) => {
              const v = data[col.name]?.get(c - start);
              if (v === null || v === undefined) return null;
              if (col.kind === "category")
                return (v as number) < 0 ? null : (col.categories?.[v as number] ?? null);
              return typeof v === "bigint" ? Number(v) : (v as string | number | boolean);
            }),
          );
        }
      }),
    );
    return { columns: columns.map((c) => c.name), rows: cells.map((c) => out.get(c)!) };
  }

  /** Cell `cell`'s barcode (the obs index), read with its tile's obs (kept for the next hovers). */
  async barcode(cell: number, signal?: AbortSignal): Promise<string | undefined> {
    const index = this.indexColumn;
    if (!index) return undefined;
    const located = this.ds.locate(cell);
    const v = (await this.obsTile(located.tile, [index], signal))[index]?.get(located.cell);
    return v === null || v === undefined ? undefined : String(v);
  }

  /** The gene at companion column `column`, by the page's (dataset) index. */
  geneOfColumn(column: number): number {
    return this.names.indexOf(this.nameOfColumn[column]!);
  }

  /**
   * What a selection of cells shows, from their rows read as one batch (two waves whatever the
   * number of cells): each gene's mean count over them, the top `n` first, and, with
   * `moments`, their moments of log1p(counts per 10,000) by companion column (for markers).
   */
  async selectionSummary(
    cells: readonly number[],
    n: number,
    signal?: AbortSignal,
  ): Promise<{ top: { name: string; mean: number }[]; moments: Moments; from: SelectionSource }> {
    const sums = new Float64Array(this.ds.nGenes);
    const moments = emptyMoments(this.ds.nGenes);
    let from: SelectionSource = "tiles";
    if (this.companion) {
      // A lasso's cells are a few runs of rows in embedding order, scattered over every chunk of
      // the companion's rows (dataset order): read them there when the page has that order.
      const rowOf = this.rowOfCell;
      const ordered = rowOf && this.embeddingRows;
      performance.mark("selection rows: start");
      const batch = ordered
        ? await ordered.reader.slicesAt(
            cells.map((c) => rowOf[c]!),
            { axis: 0 },
          )
        : await this.companion.slicesAt(cells, { axis: 0 });
      performance.measure("selection: rows read", "selection rows: start");
      from = ordered ? "rows in embedding order" : "companion";
      const rows = {
        indptr: Float64Array.from(batch.indptr as ArrayLike<number | bigint>, Number),
        indices: toNumbers(batch.indices),
        data: toNumbers(batch.data),
      };
      for (let k = 0; k < rows.data.length; k++) sums[rows.indices[k]!]! += rows.data[k]!;
      addRowMoments(moments, rows, cells.length, TARGET_SUM);
      performance.measure("selection: rows' moments", "selection rows: start");
    } else {
      // Without a companion: the rows from the tiles (in the dataset's gene order), renamed.
      const all = await this.allRows(signal);
      const indptr = new Float64Array(cells.length + 1);
      cells.forEach((c, i) => {
        indptr[i + 1] = indptr[i]! + all.indptr[c + 1]! - all.indptr[c]!;
      });
      const indices = new Int32Array(indptr[cells.length]!);
      const data = new Float64Array(indptr[cells.length]!);
      cells.forEach((c, i) => {
        for (let k = all.indptr[c]!, at = indptr[i]!; k < all.indptr[c + 1]!; k++, at++) {
          indices[at] = this.columnOf[all.indices[k]!]!;
          data[at] = Number(all.data[k]);
        }
      });
      for (let k = 0; k < data.length; k++) sums[indices[k]!]! += data[k]!;
      addRowMoments(moments, { indptr, indices, data }, cells.length, TARGET_SUM);
    }
    const order = Array.from({ length: sums.length }, (_, g) => g)
      .filter((g) => sums[g]! > 0)
      .sort((a, b) => sums[b]! - sums[a]!)
      .slice(0, n);
    const top = order.map((g) => ({
      name: this.nameOfColumn[g]!,
      mean: sums[g]! / Math.max(1, cells.length),
    }));
    return { top, moments, from };
  }
}

/** A store's integer or float array as numbers (64-bit integers converted). */
function toNumbers(a: ArrayLike<number | bigint>): ArrayLike<number> {
  return a instanceof BigInt64Array || a instanceof BigUint64Array
    ? Float64Array.from(a, Number)
    : (a as ArrayLike<number>);
}
