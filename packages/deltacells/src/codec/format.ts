/**
 * The deltacells v2 tile layout: constants, the 64-byte header and the 96-byte chunk-table
 * entries. Parsing here checks everything that can be checked from the header and table alone;
 * the frames are checked by the decoder.
 */
import { DeltacellsError } from "../errors.js";

/** `DELTACEL` in ASCII. */
export const TILE_MAGIC = new Uint8Array([0x44, 0x45, 0x4c, 0x54, 0x41, 0x43, 0x45, 0x4c]);
export const TILE_VERSION = 2;
export const HEADER_SIZE = 64;
export const CHUNK_ENTRY_SIZE = 96;
/** Stored uint16 value that marks an exception (the true value is in an exception frame). */
export const EXCEPTION_MARK = 65535;
/** Largest count and largest `n_genes` the format allows. */
export const MAX_COUNT = 2 ** 31 - 1;
export const MAX_GENES = 2 ** 31;
/**
 * The most output one zstd byte can stand for: an RLE block is a 3-byte header plus one byte for
 * up to 128 KiB. A frame claiming more than this ratio is corrupt; checking it before allocating
 * keeps a tiny hostile tile from asking for gigabytes.
 */
export const MAX_ZSTD_RATIO = 32768;

/** The 64-byte tile header, parsed. */
export interface TileHeader {
  version: number;
  flags: number;
  nCells: number;
  nnz: number;
  nGenes: number;
  nChunks: number;
  /** Byte offset of the int64 indptr (a multiple of 8, after the chunk table). */
  indptrOff: number;
  /** Size of the whole tile in bytes. */
  totalSize: number;
  /** CRC-32 of bytes `[64, totalSize)`. */
  crc32: number;
  reserved: number;
}

/** One chunk-table entry; lengths of 0 for the exception frames mean "none". */
export interface ChunkEntry {
  cellLo: number;
  cellHi: number;
  nnzLo: number;
  nnzHi: number;
  gapsOff: number;
  gapsLen: number;
  valsOff: number;
  valsLen: number;
  vexcOff: number;
  vexcLen: number;
  gexcOff: number;
  gexcLen: number;
}

export const CHUNK_FIELDS = [
  "cell_lo",
  "cell_hi",
  "nnz_lo",
  "nnz_hi",
  "gaps_off",
  "gaps_len",
  "vals_off",
  "vals_len",
  "vexc_off",
  "vexc_len",
  "gexc_off",
  "gexc_len",
] as const;

/** A CRC as errors show it: `0x` and 8 hex digits. */
export function hex32(v: number): string {
  return `0x${v.toString(16).padStart(8, "0")}`;
}

/** A `CorruptTile` error naming the field, what was expected and what was found. */
export function corrupt(
  object: string | undefined,
  field: string,
  expected: unknown,
  found: unknown,
  what?: string,
) {
  const where = object === undefined ? "tile" : `tile ${object}`;
  return new DeltacellsError(
    `${where}: ${field} is ${fmt(found)}, expected ${fmt(expected)}${what ? ` (${what})` : ""}; ` +
      "the object is not a valid deltacells v2 tile: re-fetch it or rewrite the dataset",
    { tag: "CorruptTile", object, field, expected, found },
  );
}

function fmt(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Reads a little-endian uint64 as a number, refusing values beyond 2^53 (no tile is that big). */
export function readU64(view: DataView, off: number, object: string | undefined, field: string): number {
  const lo = view.getUint32(off, true);
  const hi = view.getUint32(off + 4, true);
  if (hi >= 0x200000) return failU64(object, field, hi, lo);
  return hi * 0x1_0000_0000 + lo;
}

function failU64(object: string | undefined, field: string, hi: number, lo: number): never {
  const big = (BigInt(hi) << 32n) | BigInt(lo);
  throw corrupt(object, field, "< 2^53", big.toString());
}

let littleEndian: boolean | undefined;

/** Tiles are little-endian and decoded through typed-array views: refuse big-endian hosts. */
export function assertLittleEndianHost(isLittle = hostIsLittleEndian()): void {
  if (!isLittle) {
    throw new DeltacellsError(
      "deltacells tiles are little-endian and this host is big-endian; decode them on a little-endian machine",
      { tag: "UnsupportedHost", field: "endianness", expected: "little", found: "big" },
    );
  }
}

function hostIsLittleEndian(): boolean {
  if (littleEndian === undefined) littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  return littleEndian;
}

/**
 * Parses and checks the 64-byte header: magic, version, flags, reserved, `n_genes`, `n_chunks`,
 * `indptr_off` (alignment, position after the chunk table, indptr inside `total_size`). It does
 * not need the whole tile (a ranged read of the first 64 bytes is enough); {@link decodeTile}
 * additionally checks that `total_size` is the size of the object.
 */
export function readTileHeader(bytes: Uint8Array, object?: string): TileHeader {
  if (bytes.length < HEADER_SIZE) throw corrupt(object, "size", `>= ${HEADER_SIZE} bytes`, bytes.length);
  for (let i = 0; i < 8; i++) {
    if (bytes[i] !== TILE_MAGIC[i]) {
      throw corrupt(object, "magic", "DELTACEL", Array.from(bytes.subarray(0, 8), hex).join(" "));
    }
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE);
  const version = view.getUint32(8, true);
  if (version !== TILE_VERSION) {
    throw new DeltacellsError(
      `${object === undefined ? "tile" : `tile ${object}`}: version is ${version}, this reader understands version ${TILE_VERSION}`,
      { tag: "UnsupportedVersion", object, field: "version", expected: TILE_VERSION, found: version },
    );
  }
  const flags = view.getUint32(12, true);
  if (flags !== 0) throw corrupt(object, "flags", 0, flags, "unknown flags");
  const reserved = view.getUint32(60, true);
  if (reserved !== 0) throw corrupt(object, "reserved", 0, reserved);
  const nCells = readU64(view, 16, object, "n_cells");
  const nnz = readU64(view, 24, object, "nnz");
  const nGenes = view.getUint32(32, true);
  if (nGenes < 1 || nGenes > MAX_GENES) throw corrupt(object, "n_genes", "1 .. 2^31", nGenes);
  const nChunks = view.getUint32(36, true);
  if (nCells === 0 && nChunks !== 0)
    throw corrupt(object, "n_chunks", "0 for a tile with zero cells", nChunks);
  if (nCells > 0 && nChunks === 0) throw corrupt(object, "n_chunks", ">= 1 for a tile with cells", 0);
  const indptrOff = readU64(view, 40, object, "indptr_off");
  const totalSize = readU64(view, 48, object, "total_size");
  const tableEnd = HEADER_SIZE + nChunks * CHUNK_ENTRY_SIZE;
  if (indptrOff % 8 !== 0) throw corrupt(object, "indptr_off", "a multiple of 8", indptrOff);
  if (indptrOff < tableEnd)
    throw corrupt(object, "indptr_off", `>= ${tableEnd} (end of the chunk table)`, indptrOff);
  const indptrEnd = indptrOff + (nCells + 1) * 8;
  if (indptrEnd > totalSize) {
    throw corrupt(
      object,
      "indptr_off",
      `indptr inside total_size (${totalSize})`,
      `indptr ending at ${indptrEnd}`,
    );
  }
  return {
    version,
    flags,
    nCells,
    nnz,
    nGenes,
    nChunks,
    indptrOff,
    totalSize,
    crc32: view.getUint32(56, true),
    reserved,
  };
}

function hex(b: number): string {
  return b.toString(16).padStart(2, "0");
}

/** Writes the header into the first 64 bytes of `out`. */
export function writeTileHeader(
  out: Uint8Array,
  h: Omit<TileHeader, "version" | "flags" | "reserved">,
): void {
  out.set(TILE_MAGIC, 0);
  const view = new DataView(out.buffer, out.byteOffset, HEADER_SIZE);
  view.setUint32(8, TILE_VERSION, true);
  view.setUint32(12, 0, true);
  writeU64(view, 16, h.nCells);
  writeU64(view, 24, h.nnz);
  view.setUint32(32, h.nGenes >>> 0, true);
  view.setUint32(36, h.nChunks, true);
  writeU64(view, 40, h.indptrOff);
  writeU64(view, 48, h.totalSize);
  view.setUint32(56, h.crc32 >>> 0, true);
  view.setUint32(60, 0, true);
}

export function writeU64(view: DataView, off: number, v: number): void {
  view.setUint32(off, v % 0x1_0000_0000, true);
  view.setUint32(off + 4, Math.floor(v / 0x1_0000_0000), true);
}

/** Reads chunk-table entry `k` (no checks; see the decoder's `inspectTile`). */
export function readChunkEntry(view: DataView, k: number, object: string | undefined): ChunkEntry {
  const base = HEADER_SIZE + k * CHUNK_ENTRY_SIZE;
  // No closure here: this runs for every chunk of every tile.
  const f = chunkField;
  return {
    cellLo: f(view, base, k, 0, object),
    cellHi: f(view, base, k, 1, object),
    nnzLo: f(view, base, k, 2, object),
    nnzHi: f(view, base, k, 3, object),
    gapsOff: f(view, base, k, 4, object),
    gapsLen: f(view, base, k, 5, object),
    valsOff: f(view, base, k, 6, object),
    valsLen: f(view, base, k, 7, object),
    vexcOff: f(view, base, k, 8, object),
    vexcLen: f(view, base, k, 9, object),
    gexcOff: f(view, base, k, 10, object),
    gexcLen: f(view, base, k, 11, object),
  };
}

function chunkField(view: DataView, base: number, k: number, i: number, object: string | undefined): number {
  const lo = view.getUint32(base + 8 * i, true);
  const hi = view.getUint32(base + 8 * i + 4, true);
  // The field name is only built on failure.
  return hi < 0x200000 ? hi * 0x1_0000_0000 + lo : failU64(object, `chunk[${k}].${CHUNK_FIELDS[i]}`, hi, lo);
}

export function writeChunkEntry(view: DataView, k: number, e: ChunkEntry): void {
  const base = HEADER_SIZE + k * CHUNK_ENTRY_SIZE;
  const vals = [
    e.cellLo,
    e.cellHi,
    e.nnzLo,
    e.nnzHi,
    e.gapsOff,
    e.gapsLen,
    e.valsOff,
    e.valsLen,
    e.vexcOff,
    e.vexcLen,
    e.gexcOff,
    e.gexcLen,
  ];
  for (let i = 0; i < 12; i++) writeU64(view, base + 8 * i, vals[i]!);
}
