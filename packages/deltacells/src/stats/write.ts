/**
 * `writeStats`: the statistics of a written dataset (docs/stats.md), computed in one decode pass
 * over its tiles (on the dataset's decoder: a pool decodes the next tiles while this thread sums
 * the current one) and written beside it. Memory: the outputs only (per gene 28 bytes, per cell 8,
 * per category and gene 20), never the matrix.
 *
 * Order of writes: the objects (new keys), the index `stats/stats.json`, then the manifest naming
 * `stats` in its metadata, re-read first and refused if it changed meanwhile. A run cut anywhere
 * leaves the dataset valid and its earlier statistics (if any) readable; objects the new index no
 * longer names are deleted last.
 */
import type { Store } from "@deltacells/storage";
import { crc32 } from "../codec/crc32.js";
import { encodeManifest, MANIFEST_KEY, parseManifest } from "../dataset/manifest.js";
import type { Dataset } from "../dataset/reader.js";
import type { Compress } from "../dataset/var-table.js";
import { DeltacellsError } from "../errors.js";
import {
  cellsSize,
  columnSize,
  datasetVersion,
  genesSize,
  hex32,
  MAX_STATS_CATEGORIES,
  STATS_FORMAT,
  STATS_INDEX,
  STATS_PATH,
  STATS_VERSION,
  type StatsColumn,
  type StatsIndex,
  type StatsObject,
  TARGET_SUM,
  u32Bytes,
} from "./format.js";

/** Options of {@link writeStats}. */
export interface WriteStatsOptions {
  /** zstd for the objects (`zstdCompressor(level)` of `@deltacells/core/node`). */
  compress: Compress;
  /** Name the statistics in the manifest's `metadata.stats` once written (default true). */
  nameInManifest?: boolean;
  /** Tiles decoded ahead (as `Dataset.tiles`). */
  prefetch?: number;
  signal?: AbortSignal;
  onProgress?: (tilesDone: number, nTiles: number) => void;
}

/** What {@link writeStats} wrote. */
export interface WriteStatsResult {
  index: StatsIndex;
  /** Bytes of every object written, the index included. */
  bytes: number;
}

/** The sums of one categorical column while the pass runs. */
interface ColumnSums {
  name: string;
  nCategories: number;
  cells: Uint32Array;
  missing: number;
  sum: Float64Array;
  sumSq: Float64Array;
  nnz: Uint32Array;
}

/**
 * Computes the statistics of `ds` and writes them under `stats/` of `store` (the dataset's own
 * store, writable), then names them in its manifest. See the file's comment for the order of writes.
 */
export async function writeStats(
  ds: Dataset,
  store: Store,
  opts: WriteStatsOptions,
): Promise<WriteStatsResult> {
  const nGenes = ds.nGenes;
  const order = await ds.geneOrder();
  // Dataset column j is source column order[j]: every per-gene array is in the source's order.
  const toSource = order ?? Int32Array.from({ length: nGenes }, (_, j) => j);
  const columns: ColumnSums[] = [];
  const skipped: { name: string; reason: string }[] = [];
  if (ds.manifest.has_obs) {
    const schema = await ds.obsSchema({ signal: opts.signal });
    for (const c of schema.columns) {
      if (c.kind !== "category") continue;
      const k = c.categories?.length ?? 0;
      if (k === 0 || k > MAX_STATS_CATEGORIES) {
        skipped.push({
          name: c.name,
          reason: k === 0 ? "no categories" : `${k} categories, above ${MAX_STATS_CATEGORIES}`,
        });
        continue;
      }
      columns.push({
        name: c.name,
        nCategories: k,
        cells: new Uint32Array(k),
        missing: 0,
        sum: new Float64Array(k * nGenes),
        sumSq: new Float64Array(k * nGenes),
        nnz: new Uint32Array(k * nGenes),
      });
    }
  }
  const sum = new Float64Array(nGenes);
  const sumSq = new Float64Array(nGenes);
  const nnz = new Uint32Array(nGenes);
  const counts = new Float64Array(nGenes);
  const totals = new Float64Array(ds.nCells);
  const names = columns.map((c) => c.name);
  let done = 0;
  const tiles = ds.tiles({
    ...(opts.prefetch !== undefined && { prefetch: opts.prefetch }),
    signal: opts.signal,
  });
  for await (const { index, cellStart, tile } of tiles) {
    // The tile's codes of every column: its shard's footer (cached) and one chunk per column.
    const codes = names.length
      ? await ds.obsTile(index, names, { signal: opts.signal })
      : ({} as Record<string, never>);
    const tileCodes = columns.map((c) => codes[c.name]!.toArray() as ArrayLike<number>);
    const { indptr, indices, data } = tile;
    for (let r = 0; r < tile.nCells; r++) {
      const lo = indptr[r]!;
      const hi = indptr[r + 1]!;
      let total = 0;
      for (let k = lo; k < hi; k++) total += data[k]!;
      totals[cellStart + r] = total;
      const scale = total > 0 ? TARGET_SUM / total : 0;
      for (let k = lo; k < hi; k++) {
        const v = data[k]!;
        if (v === 0) continue;
        const g = toSource[indices[k]!]!;
        const x = Math.log1p(v * scale);
        sum[g]! += x;
        sumSq[g]! += x * x;
        nnz[g]!++;
        counts[g]! += v;
      }
      for (let c = 0; c < columns.length; c++) {
        const col = columns[c]!;
        const code = tileCodes[c]![r]!;
        if (code < 0) {
          col.missing++;
          continue;
        }
        col.cells[code]!++;
        const base = code * nGenes;
        for (let k = lo; k < hi; k++) {
          const v = data[k]!;
          if (v === 0) continue;
          const at = base + toSource[indices[k]!]!;
          const x = Math.log1p(v * scale);
          col.sum[at]! += x;
          col.sumSq[at]! += x * x;
          col.nnz[at]!++;
        }
      }
    }
    tile.release();
    opts.onProgress?.(++done, ds.nTiles);
  }

  const written: string[] = [];
  let bytes = 0;
  const put = async (prefix: string, raw: Uint8Array): Promise<StatsObject> => {
    const stored = opts.compress(raw);
    const crc = hex32(crc32(stored));
    const key = `${prefix}-${crc}.bin`;
    await store.set(`${STATS_PATH}/${key}`, stored, { signal: opts.signal });
    written.push(key);
    bytes += stored.length;
    return { key, bytes: stored.length, size: raw.length, crc32: crc };
  };

  const genes = new Uint8Array(genesSize(nGenes));
  let at = 0;
  at = place(genes, at, sum);
  at = place(genes, at, sumSq);
  at = place(genes, at, nnz, u32Bytes(nGenes));
  place(genes, at, counts);
  const genesObject = await put("genes", genes);

  // Counts are integers: float32 holds every total below 2^24 exactly, float64 the rest.
  const dtype = totals.every((v) => Math.fround(v) === v) ? "float32" : "float64";
  const cellBytes = new Uint8Array(cellsSize(ds.nCells, dtype));
  place(cellBytes, 0, dtype === "float32" ? Float32Array.from(totals) : totals);
  const cellsObject = { ...(await put("cells", cellBytes)), dtype } as const;

  const columnObjects: StatsColumn[] = [];
  for (const [i, col] of columns.entries()) {
    const raw = new Uint8Array(columnSize(col.nCategories, nGenes));
    let p = place(raw, 0, col.cells, u32Bytes(col.nCategories));
    p = place(raw, p, col.sum);
    p = place(raw, p, col.sumSq);
    place(raw, p, col.nnz);
    const object = await put(`column${i}`, raw);
    columnObjects.push({ name: col.name, categories: col.nCategories, missing: col.missing, ...object });
  }

  const index: StatsIndex = {
    format: STATS_FORMAT,
    version: STATS_VERSION,
    target_sum: TARGET_SUM,
    gene_order: order ? "source" : "dataset",
    dataset: datasetVersion(ds.manifest),
    genes: genesObject,
    cells: cellsObject,
    columns: columnObjects,
    skipped,
  };
  const indexBytes = new TextEncoder().encode(`${JSON.stringify(index)}\n`);
  await store.set(`${STATS_PATH}/${STATS_INDEX}`, indexBytes, { signal: opts.signal });
  bytes += indexBytes.length;
  if (opts.nameInManifest !== false) await nameStats(ds, store, opts.signal);
  // Earlier statistics' objects, no longer named by the index.
  const keep = new Set([...written, STATS_INDEX].map((k) => `${STATS_PATH}/${k}`));
  for (const key of await store.list(`${STATS_PATH}/`, { signal: opts.signal })) {
    if (!keep.has(key) && /^stats\/[A-Za-z0-9_]+-[0-9a-f]{8}\.bin$/.test(key)) await store.delete(key);
  }
  return { index, bytes };
}

/** Copies `array`'s bytes into `into` at `at` (little-endian hosts: the format's byte order); returns where the next array starts. */
function place(
  into: Uint8Array,
  at: number,
  array: Float64Array | Float32Array | Uint32Array,
  length?: number,
): number {
  into.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), at);
  return at + (length ?? array.byteLength);
}

/**
 * Names the statistics in the manifest (`metadata.stats`), the manifest re-read first: one that
 * changed since `ds` was opened (another conversion, an append) is left alone and refused.
 */
async function nameStats(ds: Dataset, store: Store, signal: AbortSignal | undefined): Promise<void> {
  const object = `${store.url}/${MANIFEST_KEY}`;
  const bytes = await store.get(MANIFEST_KEY, { signal });
  if (bytes === undefined) {
    throw new DeltacellsError(`${object} vanished while the statistics were computed`, {
      tag: "IncompleteDataset",
      object,
    });
  }
  const manifest = parseManifest(bytes, object);
  const now = datasetVersion(manifest);
  const then = datasetVersion(ds.manifest);
  if (JSON.stringify(now) !== JSON.stringify(then)) {
    throw new DeltacellsError(
      `${object} changed while the statistics were computed (another conversion or an append): they describe the earlier version and are not named in it. Run \`deltacells stats DATASET\` again`,
      { tag: "DatasetChanged", object, expected: then, found: now },
    );
  }
  manifest.metadata = { ...manifest.metadata, stats: STATS_PATH };
  await store.set(MANIFEST_KEY, encodeManifest(manifest), { signal });
}
