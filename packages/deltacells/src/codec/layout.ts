/**
 * Everything a reader checks before decompressing anything: header, object size, CRC, indptr,
 * chunk table and stream placement. After {@link inspectTile} every offset and length is known
 * to lie inside the blob and every size to be consistent, so nothing later allocates from an
 * unchecked number.
 */
import { crc32 } from "./crc32.js";
import {
  assertLittleEndianHost,
  type ChunkEntry,
  corrupt,
  hex32,
  MAX_ZSTD_RATIO,
  readChunkEntry,
  readTileHeader,
  type TileHeader,
} from "./format.js";
import { nativeKernel } from "./native.js";

/** A checked tile: its header, chunk table and indptr (from 0, as doubles). */
export interface TileLayout {
  header: TileHeader;
  chunks: ChunkEntry[];
  indptr: Float64Array;
}

export interface InspectOptions {
  /** Name of the tile in error messages (a store key, a path). */
  object?: string;
  /** Skip the CRC, when it is checked elsewhere (the pool checksums slices of the tile on its workers). */
  skipCrc?: boolean;
  /**
   * Where to put the indptr when it fits (a reusable buffer: allocating one per tile costs more
   * than reading it); the layout's `indptr` is then a view of it, valid until the next reuse.
   */
  indptrBuffer?: Float64Array;
}

/** Checks a whole tile except its frames' contents; throws `CorruptTile` naming the field. */
export function inspectTile(bytes: Uint8Array, opts: InspectOptions = {}): TileLayout {
  assertLittleEndianHost();
  const object = opts.object;
  const header = readTileHeader(bytes, object);
  const { nCells, nnz, nChunks, indptrOff, totalSize } = header;
  if (totalSize !== bytes.length) {
    throw corrupt(
      object,
      "total_size",
      `${bytes.length} (the object size)`,
      totalSize,
      "truncated or padded object",
    );
  }
  if (!opts.skipCrc) {
    const crc = checksum(bytes.subarray(64, totalSize));
    if (crc !== header.crc32)
      throw corrupt(object, "crc32", hex32(crc), hex32(header.crc32), "the bytes are damaged");
  }
  const buf = opts.indptrBuffer;
  const indptr = readIndptr(
    bytes,
    indptrOff,
    nCells,
    nnz,
    object,
    buf !== undefined && buf.length > nCells ? buf.subarray(0, nCells + 1) : new Float64Array(nCells + 1),
  );
  const indptrEnd = indptrOff + (nCells + 1) * 8;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const chunks: ChunkEntry[] = new Array(nChunks);
  let cell = 0;
  let pos = 0;
  for (let k = 0; k < nChunks; k++) {
    const e = readChunkEntry(view, k, object);
    const at = `chunk[${k}]`;
    if (e.cellLo !== cell)
      throw corrupt(object, `${at}.cell_lo`, cell, e.cellLo, "chunks must be contiguous");
    if (e.nnzLo !== pos) throw corrupt(object, `${at}.nnz_lo`, pos, e.nnzLo, "chunks must be contiguous");
    if (e.cellHi < e.cellLo || e.cellHi > nCells) {
      throw corrupt(object, `${at}.cell_hi`, `${e.cellLo} .. ${nCells}`, e.cellHi);
    }
    if (e.nnzHi < e.nnzLo || e.nnzHi > nnz)
      throw corrupt(object, `${at}.nnz_hi`, `${e.nnzLo} .. ${nnz}`, e.nnzHi);
    if (indptr[e.cellHi] !== e.nnzHi) {
      throw corrupt(object, `${at}.nnz_hi`, `indptr[${e.cellHi}] = ${indptr[e.cellHi]}`, e.nnzHi);
    }
    const n = e.nnzHi - e.nnzLo;
    if (n >= 2 ** 32) throw corrupt(object, `${at}.nnz_hi`, "fewer than 2^32 nonzeros per chunk", n);
    const where = { object, chunk: k, lowest: indptrEnd, totalSize };
    checkFrame(where, { name: "gaps", off: e.gapsOff, len: e.gapsLen, contentSize: 2 * n, required: true });
    checkFrame(where, { name: "vals", off: e.valsOff, len: e.valsLen, contentSize: 2 * n, required: true });
    checkFrame(where, { name: "vexc", off: e.vexcOff, len: e.vexcLen, contentSize: 0, required: false });
    checkFrame(where, { name: "gexc", off: e.gexcOff, len: e.gexcLen, contentSize: 0, required: false });
    if ((e.vexcLen > 0 || e.gexcLen > 0) && n === 0) {
      throw corrupt(
        object,
        `${at}.${e.vexcLen > 0 ? "vexc_len" : "gexc_len"}`,
        "0 for a chunk without nonzeros",
        "> 0",
      );
    }
    chunks[k] = e;
    cell = e.cellHi;
    pos = e.nnzHi;
  }
  if (cell !== nCells) throw corrupt(object, "chunk table", `chunks ending at n_cells = ${nCells}`, cell);
  if (pos !== nnz) throw corrupt(object, "chunk table", `chunks ending at nnz = ${nnz}`, pos);
  return { header, chunks, indptr };
}

/** Where a chunk's frames may lie: after the indptr (`lowest`), inside the tile's `totalSize` bytes. */
interface FrameBounds {
  object: string | undefined;
  chunk: number;
  lowest: number;
  totalSize: number;
}

/** One zstd frame of a chunk, as its entry gives it, and the size of what it decompresses to. */
interface FrameEntry {
  name: "gaps" | "vals" | "vexc" | "gexc";
  off: number;
  len: number;
  contentSize: number;
  /** Whether the chunk must have this frame (`gaps`, `vals`) or may leave it out (exceptions). */
  required: boolean;
}

function checkFrame(bounds: FrameBounds, frame: FrameEntry): void {
  const { object, chunk: k, lowest, totalSize } = bounds;
  const { name, off, len, contentSize, required } = frame;
  if (len === 0) {
    if (required) throw corrupt(object, `chunk[${k}].${name}_len`, "> 0 (a zstd frame)", 0);
    return;
  }
  if (off % 8 !== 0) throw corrupt(object, `chunk[${k}].${name}_off`, "a multiple of 8", off);
  if (off < lowest) throw corrupt(object, `chunk[${k}].${name}_off`, `>= ${lowest} (after the indptr)`, off);
  if (off + len > totalSize)
    throw corrupt(object, `chunk[${k}].${name}_len`, `<= ${totalSize - off} (inside the tile)`, len);
  if (contentSize > len * MAX_ZSTD_RATIO) {
    throw corrupt(
      object,
      `chunk[${k}].${name}_len`,
      `>= ${Math.ceil(contentSize / MAX_ZSTD_RATIO)} for ${contentSize} bytes`,
      len,
    );
  }
}

/** Reads and checks the int64 indptr (from 0, non-decreasing, ending at nnz) into doubles. */
function readIndptr(
  bytes: Uint8Array,
  off: number,
  nCells: number,
  nnz: number,
  object: string | undefined,
  out: Float64Array,
) {
  // The native reader checks the common case quickly; the loop below runs on failure, to explain it.
  if (nativeKernel()?.indptr(bytes, off, nCells, nnz, out) === -1 && out[0] === 0 && out[nCells] === nnz)
    return out;
  const view = new DataView(bytes.buffer, bytes.byteOffset + off, (nCells + 1) * 8);
  let prev = 0;
  for (let i = 0; i <= nCells; i++) {
    const lo = view.getUint32(8 * i, true);
    const hi = view.getUint32(8 * i + 4, true);
    const v = hi * 0x1_0000_0000 + lo;
    if (hi >= 0x200000 || v < prev) {
      throw corrupt(
        object,
        `indptr[${i}]`,
        `>= indptr[${i - 1}] = ${prev} (non-decreasing)`,
        hi >= 0x200000 ? ">= 2^53" : v,
      );
    }
    if (v > nnz) throw corrupt(object, `indptr[${i}]`, `<= nnz = ${nnz}`, v);
    out[i] = v;
    prev = v;
  }
  if (out[0] !== 0) throw corrupt(object, "indptr[0]", 0, out[0]);
  if (out[nCells] !== nnz) throw corrupt(object, `indptr[${nCells}]`, `nnz = ${nnz}`, out[nCells]);
  return out;
}

/** CRC-32 with the native kernel when loaded. */
export function checksum(bytes: Uint8Array): number {
  const k = nativeKernel();
  return k ? k.crc32(bytes, 0) : crc32(bytes);
}
