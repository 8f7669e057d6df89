/**
 * Reading a dataset's statistics (docs/stats.md) through its own store: the index once, each
 * object when first asked for, checked (size, CRC-32, decoded size) and kept. Browser-safe: the
 * viewer reads them from a bucket.
 */
import { loadZstd } from "../codec/zstd/load.js";
import type { Dataset } from "../dataset/reader.js";
import { DeltacellsError } from "../errors.js";
import {
  checkStatsVersion,
  checkStored,
  parseStatsIndex,
  STATS_INDEX,
  type StatsIndex,
  type StatsObject,
  u32Bytes,
} from "./format.js";

/**
 * Sums of x = ln(1 + 10,000 · count / cell total) over `n` cells, per gene: what a t-test of those
 * cells needs (mean, variance, fraction expressing).
 */
export interface Moments {
  /** Cells summed over. */
  n: number;
  sum: Float64Array;
  sumSq: Float64Array;
  /** Cells with a nonzero count. */
  nnz: ArrayLike<number>;
}

/** The per-gene statistics over every cell, and each gene's total count. */
export interface GeneStats extends Moments {
  counts: Float64Array;
}

/** One categorical column's statistics: per category, its cells' moments. */
export interface ColumnStats {
  name: string;
  /** The vocabulary (the obs schema's, in its order). */
  categories: string[];
  /** Cells per category. */
  cells: Uint32Array;
  /** Cells in no category (missing value). */
  missing: number;
  /** Category `k`'s moments (views into the column's arrays). */
  moments(k: number): Moments;
}

/** A dataset's statistics: {@link openStats}. */
export class DatasetStats {
  private readonly cache = new Map<string, Promise<Uint8Array>>();

  constructor(
    private readonly ds: Dataset,
    /** The statistics' folder inside the dataset (`metadata.stats`). */
    readonly path: string,
    readonly index: StatsIndex,
  ) {}

  /** Whether the per-gene arrays are in the source's gene order (`gene_order.npy` undone) or the dataset's. */
  get geneOrder(): "source" | "dataset" {
    return this.index.gene_order;
  }

  /** The categorical columns with statistics. */
  get columns(): string[] {
    return this.index.columns.map((c) => c.name);
  }

  private object(entry: StatsObject, signal?: AbortSignal): Promise<Uint8Array> {
    let p = this.cache.get(entry.key);
    if (!p) {
      const key = `${this.path}/${entry.key}`;
      const object = `${this.ds.url}/${key}`;
      p = (async () => {
        const [stored, zstd] = await Promise.all([this.ds.store.get(key, { signal }), loadZstd()]);
        checkStored(entry, stored, object);
        const out = new Uint8Array(entry.size);
        let n: number;
        try {
          n = zstd.decompressInto(stored!, out);
        } catch (cause) {
          throw new DeltacellsError(
            `${object} is not a zstd frame of ${entry.size} bytes: the statistics are damaged; compute them again with \`deltacells stats DATASET\``,
            {
              tag: "FormatError",
              object,
              field: "size",
              expected: entry.size,
              cause,
            },
          );
        }
        if (n !== entry.size) {
          throw new DeltacellsError(`${object} decodes to ${n} bytes, stats.json says ${entry.size}`, {
            tag: "FormatError",
            object,
            field: "size",
            expected: entry.size,
            found: n,
          });
        }
        return out;
      })();
      p.catch(() => this.cache.delete(entry.key));
      this.cache.set(entry.key, p);
    }
    return p;
  }

  /** The per-gene sums over every cell (one read). */
  async genes(opts: { signal?: AbortSignal } = {}): Promise<GeneStats> {
    const raw = await this.object(this.index.genes, opts.signal);
    const g = this.ds.nGenes;
    const b = raw.buffer;
    return {
      n: this.ds.nCells,
      sum: new Float64Array(b, 0, g),
      sumSq: new Float64Array(b, 8 * g, g),
      nnz: new Uint32Array(b, 16 * g, g),
      counts: new Float64Array(b, 16 * g + u32Bytes(g), g),
    };
  }

  /** Every cell's total count, in cell order (one read). */
  async cellTotals(opts: { signal?: AbortSignal } = {}): Promise<Float32Array | Float64Array> {
    const raw = await this.object(this.index.cells, opts.signal);
    return this.index.cells.dtype === "float32"
      ? new Float32Array(raw.buffer, 0, this.ds.nCells)
      : new Float64Array(raw.buffer, 0, this.ds.nCells);
  }

  /** Column `name`'s statistics (one read), or undefined when it has none (not categorical, or skipped). */
  async column(name: string, opts: { signal?: AbortSignal } = {}): Promise<ColumnStats | undefined> {
    const entry = this.index.columns.find((c) => c.name === name);
    if (!entry) return undefined;
    const [raw, schema] = await Promise.all([this.object(entry, opts.signal), this.ds.obsSchema(opts)]);
    const vocabulary = schema.columns.find((c) => c.name === name)?.categories;
    if (!vocabulary || vocabulary.length !== entry.categories) {
      const object = `${this.ds.url}/${this.path}/${STATS_INDEX}`;
      throw new DeltacellsError(
        `${object}: column ${JSON.stringify(name)} has ${entry.categories} categories there, ${vocabulary?.length ?? "none"} in the obs schema: compute the statistics again with \`deltacells stats DATASET\``,
        {
          tag: "StaleStats",
          object,
          field: "columns",
          expected: vocabulary?.length,
          found: entry.categories,
        },
      );
    }
    const k = entry.categories;
    const g = this.ds.nGenes;
    const b = raw.buffer;
    const head = u32Bytes(k);
    const cells = new Uint32Array(b, 0, k);
    const sum = new Float64Array(b, head, k * g);
    const sumSq = new Float64Array(b, head + 8 * k * g, k * g);
    const nnz = new Uint32Array(b, head + 16 * k * g, k * g);
    return {
      name,
      categories: vocabulary,
      cells,
      missing: entry.missing,
      moments: (c) => ({
        n: cells[c]!,
        sum: sum.subarray(c * g, (c + 1) * g),
        sumSq: sumSq.subarray(c * g, (c + 1) * g),
        nnz: nnz.subarray(c * g, (c + 1) * g),
      }),
    };
  }
}

/** The relative path `metadata.stats` names, checked; undefined when the dataset has no statistics. */
export function statsPathOf(ds: Dataset): string | undefined {
  const rel = ds.manifest.metadata.stats;
  if (rel === undefined) return undefined;
  if (
    typeof rel !== "string" ||
    !/^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/.test(rel)
  ) {
    throw new DeltacellsError(
      `${ds.url}/manifest.json: metadata.stats must be a relative path inside the dataset (e.g. "stats"), got ${JSON.stringify(rel)}`,
      {
        tag: "InconsistentManifest",
        object: `${ds.url}/manifest.json`,
        field: "metadata.stats",
        expected: "a relative path inside the dataset",
        found: rel,
      },
    );
  }
  return rel;
}

/**
 * The statistics the manifest names (`metadata.stats`), or undefined when it names none: reads and
 * checks the index (one request). Refuses an index of another format or version, damaged, or
 * describing another version of the dataset (`StaleStats`: cells appended, converted again).
 */
export async function openStats(
  ds: Dataset,
  opts: { signal?: AbortSignal } = {},
): Promise<DatasetStats | undefined> {
  const path = statsPathOf(ds);
  if (path === undefined) return undefined;
  const key = `${path}/${STATS_INDEX}`;
  const object = `${ds.url}/${key}`;
  const bytes = await ds.store.get(key, { signal: opts.signal });
  if (bytes === undefined) {
    throw new DeltacellsError(
      `${object} is missing, though the manifest names statistics at ${JSON.stringify(path)}: compute them again with \`deltacells stats DATASET\``,
      { tag: "NotFound", object },
    );
  }
  const index = parseStatsIndex(bytes, object);
  checkStatsVersion(index, ds.manifest, object);
  return new DatasetStats(ds, path, index);
}
