/** The deltacells v2 tile codec: see docs/deltacells-format.md. */
export { decodeTile, decodeTileSync, encodeTile, encodeTileSync } from "./api.js";
export type { DecodedTile, DecodeOptions, DecodeOutput } from "./decode.js";
export type { EncodeOptions, TileRows } from "./encode.js";
export { readTileHeader, type TileHeader } from "./format.js";
export { type CodecInfo, codecInfo, formatCodecInfo } from "./info.js";
export { createTilePool, type TilePool } from "./pool/pool.js";
export type { RecycledTile } from "./recycle.js";
export { loadZstd, setZstdBackend } from "./zstd/load.js";
export type { ZstdBackend } from "./zstd/types.js";
