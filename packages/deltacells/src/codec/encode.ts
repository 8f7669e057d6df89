/**
 * Tile encoding: {@link prepareTile} checks the CSR input and builds each chunk's raw streams
 * (byte planes and exception lists); compressing those streams is the slow part (zstd level 19)
 * and may run anywhere (this thread or the pool's workers); {@link assembleTile} lays out the
 * blob and its CRC.
 */
import { DeltacellsError } from "../errors.js";
import { crc32 } from "./crc32.js";
import {
  assertLittleEndianHost,
  CHUNK_ENTRY_SIZE,
  type ChunkEntry,
  EXCEPTION_MARK,
  HEADER_SIZE,
  MAX_COUNT,
  MAX_GENES,
  writeChunkEntry,
  writeTileHeader,
  writeU64,
} from "./format.js";
import type { ZstdBackend } from "./zstd/types.js";

/** A window of a CSR count matrix: the encoder's input. */
export interface TileRows {
  /** Number of genes (columns), `1 .. 2^31`. */
  nGenes: number;
  /**
   * `nCells + 1` non-decreasing offsets. `indptr[0]` may be non-zero: cell `r`'s entries are
   * `indices[indptr[r] - indptr[0] ...]`, so a window read from a bigger matrix needs no rebasing.
   */
  indptr: ArrayLike<number>;
  /** Gene indices, strictly increasing within each cell, `< nGenes`. */
  indices: Int32Array | Uint32Array;
  /** Counts: integers in `[1, 2^31 - 1]`. */
  data: Int32Array | Uint32Array | Float32Array | Float64Array;
}

export interface EncodeOptions {
  /** Chunks per tile (units of parallel decoding), default 8; never more than the tile's cells. */
  nChunks?: number;
  /** zstd level, default 19 (smaller tiles that decode faster; only encoding is slower). */
  level?: number;
  /** Name of the input in error messages. */
  object?: string;
}

/** Chunks per tile (units of parallel decoding) unless told otherwise. */
export const DEFAULT_N_CHUNKS = 8;
/** zstd level of a tile's streams unless told otherwise. */
export const DEFAULT_LEVEL = 19;

/** One chunk's raw (uncompressed) streams. */
export interface PreparedChunk {
  cellLo: number;
  cellHi: number;
  nnzLo: number;
  nnzHi: number;
  gaps: Uint8Array;
  vals: Uint8Array;
  vexc: Uint8Array | undefined;
  gexc: Uint8Array | undefined;
}

export interface PreparedTile {
  nCells: number;
  nnz: number;
  nGenes: number;
  /** indptr from 0. */
  indptr: Float64Array;
  chunks: PreparedChunk[];
}

/** The writer's policy limit on exceptions of each kind in one tile. */
export function exceptionLimit(nnz: number): number {
  return Math.max(1024, Math.floor(nnz / 200));
}

function invalid(
  object: string | undefined,
  field: string,
  expected: unknown,
  found: unknown,
  message: string,
) {
  return new DeltacellsError(`${object ? `${object}: ` : ""}${message}`, {
    tag: "InvalidInput",
    object,
    field,
    expected,
    found,
  });
}

/** Checks the input and builds the raw streams of every chunk. */
export function prepareTile(rows: TileRows, opts: EncodeOptions = {}): PreparedTile {
  assertLittleEndianHost();
  const object = opts.object;
  const { nGenes, indices, data } = rows;
  if (!Number.isInteger(nGenes) || nGenes < 1 || nGenes > MAX_GENES) {
    throw invalid(
      object,
      "nGenes",
      "an integer in 1 .. 2^31",
      nGenes,
      `nGenes must be an integer in 1 .. 2^31, got ${nGenes}`,
    );
  }
  const indptr = checkIndptr(rows.indptr, object);
  const nCells = indptr.length - 1;
  const nnz = indptr[nCells]!;
  if (indices.length < nnz || data.length < nnz) {
    const field = indices.length < nnz ? "indices" : "data";
    const found = Math.min(indices.length, data.length);
    throw invalid(
      object,
      field,
      `>= ${nnz} entries`,
      found,
      `indptr spans ${nnz} nonzeros but ${field} has ${found}`,
    );
  }
  const wanted = opts.nChunks ?? DEFAULT_N_CHUNKS;
  if (!Number.isInteger(wanted) || wanted < 1) {
    throw invalid(
      object,
      "nChunks",
      "an integer >= 1",
      wanted,
      `nChunks must be an integer >= 1, got ${wanted}`,
    );
  }
  const nChunks = Math.min(wanted, nCells);
  const bounds = chunkBounds(indptr, nChunks);
  const limit = exceptionLimit(nnz);
  const counts = { v: 0, g: 0 };
  const chunks: PreparedChunk[] = [];
  for (let k = 0; k < nChunks; k++) {
    chunks.push(prepareChunk(rows, indptr, bounds[k]!, bounds[k + 1]!, limit, counts, object));
  }
  return { nCells, nnz, nGenes, indptr, chunks };
}

/** indptr as doubles from 0, after checking it is a non-decreasing integer sequence. */
function checkIndptr(src: ArrayLike<number>, object: string | undefined): Float64Array {
  if (src.length < 1)
    throw invalid(
      object,
      "indptr",
      "nCells + 1 >= 1 entries",
      0,
      "indptr is empty (it needs nCells + 1 entries)",
    );
  const first = Number(src[0]);
  const out = new Float64Array(src.length);
  let prev = 0;
  for (let i = 0; i < src.length; i++) {
    const v = Number(src[i]) - first;
    if (!Number.isSafeInteger(v) || v < prev || first < 0) {
      throw invalid(
        object,
        `indptr[${i}]`,
        `an integer >= ${prev + first}`,
        src[i],
        `indptr must be non-decreasing integers (entry ${i} is ${src[i]})`,
      );
    }
    out[i] = v;
    prev = v;
  }
  return out;
}

/** Cell boundaries giving chunks with roughly equal nonzeros, each with at least one cell. */
export function chunkBounds(indptr: Float64Array, nChunks: number): number[] {
  const nCells = indptr.length - 1;
  const nnz = indptr[nCells]!;
  const bounds = [0];
  for (let k = 1; k < nChunks; k++) {
    const target = (nnz * k) / nChunks;
    let lo = 0;
    let hi = nCells;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (indptr[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    bounds.push(Math.min(Math.max(lo, bounds[k - 1]! + 1), nCells - (nChunks - k)));
  }
  if (nChunks > 0) bounds.push(nCells);
  return bounds;
}

function prepareChunk(
  rows: TileRows,
  indptr: Float64Array,
  cellLo: number,
  cellHi: number,
  limit: number,
  counts: { v: number; g: number },
  object: string | undefined,
): PreparedChunk {
  const { indices, data, nGenes } = rows;
  const nnzLo = indptr[cellLo]!;
  const nnzHi = indptr[cellHi]!;
  const n = nnzHi - nnzLo;
  const gaps = new Uint8Array(2 * n);
  const vals = new Uint8Array(2 * n);
  const vexc: number[] = [];
  const gexc: number[] = [];
  const isFloat = data instanceof Float32Array || data instanceof Float64Array;
  for (let c = cellLo; c < cellHi; c++) {
    const s = indptr[c]!;
    const e = indptr[c + 1]!;
    let prev = -1;
    for (let i = s; i < e; i++) {
      const g = indices[i]!;
      const v = data[i]!;
      if (g <= prev || g >= nGenes) throw badGene(object, c, i - s, g, prev, nGenes);
      if (v < 1 || v > MAX_COUNT || (isFloat && !Number.isInteger(v))) throw badCount(object, c, g, v);
      const j = i - nnzLo;
      let gap = g - prev - (prev < 0 ? 1 : 0);
      if (gap > EXCEPTION_MARK) {
        gexc.push(j, gap - EXCEPTION_MARK);
        if (++counts.g > limit) throw tooMany(object, "gap", counts.g, limit, rows);
        gap = EXCEPTION_MARK;
      }
      gaps[j] = gap & 0xff;
      gaps[n + j] = gap >>> 8;
      let stored = v;
      if (v > EXCEPTION_MARK) {
        vexc.push(j, v);
        if (++counts.v > limit) throw tooMany(object, "value", counts.v, limit, rows);
        stored = EXCEPTION_MARK;
      }
      vals[j] = stored & 0xff;
      vals[n + j] = stored >>> 8;
      prev = g;
    }
  }
  return {
    cellLo,
    cellHi,
    nnzLo,
    nnzHi,
    gaps,
    vals,
    vexc: exceptionStream(vexc),
    gexc: exceptionStream(gexc),
  };
}

/** `k` uint32 positions then `k` uint32 payloads, little-endian (the host is). */
function exceptionStream(pairs: number[]): Uint8Array | undefined {
  const k = pairs.length / 2;
  if (k === 0) return undefined;
  const words = new Uint32Array(2 * k);
  for (let i = 0; i < k; i++) {
    words[i] = pairs[2 * i]!;
    words[k + i] = pairs[2 * i + 1]!;
  }
  return new Uint8Array(words.buffer);
}

function badGene(
  object: string | undefined,
  cell: number,
  entry: number,
  g: number,
  prev: number,
  nGenes: number,
) {
  const why =
    g >= nGenes
      ? `is >= nGenes (${nGenes})`
      : g < 0
        ? "is negative"
        : `does not increase (previous gene ${prev}): indices must be sorted and unique within a cell`;
  return invalid(
    object,
    "indices",
    prev < g ? `< ${nGenes}` : `> ${prev}`,
    g,
    `cell ${cell}, entry ${entry}: gene ${g} ${why}`,
  );
}

function badCount(object: string | undefined, cell: number, gene: number, v: number) {
  return invalid(
    object,
    "data",
    "an integer count in 1 .. 2^31-1",
    v,
    `cell ${cell}, gene ${gene}: count ${v} is not a raw count (integers in 1 .. 2^31-1; zeros must not be stored)`,
  );
}

function tooMany(
  object: string | undefined,
  kind: "value" | "gap",
  count: number,
  limit: number,
  rows: TileRows,
) {
  const what = kind === "value" ? "counts above 65535" : "gene gaps above 65535";
  return invalid(
    object,
    kind === "value" ? "data" : "indices",
    `<= ${limit} exceptions (max(1024, nnz / 200))`,
    `more than ${count - 1}`,
    `more than ${limit} ${what} in one tile (limit max(1024, nnz/200) for ${rows.indptr.length - 1} cells): ` +
      (kind === "value"
        ? "data with so many large values is not raw counts; deltacells stores raw UMI/read counts"
        : "data with so many large gaps is not raw counts in a gene order sorted by decreasing total; sort the genes first"),
  );
}

/** The four compressed frames of each chunk (exception frames empty when absent). */
export interface ChunkFrames {
  gaps: Uint8Array;
  vals: Uint8Array;
  vexc: Uint8Array | undefined;
  gexc: Uint8Array | undefined;
}

/** Compresses one chunk's streams. */
export function compressChunk(c: PreparedChunk, zstd: ZstdBackend, level: number): ChunkFrames {
  const compress = compressorOf(zstd);
  return {
    gaps: compress(c.gaps, level),
    vals: compress(c.vals, level),
    vexc: c.vexc && compress(c.vexc, level),
    gexc: c.gexc && compress(c.gexc, level),
  };
}

export function compressorOf(zstd: ZstdBackend): (src: Uint8Array, level: number) => Uint8Array {
  if (zstd.compress === undefined) {
    throw new DeltacellsError(
      `the zstd available here (${zstd.name}) only decompresses: encode tiles under Node`,
      { tag: "UnsupportedHost", field: "zstd", expected: "a compressor", found: zstd.name },
    );
  }
  return zstd.compress;
}

const align8 = (x: number) => Math.ceil(x / 8) * 8;

/** Lays out header, chunk table, indptr and frames (each on an 8-byte boundary) and sets the CRC. */
export function assembleTile(p: PreparedTile, frames: ChunkFrames[]): Uint8Array {
  const nChunks = p.chunks.length;
  const indptrOff = align8(HEADER_SIZE + nChunks * CHUNK_ENTRY_SIZE);
  let pos = indptrOff + (p.nCells + 1) * 8;
  const entries: ChunkEntry[] = [];
  const place = (f: Uint8Array | undefined): [number, number] => {
    if (f === undefined) return [0, 0];
    pos = align8(pos);
    const at = pos;
    pos += f.length;
    return [at, f.length];
  };
  for (let k = 0; k < nChunks; k++) {
    const c = p.chunks[k]!;
    const f = frames[k]!;
    const [gapsOff, gapsLen] = place(f.gaps);
    const [valsOff, valsLen] = place(f.vals);
    const [vexcOff, vexcLen] = place(f.vexc);
    const [gexcOff, gexcLen] = place(f.gexc);
    entries.push({ ...c, gapsOff, gapsLen, valsOff, valsLen, vexcOff, vexcLen, gexcOff, gexcLen });
  }
  const totalSize = pos;
  const out = new Uint8Array(totalSize);
  const view = new DataView(out.buffer);
  for (let k = 0; k < nChunks; k++) {
    const e = entries[k]!;
    writeChunkEntry(view, k, e);
    const f = frames[k]!;
    out.set(f.gaps, e.gapsOff);
    out.set(f.vals, e.valsOff);
    if (f.vexc) out.set(f.vexc, e.vexcOff);
    if (f.gexc) out.set(f.gexc, e.gexcOff);
  }
  for (let i = 0; i <= p.nCells; i++) writeU64(view, indptrOff + 8 * i, p.indptr[i]!);
  writeTileHeader(out, {
    nCells: p.nCells,
    nnz: p.nnz,
    nGenes: p.nGenes,
    nChunks,
    indptrOff,
    totalSize,
    crc32: crc32(out.subarray(HEADER_SIZE)),
  });
  return out;
}

/** Checks the zstd level option. */
export function levelOf(opts: EncodeOptions): number {
  const level = opts.level ?? DEFAULT_LEVEL;
  if (!Number.isInteger(level) || level < 1 || level > 22) {
    throw invalid(
      opts.object,
      "level",
      "an integer in 1 .. 22",
      level,
      `zstd level must be an integer in 1 .. 22, got ${level}`,
    );
  }
  return level;
}

/** Encodes a tile on this thread with an already-loaded zstd. */
export function encodeTileSync(rows: TileRows, zstd: ZstdBackend, opts: EncodeOptions = {}): Uint8Array {
  const level = levelOf(opts);
  const p = prepareTile(rows, opts);
  return assembleTile(
    p,
    p.chunks.map((c) => compressChunk(c, zstd, level)),
  );
}
