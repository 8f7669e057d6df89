/**
 * The dataset writer: two passes over a row-block source. Pass 1 sums each gene's counts; the
 * genes are then ordered by decreasing total (ties in source order), which makes the gaps the tile
 * codec stores small. Pass 2 renumbers each cell's genes, cuts the cells into tiles and encodes
 * them through a pool with a bounded number of tiles in flight, so memory depends on the tile
 * size and the pool, never on the number of cells. `manifest.json` is written last.
 */
import type { WritableStore } from "@deltacells/storage";
import { DEFAULT_LEVEL, DEFAULT_N_CHUNKS, type TileRows } from "../codec/encode.js";
import { DeltacellsError } from "../errors.js";
import { type ObsWriteOptions, prepareObs } from "../obs/prepare.js";
import { DEFAULT_OBS_TILES_PER_FILE } from "../obs/schema.js";
import { type ObsManifestFields, ObsWriter } from "../obs/write.js";
import {
  DATASET_FORMAT,
  DATASET_VERSION,
  type DatasetManifest,
  encodeManifest,
  GENE_ORDER_KEY,
  MANIFEST_KEY,
  tileKey,
  VAR_NAMES_KEY,
  VAR_TABLE_KEY,
} from "./manifest.js";
import { encodeNpyInt32 } from "./npy.js";
import type { DatasetSource, SourceRowBlock } from "./source.js";
import type { Compress } from "./var-table.js";
import { CONVERTER_NAME, CONVERTER_VERSION } from "./version.js";

/** Anything that encodes tiles: the codec's `TilePool`, or `{ encode: encodeTile }`. */
export interface TileEncoder {
  encode(rows: TileRows, opts?: { nChunks?: number; level?: number }): Promise<Uint8Array>;
}

/** Most cells per tile, and the tile size of data with up to ~256 nonzeros per cell. */
export const DEFAULT_TILE_SIZE = 4096;
/** Nonzeros a tile aims at when the writer chooses its size (see {@link autoTileSize}). */
export const TARGET_TILE_NNZ = 1 << 20;

/**
 * The tile size the writer uses unless told one: as many cells (a multiple of 64, 64 .. 4096) as
 * hold about {@link TARGET_TILE_NNZ} nonzeros at the data's mean density. Tiles are uniform (the
 * format requires it), so the size comes from the whole matrix. Why about a million: a decoded
 * tile (8 bytes per nonzero) then fits the caches its consumer reads it from; at 4096 cells of a
 * dense-ish matrix (~2,000 genes per cell, 80 MB decoded) decoding ran at memory bandwidth, ~10%
 * slower in absolute terms and at 0.70x instead of 0.83x of zstd alone (docs/deltacells-format.md);
 * the writer's and a reader's memory per tile in flight stay bounded whatever the density; and an
 * object stays large enough (~1 MB compressed) for object stores to serve efficiently.
 */
export function autoTileSize(nCells: number, nnz: number): number {
  if (nCells <= 0 || nnz <= 0) return DEFAULT_TILE_SIZE;
  const cells = Math.floor(TARGET_TILE_NNZ / (nnz / nCells) / 64) * 64;
  return Math.min(DEFAULT_TILE_SIZE, Math.max(64, cells));
}

/** Where the writer is; `cellsDone` counts cells of the current pass. */
export interface WriteProgress {
  phase: "totals" | "tiles";
  cellsDone: number;
  nCells: number;
  tilesWritten: number;
  bytesWritten: number;
}

export interface WriteDatasetOptions {
  /** Encodes the tiles (a `TilePool` from `createTilePool`, for parallelism). */
  encoder: TileEncoder;
  /** zstd compressor for `var.parquet`. */
  compress: Compress;
  /** Cells per tile (default: {@link autoTileSize} of the data). */
  tileSize?: number;
  /** Chunks per tile (default 8). */
  nChunks?: number;
  /** zstd level of the tiles (default 19). */
  level?: number;
  /** Tiles encoded or being written at once (default 4); bounds memory with the tile size. */
  inFlight?: number;
  /** Cells per row block asked of the source. */
  blockCells?: number;
  signal?: AbortSignal;
  onProgress?: (p: WriteProgress) => void;
  /** The obs sidecar: which columns and embeddings, shard size (default: every column, small embeddings). */
  obs?: ObsWriteOptions;
  /** Extra entries for the manifest's `metadata` (the source and converter are always recorded). */
  metadata?: Record<string, unknown>;
}

/** What was written. */
export interface WriteDatasetResult {
  manifest: DatasetManifest;
  /** Total bytes of every object written (tiles, gene files, manifest). */
  bytes: number;
}

function invalid(
  source: DatasetSource,
  message: string,
  fields: { field?: string; expected?: unknown; found?: unknown } = {},
) {
  return new DeltacellsError(`${source.location}: ${message}`, {
    tag: "InvalidInput",
    object: source.location,
    ...fields,
  });
}

function checkBlock(source: DatasetSource, block: SourceRowBlock, expectedStart: number): void {
  if (block.rowStart !== expectedStart) {
    throw invalid(
      source,
      `row blocks out of order: expected a block starting at cell ${expectedStart}, got ${block.rowStart}`,
      {
        field: "rowStart",
        expected: expectedStart,
        found: block.rowStart,
      },
    );
  }
  if (block.rowStart + block.nRows > source.nCells) {
    throw invalid(
      source,
      `row block ${block.rowStart}+${block.nRows} runs past the ${source.nCells} cells announced`,
    );
  }
}

/** Pass 1: the total count of each gene, checking the source's canonical-CSR promise on the way. */
async function geneTotals(
  source: DatasetSource,
  opts: WriteDatasetOptions,
): Promise<{ totals: Float64Array; nnz: number }> {
  const nGenes = source.nGenes;
  const totals = new Float64Array(nGenes);
  let next = 0;
  let nnz = 0;
  for await (const block of source.rowBlocks({ blockCells: opts.blockCells, signal: opts.signal })) {
    checkBlock(source, block, next);
    const { indptr, indices, data } = block;
    for (let r = 0; r < block.nRows; r++) {
      const lo = indptr[r]!;
      const hi = indptr[r + 1]!;
      nnz += hi - lo;
      let prev = -1;
      for (let k = lo; k < hi; k++) {
        const g = indices[k]!;
        const v = data[k]!;
        if (g <= prev || g >= nGenes || v < 0) {
          const cell = block.rowStart + r;
          const what =
            g >= nGenes || g < 0
              ? `gene index ${g} is outside 0 .. ${nGenes - 1}`
              : v < 0
                ? `count ${v} is negative`
                : "gene indices are not strictly increasing";
          throw invalid(
            source,
            `cell ${cell}, gene ${g}: ${what}; the reader must hand over canonical CSR of raw counts`,
          );
        }
        prev = g;
        totals[g]! += v;
      }
    }
    next += block.nRows;
    opts.onProgress?.({
      phase: "totals",
      cellsDone: next,
      nCells: source.nCells,
      tilesWritten: 0,
      bytesWritten: 0,
    });
  }
  if (next !== source.nCells)
    throw invalid(source, `the source announced ${source.nCells} cells but yielded ${next}`);
  return { totals, nnz };
}

/** Output column j is source column order[j]: decreasing totals, ties in source order. */
export function orderGenesByTotal(totals: Float64Array): Int32Array {
  const order = Int32Array.from({ length: totals.length }, (_, i) => i);
  // Array.prototype.sort is stable; TypedArray#sort with a comparator is too (ES2019+).
  order.sort((a, b) => totals[b]! - totals[a]! || a - b);
  return order;
}

/** Accumulates renumbered, re-sorted rows until a tile is full. */
class TileBuilder {
  indptr: Float64Array;
  indices: Int32Array;
  data: Int32Array;
  nCells = 0;
  nnz = 0;

  constructor(
    readonly tileSize: number,
    capacity: number,
  ) {
    this.indptr = new Float64Array(tileSize + 1);
    this.indices = new Int32Array(Math.max(capacity, 1024));
    this.data = new Int32Array(this.indices.length);
  }

  reserve(extra: number): void {
    const need = this.nnz + extra;
    if (need <= this.indices.length) return;
    const cap = Math.max(need, Math.ceil(this.indices.length * 1.5));
    const indices = new Int32Array(cap);
    indices.set(this.indices.subarray(0, this.nnz));
    const data = new Int32Array(cap);
    data.set(this.data.subarray(0, this.nnz));
    this.indices = indices;
    this.data = data;
  }

  /** The finished tile's rows, in exactly sized arrays the pool may take ownership of. */
  take(nGenes: number): TileRows {
    return {
      nGenes,
      indptr: this.indptr.slice(0, this.nCells + 1),
      indices: this.indices.slice(0, this.nnz),
      data: this.data.slice(0, this.nnz),
    };
  }
}

/**
 * Convert `source` into a deltacells dataset in `store`. An existing manifest is deleted first (the
 * prefix is an incomplete dataset until the new one is written), and tiles left from a previous,
 * larger dataset are deleted at the end.
 */
export async function writeDataset(
  source: DatasetSource,
  store: WritableStore,
  opts: WriteDatasetOptions,
): Promise<WriteDatasetResult> {
  const nChunks = opts.nChunks ?? DEFAULT_N_CHUNKS;
  const level = opts.level ?? DEFAULT_LEVEL;
  const inFlight = Math.max(1, opts.inFlight ?? 4);
  const chosen = opts.tileSize;
  if (chosen !== undefined && (!Number.isSafeInteger(chosen) || chosen < 1))
    throw invalid(source, `tile size must be a positive integer, got ${chosen}`);
  if (!Number.isSafeInteger(nChunks) || nChunks < 1)
    throw invalid(source, `the number of chunks must be a positive integer, got ${nChunks}`);
  const nGenes = source.nGenes;
  const nCells = source.nCells;
  if (!Number.isSafeInteger(nGenes) || nGenes < 1 || nGenes > 2 ** 31)
    throw invalid(source, `deltacells holds 1 .. 2^31 genes, the source has ${nGenes}`);

  // obs is planned before anything is touched: a column the format cannot hold is refused while
  // an earlier dataset at this prefix is still intact.
  const tilesPerFile = opts.obs?.tilesPerFile ?? DEFAULT_OBS_TILES_PER_FILE;
  if (!Number.isSafeInteger(tilesPerFile) || tilesPerFile < 1)
    throw invalid(source, `obs tiles per file must be a positive integer, got ${tilesPerFile}`);
  const obs = await prepareObs(source, opts.obs);
  const obsColumns = obs?.columns;

  await store.delete(MANIFEST_KEY);
  const geneTable = await source.var();
  if (geneTable.index.length !== nGenes) {
    throw invalid(
      source,
      `the gene table has ${geneTable.index.length} rows but the matrix has ${nGenes} genes`,
    );
  }

  const { totals, nnz: sourceNnz } = await geneTotals(source, opts);
  const tileSize = chosen ?? autoTileSize(nCells, sourceNnz);
  const order = orderGenesByTotal(totals);
  const rank = new Int32Array(nGenes);
  for (let j = 0; j < nGenes; j++) rank[order[j]!] = j;

  let bytes = 0;
  const put = async (key: string, value: Uint8Array) => {
    await store.set(key, value, { signal: opts.signal });
    bytes += value.length;
  };
  await put(GENE_ORDER_KEY, encodeNpyInt32(order));
  const names = Array.from(order, (src) => geneTable.index[src]!);
  const badName = names.findIndex((n) => /[\r\n]/.test(n));
  if (badName >= 0)
    throw invalid(
      source,
      `gene name ${JSON.stringify(names[badName])} contains a line break, which var_names.txt cannot hold`,
    );
  await put(VAR_NAMES_KEY, new TextEncoder().encode(names.length ? `${names.join("\n")}\n` : ""));
  // var.parquet is written through apache-arrow: loaded by a writer, not by every page that reads.
  const { encodeVarTable } = await import("./var-table.js");
  await put(VAR_TABLE_KEY, encodeVarTable(geneTable, order, opts.compress));
  const obsWriter =
    obsColumns && new ObsWriter(obsColumns, put, opts.obs?.compress ?? opts.compress, tilesPerFile);

  const tileCells: number[] = [];
  const tileNnz: number[] = [];
  const tileBytes: number[] = [];
  const pending: Promise<void>[] = [];
  let tilesWritten = 0;
  let failure: unknown;

  const submit = (rows: TileRows) => {
    const index = tileCells.length;
    tileCells.push(rows.indptr.length - 1);
    tileNnz.push(rows.indices.length);
    tileBytes.push(0);
    const shard = obsWriter?.addTile(rows.indptr.length - 1);
    if (shard) pending.push(shard.catch((err) => void (failure ??= err)));
    const job = opts.encoder
      .encode(rows, { nChunks, level })
      .then(async (tile) => {
        tileBytes[index] = tile.length;
        await put(tileKey(index), tile);
        tilesWritten++;
      })
      .catch((err) => {
        failure ??= err;
      });
    pending.push(job);
  };

  // Pass 2: renumber, sort each row by its new gene index, cut into tiles.
  const valueAt = new Int32Array(nGenes); // scratch: the count of gene g in the current row
  let builder = new TileBuilder(tileSize, 0);
  let done = 0;
  for await (const block of source.rowBlocks({ blockCells: opts.blockCells, signal: opts.signal })) {
    checkBlock(source, block, done);
    const { indptr, indices, data } = block;
    for (let r = 0; r < block.nRows; r++) {
      const lo = indptr[r]!;
      const hi = indptr[r + 1]!;
      builder.reserve(hi - lo);
      const out = builder.indices;
      const start = builder.nnz;
      let n = start;
      for (let k = lo; k < hi; k++) {
        const v = data[k]!;
        if (v === 0) continue;
        const g = rank[indices[k]!]!;
        valueAt[g] = v;
        out[n++] = g;
      }
      out.subarray(start, n).sort();
      const vals = builder.data;
      for (let k = start; k < n; k++) vals[k] = valueAt[out[k]!]!;
      builder.nnz = n;
      builder.nCells++;
      builder.indptr[builder.nCells] = n;
      if (builder.nCells === tileSize) {
        submit(builder.take(nGenes));
        builder = new TileBuilder(tileSize, Math.ceil(builder.nnz * 1.05));
        while (pending.length >= inFlight) await pending.shift();
        if (failure !== undefined) break;
      }
    }
    if (failure !== undefined) break;
    done += block.nRows;
    opts.onProgress?.({ phase: "tiles", cellsDone: done, nCells, tilesWritten, bytesWritten: bytes });
  }
  if (failure === undefined && builder.nCells > 0) submit(builder.take(nGenes));
  await Promise.all(pending);
  if (failure !== undefined) throw failure;
  if (done !== nCells)
    throw invalid(source, `the source yielded ${done} cells in its second pass, ${nCells} announced`);
  opts.onProgress?.({ phase: "tiles", cellsDone: done, nCells, tilesWritten, bytesWritten: bytes });
  const obsFields: ObsManifestFields | { has_obs: false } = obsWriter
    ? await obsWriter.finish()
    : { has_obs: false };

  const manifest: DatasetManifest = {
    format: DATASET_FORMAT,
    version: DATASET_VERSION,
    n_cells: nCells,
    n_genes: nGenes,
    tile_size: tileSize,
    tile_cells: tileCells,
    tile_nnz: tileNnz,
    tile_bytes: tileBytes,
    n_chunks: nChunks,
    zstd_level: level,
    has_gene_order: true,
    has_var_names: true,
    has_var_table: true,
    ...obsFields,
    metadata: {
      ...opts.metadata,
      source: source.location,
      source_format: source.format,
      matrix_path: source.matrixPath,
      converter: `${CONVERTER_NAME} ${CONVERTER_VERSION}`,
      nnz: tileNnz.reduce((a, b) => a + b, 0),
      // which obs column holds the pandas index and which hold embeddings, so that an export restores them
      ...(obs ? obs.metadata : {}),
    },
  };
  // Tiles of an earlier, larger dataset at this prefix would confuse a listing; drop them.
  for (const key of await store.list("tiles/")) {
    const m = /^tiles\/tile_(\d{6})\.dct$/.exec(key);
    if (m && Number(m[1]) >= tileCells.length) await store.delete(key);
  }
  // Shards of an earlier dataset with more (or any) obs would be taken for ours by a listing.
  const shardCount = "obs_shard_bytes" in obsFields ? obsFields.obs_shard_bytes.length : 0;
  for (const key of await store.list("obs/")) {
    const m = /^obs\/obs_(\d{4,})\.parquet$/.exec(key);
    if ((m && Number(m[1]) >= shardCount) || (!obsWriter && key === "obs/schema.json"))
      await store.delete(key);
  }
  const manifestBytes = encodeManifest(manifest);
  await put(MANIFEST_KEY, manifestBytes);
  return { manifest, bytes };
}
