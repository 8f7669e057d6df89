/**
 * The dataset writer: two passes over a row-block source. Pass 1 sums each gene's counts; the
 * genes are then ordered by decreasing total (ties in source order), which makes the gaps the tile
 * codec stores small. Pass 2 renumbers each cell's genes, cuts the cells into tiles and encodes
 * them through a pool with a bounded number of tiles in flight, so memory depends on the tile
 * size and the pool, never on the number of cells. `manifest.json` is written last.
 *
 * It is the one-input case of an atlas build (`../atlas/build.ts`): the same scan, plan, task and
 * finalize, so one input and many convert by one code path.
 */
import type { ReadableStore, WritableStore } from "@deltacells/storage";
import { buildAtlas } from "../atlas/build.js";
import type { SecondOutput } from "../atlas/second-output.js";
import type { ObsWriteOptions } from "../obs/prepare.js";
import type { DatasetManifest } from "./manifest.js";
import type { DatasetSource } from "./source.js";
import type { TileEncoder } from "./tiling.js";
import type { Compress } from "./var-table.js";

export { autoTileSize, DEFAULT_TILE_SIZE, TARGET_TILE_NNZ, type TileEncoder } from "./tiling.js";

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
  /** Another writer fed the cells of pass 2 as the tiles are cut from them (see `BuildAtlasOptions.secondOutput`). */
  secondOutput?: SecondOutput;
}

/** What was written. */
export interface WriteDatasetResult {
  manifest: DatasetManifest;
  /** Total bytes of every object of the dataset written (tiles, gene files, obs, manifest). */
  bytes: number;
}

/**
 * Convert `source` into a deltacells dataset in `store`. An existing manifest is deleted first (the
 * prefix is an incomplete dataset until the new one is written), and tiles left from a previous,
 * larger dataset are deleted at the end. The build's own records (`.deltacells-atlas/`) live in
 * `store` while it runs and are removed once the manifest is written.
 */
export async function writeDataset(
  source: DatasetSource,
  store: ReadableStore & WritableStore,
  opts: WriteDatasetOptions,
): Promise<WriteDatasetResult> {
  const opened = { source, release: async () => {} };
  const { manifest, bytes } = await buildAtlas([{ path: source.location, open: async () => opened }], store, {
    ...opts,
    obsCompress: opts.obs?.compress,
    onProgress:
      opts.onProgress &&
      ((p) =>
        opts.onProgress!({
          phase: p.phase,
          cellsDone: p.cellsDone,
          nCells: p.nCells,
          tilesWritten: p.tilesWritten,
          bytesWritten: p.bytesWritten,
        })),
  });
  return { manifest, bytes };
}
export { orderGenesByTotal } from "../atlas/genes.js";
