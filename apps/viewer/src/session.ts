/**
 * One open dataset: the deltacells dataset (manifest, gene names and order, obs) and its sporadik
 * companion (one gene across all cells, or a batch of cells, each in two reads). Everything is
 * read through `@deltacells/core`, `@deltacells/sporadik` and `@deltacells/storage`, and every store
 * goes through the page's meter.
 */
import { type CellRows, companionOf, type Dataset, openDataset } from "@deltacells/core";
import { openArrayReader, type SparseArrayReader } from "@deltacells/sporadik";
import { joinLocation, openStore, parseLocation, type ReadableStore } from "@deltacells/storage";
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
  return openStore(location.replace(/\/+$/, ""), s3) as ReadableStore & { url: string };
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

export class Session {
  /** Without a companion: every cell, read once from the tiles (the whole matrix, in memory). */
  private rows: Promise<CellRows> | undefined;

  private constructor(
    readonly ds: Dataset,
    readonly url: string,
    readonly companion: SparseArrayReader | undefined,
    readonly companionUrl: string | undefined,
    readonly names: string[],
    /** Companion column of output gene j is `columnOf[j]`. */
    readonly columnOf: Int32Array,
    readonly obs: Obs | undefined,
    private readonly maxima: Float64Array | undefined,
  ) {}

  get nCells(): number {
    return this.ds.nCells;
  }

  /** Opens the dataset at `locs.data` and its companion (named in the manifest, or given). */
  static async open(locs: Locations, meter: Meter, signal: AbortSignal): Promise<Session> {
    const store = meter.wrap(open(locs.data, locs));
    const ds = await openDataset(store, { signal });
    const rel = locs.sporadik === undefined ? companionOf(ds) : undefined;
    const companionLoc = locs.sporadik ?? (rel ? joinLocation(locs.data, rel) : undefined);
    const [names, order, obs, companion] = await Promise.all([
      ds.geneNames(),
      ds.geneOrder(),
      openObs(ds, signal),
      companionLoc ? openArrayReader(meter.wrap(open(companionLoc, locs))) : Promise.resolve(undefined),
    ]);
    const geneNames = names ?? Array.from({ length: ds.nGenes }, (_, j) => `gene ${j}`);
    const columnOf = order ?? Int32Array.from({ length: ds.nGenes }, (_, j) => j);
    if (companion && (companion.shape[0] !== ds.nCells || companion.shape[1] !== ds.nGenes)) {
      throw new Error(
        `the sporadik store at ${companionLoc} has shape [${companion.shape.join(", ")}], the dataset [${ds.nCells}, ${ds.nGenes}]: they hold different matrices`,
      );
    }
    let maxima: Float64Array | undefined;
    if (companion?.indexedAxes.includes(1))
      maxima = Float64Array.from(await companion.maxima({ axis: 1 }), Number);
    return new Session(ds, store.url, companion, companionLoc, geneNames, columnOf, obs, maxima);
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

  readObs(names: string[], signal: AbortSignal): Promise<Map<string, ObsValues>> {
    if (!this.obs) throw new Error("this dataset has no obs");
    return this.obs.read(names, signal);
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

  /** The mean count of each gene over `cells` (one batch: two waves), the top `n` first. */
  async topGenes(
    cells: readonly number[],
    n: number,
    signal?: AbortSignal,
  ): Promise<{ name: string; mean: number }[]> {
    const sums = new Float64Array(this.ds.nGenes);
    const nameOfColumn = new Array<string>(this.ds.nGenes);
    if (this.companion) {
      const batch = await this.companion.slicesAt(cells, { axis: 0 });
      for (let k = 0; k < batch.data.length; k++) sums[Number(batch.indices[k])]! += Number(batch.data[k]);
      for (let j = 0; j < this.ds.nGenes; j++) nameOfColumn[this.columnOf[j]!] = this.names[j]!;
    } else {
      const rows = await this.allRows(signal);
      for (const c of cells)
        for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
          sums[rows.indices[k]!]! += Number(rows.data[k]);
      for (let j = 0; j < this.ds.nGenes; j++) nameOfColumn[j] = this.names[j]!;
    }
    const order = Array.from({ length: sums.length }, (_, g) => g)
      .filter((g) => sums[g]! > 0)
      .sort((a, b) => sums[b]! - sums[a]!)
      .slice(0, n);
    return order.map((g) => ({ name: nameOfColumn[g]!, mean: sums[g]! / Math.max(1, cells.length) }));
  }
}
