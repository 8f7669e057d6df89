/**
 * Synchronous tile decoding on the calling thread: {@link decodeTileSync} (whole tile or a cell
 * range, into fresh or caller-provided arrays) and {@link decodeChunksInto}, what a worker runs for
 * its share of a tile, over {@link decodeChunkInto}, one chunk stream by stream.
 */
import { DeltacellsError } from "../errors.js";
import { checkColumns, renumberColumns } from "./columns.js";
import { type ChunkEntry, corrupt, EXCEPTION_MARK, MAX_COUNT } from "./format.js";
import { hasZero, prefixSumInPlace, unplane } from "./kernel.js";
import { inspectTile, type TileLayout } from "./layout.js";
import { nativeKernel } from "./native.js";
import { zstdFrameContentSize } from "./zstd/frame.js";
import type { ZstdBackend } from "./zstd/types.js";

/** A decoded tile (or cell range of one) in CSR form. */
export interface DecodedTile {
  nCells: number;
  nGenes: number;
  nnz: number;
  /** `nCells + 1` offsets starting at 0. */
  indptr: Float64Array;
  /** Gene (column) indices, strictly increasing within each cell. */
  indices: Int32Array;
  /** Counts, as int32 (default) or float32 (exact up to 2^24). */
  data: Int32Array | Float32Array;
}

/**
 * Caller-provided output arrays. Each one given must be at least as long as needed (check
 * {@link readTileHeader} first); the result then holds views (`subarray`) of them, so a loop
 * over tiles allocates no output memory.
 */
export interface DecodeOutput {
  indptr?: Float64Array;
  indices?: Int32Array;
  data?: Int32Array | Float32Array;
}

export interface DecodeOptions {
  /** Type of the decoded counts (default `"int32"`). */
  values?: "int32" | "float32";
  /** Decode only cells `[start, end)` of the tile (only the chunks that hold them are decompressed). */
  cells?: [number, number];
  /** Write into these arrays instead of allocating. */
  out?: DecodeOutput;
  /** Name of the tile (a store key, a path) for error messages. */
  object?: string;
  /**
   * Renumbers the columns: a nonzero of gene j comes out with index `columns[j]` (a permutation of
   * `0 .. nGenes - 1`, checked once per map; it must not change afterwards). Each cell's indices
   * then follow the tile's gene order, so they no longer increase unless the map does.
   */
  columns?: Int32Array;
}

/** Reusable decompression buffers: one set per thread, grown on demand, never shrunk. */
class Scratch {
  gaps = new Uint8Array(0);
  vals = new Uint8Array(0);
  exc = new Uint32Array(0);
  indptr = new Float64Array(0);
  plan = new Float64Array(0);
  /** A buffer for `inspectTile`'s indptr (the layout is only used during one synchronous decode). */
  indptrFor(nCells: number): Float64Array {
    if (this.indptr.length <= nCells)
      this.indptr = new Float64Array(Math.max(nCells + 1, this.indptr.length * 2));
    return this.indptr;
  }
  planes(which: "gaps" | "vals", size: number): Uint8Array {
    if (this[which].length < size) this[which] = new Uint8Array(Math.max(size, this[which].length * 1.5) | 0);
    return this[which].subarray(0, size);
  }
  planFor(chunks: number): Float64Array {
    if (this.plan.length < chunks * PLAN_FIELDS) this.plan = new Float64Array(chunks * PLAN_FIELDS * 2);
    return this.plan;
  }
  exceptions(words: number): Uint32Array {
    if (this.exc.length < words) this.exc = new Uint32Array(Math.max(words, this.exc.length * 2));
    return this.exc.subarray(0, words);
  }
}
const scratch = new Scratch();

/** This thread's reusable indptr buffer for {@link inspectTile} (see `InspectOptions.indptrBuffer`). */
export function indptrScratch(bytes: Uint8Array): Float64Array | undefined {
  if (bytes.length < 24) return undefined;
  const v = new DataView(bytes.buffer, bytes.byteOffset, 24);
  const nCells = v.getUint32(20, true) === 0 ? v.getUint32(16, true) : -1;
  // Only reuse for plausible sizes; the header check refuses the rest anyway.
  return nCells >= 0 && nCells <= bytes.length / 8 ? scratch.indptrFor(nCells) : undefined;
}

/** Decodes a tile (or a cell range of it) on this thread with an already-loaded zstd. */
export function decodeTileSync(bytes: Uint8Array, zstd: ZstdBackend, opts: DecodeOptions = {}): DecodedTile {
  const layout = inspectTile(bytes, { object: opts.object, indptrBuffer: indptrScratch(bytes) });
  return decodeLayoutSync(bytes, layout, zstd, opts);
}

/**
 * {@link decodeTileSync} of a tile already inspected, CRC included, by {@link inspectTile}: for a
 * caller that sizes its output from the layout first, so the tile is parsed and checksummed once.
 * The layout must be used before this thread inspects another tile (its indptr may be scratch).
 */
export function decodeLayoutSync(
  bytes: Uint8Array,
  layout: TileLayout,
  zstd: ZstdBackend,
  opts: DecodeOptions = {},
): DecodedTile {
  const { nCells, nGenes } = layout.header;
  const [c0, c1] = cellRange(opts.cells, nCells, opts.object);
  const base = layout.indptr[c0]!;
  const nnz = layout.indptr[c1]! - base;
  if (opts.columns !== undefined) checkColumns(opts.columns, nGenes, opts.object);
  const out = allocateOutput(c1 - c0, nnz, opts);
  fillIndptr(layout.indptr, c0, c1, out.indptr);
  decodeChunksInto(
    chunkContext({
      bytes,
      layout,
      c0,
      c1,
      indices: out.indices,
      data: out.data,
      base,
      zstd,
      object: opts.object,
    }),
    0,
    layout.chunks.length,
    opts.columns,
  );
  return { nCells: c1 - c0, nGenes, nnz, ...out };
}

/**
 * Whether chunk `k` is decoded for cells `[c0, c1)`: every chunk of a whole tile (empty ones too:
 * their frames are checked), else the chunks holding cells of the range.
 */
function wanted(layout: TileLayout, k: number, c0: number, c1: number, full: boolean): boolean {
  const ch = layout.chunks[k]!;
  return full || (ch.cellLo < c1 && ch.cellHi > c0);
}

/** Fields per chunk in the plan the native kernel's `chunks` reads (see native/kernel.c). */
const PLAN_FIELDS = 9;

/**
 * What decoding a tile's chunks needs: the tile, where its nonzeros go, and the chunk being
 * decoded. One per tile, built by {@link chunkContext}; the per-chunk fields are overwritten for
 * each chunk, so nothing is allocated per chunk or per nonzero.
 */
export interface ChunkContext {
  readonly bytes: Uint8Array;
  readonly layout: TileLayout;
  /** The cells decoded: `[c0, c1)` of the tile. */
  readonly c0: number;
  readonly c1: number;
  /** Outputs: the nonzero at global position `p` goes to index `p - base`. */
  readonly indices: Int32Array;
  readonly data: Int32Array | Float32Array;
  readonly base: number;
  readonly zstd: ZstdBackend;
  /** Name of the tile for error messages. */
  readonly object: string | undefined;
  /** The chunk being decoded: its index, entry and number of nonzeros. */
  k: number;
  ch: ChunkEntry;
  n: number;
  /** Its cells within `[c0, c1)`: `[ca, cb)`. */
  ca: number;
  cb: number;
  /** Output index of the chunk's nonzero `j`: `j + shift`. */
  shift: number;
}

/** What a {@link ChunkContext} is built from: the tile and where its nonzeros go. */
export type TileJob = Pick<
  ChunkContext,
  "bytes" | "layout" | "c0" | "c1" | "indices" | "data" | "base" | "zstd" | "object"
>;

/** The context for decoding cells `[c0, c1)` of a checked tile into `indices`/`data` (see {@link ChunkContext}). */
export function chunkContext(job: TileJob): ChunkContext {
  const { layout } = job;
  // Every field in one literal, in one order: all contexts share one shape (monomorphic accesses).
  return {
    bytes: job.bytes,
    layout,
    c0: job.c0,
    c1: job.c1,
    indices: job.indices,
    data: job.data,
    base: job.base,
    zstd: job.zstd,
    object: job.object,
    k: -1,
    ch: layout.chunks[0]!,
    n: 0,
    ca: 0,
    cb: 0,
    shift: 0,
  };
}

/**
 * Decodes the chunks `[k0, k1)` of a tile that hold cells of `[cx.c0, cx.c1)` (see
 * {@link decodeChunkInto}). With the native kernel and native zstd, one call decodes them all
 * (zstd included) without coming back to JavaScript per stream; a chunk with exceptions, or one
 * that fails any check there, is decoded here by {@link decodeChunkInto}, which then names the
 * fault exactly as it would without the kernel. With `columns`, each chunk's indices are
 * renumbered right after it is decoded (see {@link DecodeOptions.columns}).
 */
export function decodeChunksInto(cx: ChunkContext, k0: number, k1: number, columns?: Int32Array): void {
  const { layout, c0, c1, base } = cx;
  const full = c0 === 0 && c1 === layout.header.nCells;
  const native = cx.zstd.name === "zstd-napi" ? nativeKernel() : undefined;
  if (columns !== undefined && native === undefined) {
    // Chunk by chunk, each renumbered while its indices are still (mostly) in cache.
    for (let k = k0; k < k1; k++) {
      decodeChunksInto(cx, k, k + 1);
      renumberChunk(cx, k, columns);
    }
    return;
  }
  if (native === undefined) {
    for (let k = k0; k < k1; k++) if (wanted(layout, k, c0, c1, full)) decodeChunkInto(cx, k);
    return;
  }
  const plan = scratch.planFor(k1);
  for (let k = k0; k < k1; k++) {
    const ch = layout.chunks[k]!;
    const p = k * PLAN_FIELDS;
    plan[p] = ch.gapsOff;
    plan[p + 1] = ch.gapsLen;
    plan[p + 2] = ch.valsOff;
    plan[p + 3] = ch.valsLen;
    plan[p + 4] = ch.nnzLo;
    // n, or -2: skip the chunk, -1: leave it to decodeChunkInto (it has exceptions).
    plan[p + 5] = !wanted(layout, k, c0, c1, full)
      ? -2
      : ch.vexcLen > 0 || ch.gexcLen > 0
        ? -1
        : ch.nnzHi - ch.nnzLo;
    plan[p + 6] = Math.max(ch.cellLo, c0);
    plan[p + 7] = Math.min(ch.cellHi, c1);
    plan[p + 8] = ch.nnzLo - base;
  }
  const nGenes = layout.header.nGenes;
  for (let k = k0; k < k1; ) {
    const stopped =
      columns === undefined
        ? native.chunks(cx.bytes, plan, k, k1, layout.indptr, cx.indices, cx.data, nGenes)
        : native.chunksRenumbered(cx.bytes, plan, k, k1, layout.indptr, cx.indices, cx.data, nGenes, columns);
    if (stopped === -1) return;
    // A chunk the kernel leaves to us is decoded again whole here (and renumbered after).
    decodeChunkInto(cx, stopped);
    if (columns !== undefined) renumberChunk(cx, stopped, columns);
    k = stopped + 1;
  }
}

/** Renumbers the decoded cells of chunk `k` (those inside `[cx.c0, cx.c1)`) through `columns`. */
function renumberChunk(cx: ChunkContext, k: number, columns: Int32Array): void {
  const { layout, base } = cx;
  const ch = layout.chunks[k]!;
  const ca = Math.max(ch.cellLo, cx.c0);
  const cb = Math.min(ch.cellHi, cx.c1);
  if (cb > ca) renumberColumns(cx.indices, layout.indptr[ca]! - base, layout.indptr[cb]! - base, columns);
}

/** Checks a requested cell range against the tile. */
export function cellRange(
  cells: [number, number] | undefined,
  nCells: number,
  object?: string,
): [number, number] {
  if (cells === undefined) return [0, nCells];
  const [a, b] = cells;
  if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b < a || b > nCells) {
    throw new DeltacellsError(
      `cell range [${a}, ${b}) is not inside the tile's ${nCells} cells${object ? ` (${object})` : ""}`,
      {
        tag: "InvalidInput",
        object,
        field: "cells",
        expected: `0 <= start <= end <= ${nCells}`,
        found: [a, b],
      },
    );
  }
  return [a, b];
}

/** The checked `values` option. */
export function valuesOf(opts: DecodeOptions): "int32" | "float32" {
  const v = opts.values ?? "int32";
  if (v !== "int32" && v !== "float32") {
    throw new DeltacellsError(`values must be "int32" or "float32", not ${JSON.stringify(v)}`, {
      tag: "InvalidInput",
      field: "values",
      expected: "int32 | float32",
      found: v,
    });
  }
  return v;
}

/** The output arrays for `nCells` cells and `nnz` nonzeros: the caller's (checked) or new ones. */
export function allocateOutput(
  nCells: number,
  nnz: number,
  opts: DecodeOptions,
): { indptr: Float64Array; indices: Int32Array; data: Int32Array | Float32Array } {
  const out = opts.out ?? {};
  const float = valuesOf(opts) === "float32";
  const data = out.data;
  if (data !== undefined && (float ? !(data instanceof Float32Array) : !(data instanceof Int32Array))) {
    throw new DeltacellsError(
      `out.data must be a ${float ? "Float32Array" : "Int32Array"} for values "${float ? "float32" : "int32"}"`,
      {
        tag: "InvalidInput",
        field: "out.data",
        expected: float ? "Float32Array" : "Int32Array",
        found: data.constructor.name,
      },
    );
  }
  return {
    indptr: sized(out.indptr, nCells + 1, "out.indptr") ?? new Float64Array(nCells + 1),
    indices: sized(out.indices, nnz, "out.indices") ?? new Int32Array(nnz),
    data: sized(data, nnz, "out.data") ?? (float ? new Float32Array(nnz) : new Int32Array(nnz)),
  };
}

function sized<T extends Float64Array | Int32Array | Float32Array>(
  a: T | undefined,
  n: number,
  field: string,
): T | undefined {
  if (a === undefined) return undefined;
  if (a.length < n) {
    throw new DeltacellsError(
      `${field} has ${a.length} elements, the tile needs ${n}: pass a larger buffer`,
      { tag: "InvalidInput", field, expected: `>= ${n} elements`, found: a.length },
    );
  }
  return a.subarray(0, n) as T;
}

export function fillIndptr(indptr: Float64Array, c0: number, c1: number, out: Float64Array): void {
  const base = indptr[c0]!;
  // Nothing to rebase (from cell 0, or after empty cells only): a plain copy (memcpy).
  if (base === 0) out.set(indptr.subarray(c0, c1 + 1));
  else for (let i = c0; i <= c1; i++) out[i - c0] = indptr[i]! - base;
}

/**
 * Decodes chunk `k` of a checked tile, writing the nonzeros of cells `[c0, c1)` that it holds to
 * `indices`/`data` at (global position - `base`).
 */
function decodeChunkInto(cx: ChunkContext, k: number): void {
  const { layout, indices, data } = cx;
  const ch = layout.chunks[k]!;
  const indptr = layout.indptr;
  const nGenes = layout.header.nGenes;
  const n = ch.nnzHi - ch.nnzLo;
  const ca = Math.max(ch.cellLo, cx.c0);
  const cb = Math.min(ch.cellHi, cx.c1);
  // Output position of chunk entry j is j + shift.
  // Small integers as int32 so that V8 keeps the loops' index arithmetic in int32 (values read
  // from the Float64Array indptr would otherwise make every index a double).
  const shift = toInt(ch.nnzLo - cx.base);
  cx.k = k;
  cx.ch = ch;
  cx.n = n;
  cx.ca = ca;
  cx.cb = cb;
  cx.shift = shift;
  // Field names for errors are built only on failure (this runs for every chunk of every tile).
  const gaps = decompress(cx, "gaps", ch.gapsOff, ch.gapsLen, 2 * n, scratch.planes("gaps", 2 * n));
  let pending = ca;
  const native = nativeKernel();
  if (native !== undefined && cb > ca) {
    const bad = native.gaps(gaps, n, indptr, ch.nnzLo, ca, cb, indices, shift, nGenes);
    if (bad === -2) {
      throw new DeltacellsError(`deltacells: inconsistent arguments to the native kernel (chunk ${k})`, {
        tag: "InternalError",
        object: cx.object,
        field: `chunk[${k}]`,
      });
    }
    // The TypeScript loop below then only runs from a bad cell, to describe it.
    pending = bad === -1 ? cb : bad;
  }
  if (pending < cb) {
    unplane(gaps, n, toInt(indptr[pending]! - ch.nnzLo), toInt(indptr[cb]! - ch.nnzLo), indices, shift);
  }
  for (let c = pending; c < cb; c++) {
    const s = toInt(indptr[c]! - ch.nnzLo + shift);
    const e = toInt(indptr[c + 1]! - ch.nnzLo + shift);
    if (s === e) continue;
    const last = prefixSumInPlace(indices, s, e);
    if (last < 0 || last >= nGenes) {
      const found = last < 0 ? "a gap of 0 (repeated gene)" : `gene ${last}`;
      throw corrupt(
        cx.object,
        `chunk[${k}].gaps`,
        `strictly increasing gene indices < n_genes = ${nGenes}`,
        found,
        `cell ${c}`,
      );
    }
  }
  // Decompressed only now, so that the gap planes were consumed while still in cache.
  const vals = decompress(cx, "vals", ch.valsOff, ch.valsLen, 2 * n, scratch.planes("vals", 2 * n));
  if (cb > ca) {
    const s = toInt(indptr[ca]! - ch.nnzLo);
    const e = toInt(indptr[cb]! - ch.nnzLo);
    let ok: boolean;
    if (native) {
      ok = native.vals(vals, n, s, e, data, shift);
    } else {
      unplane(vals, n, s, e, data, shift);
      ok = !hasZero(data, s + shift, e + shift);
    }
    if (!ok) throw corrupt(cx.object, `chunk[${k}].vals`, "counts >= 1", 0);
  }
  if (ch.vexcLen > 0) applyValueExceptions(cx, vals);
  if (ch.gexcLen > 0) applyGapExceptions(cx, gaps);
}

/** `x` as an int32 when it fits (exactly the same value either way). */
function toInt(x: number): number {
  return x <= 0x7fffffff && x >= -0x80000000 ? x | 0 : x;
}

/** Decompresses the frame `bytes[off, off + len)` of stream `stream` of chunk `cx.k` into `dst`, exactly `size` bytes. */
function decompress(
  cx: ChunkContext,
  stream: string,
  off: number,
  len: number,
  size: number,
  dst: Uint8Array,
): Uint8Array {
  const frame = cx.bytes.subarray(off, off + len);
  const declared = zstdFrameContentSize(frame);
  if (declared !== size)
    throw corrupt(cx.object, `${streamField(cx.k, stream)} frame content size`, size, declared);
  let got: number;
  try {
    got = cx.zstd.decompressInto(frame, dst);
  } catch (cause) {
    const e = corrupt(
      cx.object,
      `${streamField(cx.k, stream)} frame`,
      `a zstd frame of ${size} bytes`,
      String((cause as Error)?.message ?? cause),
    );
    (e as { cause?: unknown }).cause = cause;
    throw e;
  }
  if (got !== size)
    throw corrupt(cx.object, `${streamField(cx.k, stream)} frame decompressed size`, size, got);
  return dst;
}

function streamField(k: number, stream: string): string {
  return `chunk[${k}].${stream}`;
}

/** Decompresses chunk `cx.k`'s exception frame at `[off, off + len)` into (positions, payloads) after checking its size. */
function readExceptions(
  cx: ChunkContext,
  stream: "vexc" | "gexc",
  off: number,
  len: number,
): { k: number; words: Uint32Array } {
  const { n, object } = cx;
  const name = streamField(cx.k, stream);
  const declared = zstdFrameContentSize(cx.bytes.subarray(off, off + len));
  if (typeof declared !== "number" || declared % 8 !== 0 || declared === 0 || declared > 8 * n) {
    throw corrupt(object, `${name} frame content size`, `a multiple of 8 in 8 .. ${8 * n}`, declared);
  }
  const k = declared / 8;
  const words = scratch.exceptions(2 * k);
  const asBytes = new Uint8Array(words.buffer, words.byteOffset, 8 * k);
  decompress(cx, stream, off, len, 8 * k, asBytes);
  let prev = -1;
  for (let i = 0; i < k; i++) {
    const p = words[i]!;
    if (p <= prev || p >= n) {
      throw corrupt(object, `${name} position[${i}]`, `strictly increasing, in ${prev + 1} .. ${n - 1}`, p);
    }
    prev = p;
  }
  return { k, words };
}

/** Puts chunk `cx.k`'s counts above 65535 (its `vexc` stream) in place of their marks in `vals`. */
function applyValueExceptions(cx: ChunkContext, vals: Uint8Array): void {
  const { ch, n, ca, cb, data, shift, object } = cx;
  const indptr = cx.layout.indptr;
  const name = streamField(cx.k, "vexc");
  const { k, words } = readExceptions(cx, "vexc", ch.vexcOff, ch.vexcLen);
  const s = indptr[ca]! - ch.nnzLo;
  const e = cb > ca ? indptr[cb]! - ch.nnzLo : s;
  for (let i = 0; i < k; i++) {
    const p = words[i]!;
    const v = words[k + i]!;
    if (v < 65536 || v > MAX_COUNT) throw corrupt(object, `${name} payload[${i}]`, "65536 .. 2^31-1", v);
    const stored = vals[p]! | (vals[n + p]! << 8);
    if (stored !== EXCEPTION_MARK)
      throw corrupt(object, `${name} position[${i}]`, `a stored ${EXCEPTION_MARK}`, stored);
    if (p >= s && p < e) data[p + shift] = v;
  }
}

/** Adds chunk `cx.k`'s gaps above 65535 (its `gexc` stream) to the gene indices from their position on. */
function applyGapExceptions(cx: ChunkContext, gaps: Uint8Array): void {
  const { ch, n, ca, cb, indices, shift, object } = cx;
  const indptr = cx.layout.indptr;
  const nGenes = cx.layout.header.nGenes;
  const name = streamField(cx.k, "gexc");
  const { k, words } = readExceptions(cx, "gexc", ch.gexcOff, ch.gexcLen);
  // Positions increase, so the cell holding each one is found by walking forward.
  let cell = ch.cellLo;
  for (let i = 0; i < k; i++) {
    const p = words[i]!;
    const add = words[k + i]!;
    if (add < 1 || add > nGenes - 1)
      throw corrupt(object, `${name} payload[${i}]`, `1 .. ${nGenes - 1}`, add);
    const stored = gaps[p]! | (gaps[n + p]! << 8);
    if (stored !== EXCEPTION_MARK)
      throw corrupt(object, `${name} position[${i}]`, `a stored ${EXCEPTION_MARK}`, stored);
    while (indptr[cell + 1]! - ch.nnzLo <= p) cell++;
    if (cell < ca || cell >= cb) continue;
    const end = indptr[cell + 1]! - ch.nnzLo;
    const last = indices[end - 1 + shift]!;
    if (last + add >= nGenes) {
      throw corrupt(
        object,
        `${name} payload[${i}]`,
        `gene indices < n_genes = ${nGenes}`,
        `gene ${last + add}`,
        `cell ${cell}`,
      );
    }
    for (let j = p; j < end; j++) indices[j + shift]! += add;
  }
}

/** Re-exported for the pool's workers. */
export { inspectTile };
