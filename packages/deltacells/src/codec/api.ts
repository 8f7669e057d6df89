/**
 * The codec's public entry points on the calling thread. Async because zstd loads lazily (a
 * WASM module in the browser); once {@link loadZstd} has resolved, the `*Sync` variants serve
 * hot loops without promises.
 */
import { type DecodedTile, type DecodeOptions, decodeTileSync as decodeWith } from "./decode.js";
import { type EncodeOptions, encodeTileSync as encodeWith, type TileRows } from "./encode.js";
import { loadZstd, zstdSync } from "./zstd/load.js";

/** Encodes a window of CSR rows as one tile (zstd level 19 and 8 chunks by default). */
export async function encodeTile(rows: TileRows, opts?: EncodeOptions): Promise<Uint8Array> {
  return encodeWith(rows, await loadZstd(), opts);
}

/** Decodes a tile, or the cell range `opts.cells` of it, checking every rule of the format. */
export async function decodeTile(bytes: Uint8Array, opts?: DecodeOptions): Promise<DecodedTile> {
  return decodeWith(bytes, await loadZstd(), opts);
}

/** {@link encodeTile} without a promise; requires `await loadZstd()` first. */
export function encodeTileSync(rows: TileRows, opts?: EncodeOptions): Uint8Array {
  return encodeWith(rows, zstdSync(), opts);
}

/** {@link decodeTile} without a promise; requires `await loadZstd()` first. */
export function decodeTileSync(bytes: Uint8Array, opts?: DecodeOptions): DecodedTile {
  return decodeWith(bytes, zstdSync(), opts);
}
