/**
 * How a dataset is cut into tiles: the size the writer chooses (uniform over the dataset, as the
 * format requires) and what encodes them.
 */
import type { TileRows } from "../codec/encode.js";

/**
 * Anything that encodes tiles: the codec's `TilePool`, or `{ encode: encodeTile }`. `rows` are the
 * encoder's until its promise settles: a writer then fills later tiles in their memory.
 */
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
