/**
 * Decoding a tile straight into the rows of other arrays ("slots"): what the training loader asks
 * for when it knows, before decoding, where each of the tile's cells goes in its shuffled batches
 * (a tile's indptr is stored uncompressed, so every row's length is known from the stored bytes).
 * The tile is decoded chunk by chunk into a small per-thread buffer, and each row is copied to its
 * slots while that buffer is still in cache: the decoded tile is never written out whole and read
 * back, which cost the loader's thread as much as decoding (bench/RESULTS.md, "The training
 * loader").
 */
import { DeltacellsError } from "../errors.js";
import { outsideColumnMap } from "./columns.js";
import { copyRange } from "./copy.js";
import { chunkContext, decodeChunksInto } from "./decode.js";
import { corrupt, HEADER_SIZE, hex32 } from "./format.js";
import { checksum, type TileLayout } from "./layout.js";
import { nativeKernel } from "./native.js";
import type { ZstdBackend } from "./zstd/types.js";

/** Where rows go: CSR arrays (a row's nonzeros at an offset) or dense rows (`nCols` per row). */
export type ScatterTarget =
  | { indices: Int32Array; data: Int32Array | Float32Array; dense?: undefined }
  | { dense: Float32Array; nCols: number; indices?: undefined; data?: undefined };

/** A tile's rows and where each goes. */
export interface ScatterJob {
  /** Type of the counts (as `DecodeOptions.values`; dense targets are float32 either way). */
  values: "int32" | "float32";
  /**
   * `(row, target, offset)` triples, rows non-decreasing: the tile's row `row` is written to
   * `targets[target]` at `offset` (a CSR target: its first nonzero's index; a dense target: the
   * index of its row's first column). A row may appear several times (every copy is written).
   */
  slots: Float64Array;
  targets: ScatterTarget[];
  /** Renumbers the columns (as `DecodeOptions.columns`: a permutation, checked by the caller). */
  columns?: Int32Array;
  /** Name of the tile for error messages. */
  object?: string;
}

/** This thread's chunk buffers, grown on demand and never shrunk. */
const chunk = {
  indices: new Int32Array(0),
  ints: new Int32Array(0),
  floats: new Float32Array(0),
};

function chunkBuffers(n: number, values: "int32" | "float32") {
  if (chunk.indices.length < n) {
    const size = Math.max(n, Math.ceil(chunk.indices.length * 1.5));
    chunk.indices = new Int32Array(size);
    chunk.ints = new Int32Array(0);
    chunk.floats = new Float32Array(0);
  }
  const size = chunk.indices.length;
  if (values === "float32") {
    if (chunk.floats.length < size) chunk.floats = new Float32Array(size);
    return { indices: chunk.indices, data: chunk.floats as Int32Array | Float32Array };
  }
  if (chunk.ints.length < size) chunk.ints = new Int32Array(size);
  return { indices: chunk.indices, data: chunk.ints as Int32Array | Float32Array };
}

/**
 * Decodes the whole tile (every chunk, with every check `decodeTile` makes, and its CRC) and
 * writes the rows `job.slots` names to their targets. `layout` is the tile's checked layout
 * (`inspectTile(bytes, { skipCrc: true })`: the CRC is checked here).
 */
export function scatterTileSync(
  bytes: Uint8Array,
  layout: TileLayout,
  zstd: ZstdBackend,
  job: ScatterJob,
): void {
  const { header, chunks, indptr } = layout;
  const object = job.object;
  const crc = checksum(bytes.subarray(HEADER_SIZE, header.totalSize));
  if (crc !== header.crc32)
    throw corrupt(object, "crc32", hex32(crc), hex32(header.crc32), "the bytes are damaged");
  const slots = job.slots;
  const nSlots = slots.length / 3;
  let most = 0;
  for (const ch of chunks) most = Math.max(most, ch.nnzHi - ch.nnzLo);
  const buf = chunkBuffers(Math.max(1, most), job.values);
  // CSR targets with a column map: each row renumbered as it is copied (one pass over it) rather
  // than the whole chunk renumbered after decoding and then copied.
  const copyMapped = nativeKernel()?.copyMapped;
  const csr = job.targets.every((t) => t.dense === undefined);
  const fused = job.columns !== undefined && copyMapped !== undefined && csr;
  // Every target CSR: each chunk's rows go out in one native call (with the renumbering when it
  // is fused), which leaves to the loop below only a slot it declines (to fail as the loop does).
  const scatterRows = nativeKernel()?.scatterRows;
  const rows =
    scatterRows !== undefined && csr && (job.columns === undefined || fused)
      ? {
          indices: job.targets.map((t) => t.indices!),
          data: job.targets.map((t) => t.data!),
          map: fused ? job.columns : undefined,
        }
      : undefined;
  let q = 0;
  for (let k = 0; k < chunks.length; k++) {
    const ch = chunks[k]!;
    const cx = chunkContext({
      bytes,
      layout,
      c0: 0,
      c1: header.nCells,
      indices: buf.indices,
      data: buf.data,
      base: ch.nnzLo,
      zstd,
      object,
    });
    decodeChunksInto(cx, k, k + 1, fused ? undefined : job.columns);
    if (rows !== undefined)
      q = scatterRows!(
        buf.indices,
        buf.data,
        indptr,
        ch.nnzLo,
        slots,
        q,
        ch.cellLo,
        ch.cellHi,
        rows.indices,
        rows.data,
        rows.map,
      );
    // Every slot of a row in this chunk: rows are sorted, chunks hold consecutive cells.
    for (; q < nSlots; q++) {
      const row = slots[3 * q]!;
      if (row >= ch.cellHi) break;
      if (row < ch.cellLo) throw badSlots(object, `row ${row} out of order`);
      const target = job.targets[slots[3 * q + 1]!];
      if (target === undefined) throw badSlots(object, `target ${slots[3 * q + 1]} missing`);
      const s = indptr[row]! - ch.nnzLo;
      const e = indptr[row + 1]! - ch.nnzLo;
      const at = slots[3 * q + 2]!;
      if (target.dense !== undefined) {
        if (at < 0 || at + target.nCols > target.dense.length) throw badSlots(object, `dense row at ${at}`);
        denseRow(target.dense, at, buf.indices, buf.data, s, e);
      } else {
        if (at < 0 || at + e - s > target.indices.length || at + e - s > target.data.length)
          throw badSlots(object, `row at ${at} of ${e - s} nonzeros`);
        if (fused) {
          if (!copyMapped!(target.indices, at, buf.indices, s, e, job.columns!))
            throw outsideColumnMap(object);
        } else copyRange(target.indices, at, buf.indices, s, e);
        copyRange(target.data, at, buf.data, s, e);
      }
    }
  }
  if (q < nSlots) throw badSlots(object, `row ${slots[3 * q]} beyond the tile's ${header.nCells} cells`);
}

function denseRow(
  out: Float32Array,
  base: number,
  indices: Int32Array,
  data: Int32Array | Float32Array,
  s: number,
  e: number,
): void {
  for (let j = s; j < e; j++) out[base + indices[j]!] = data[j]!;
}

/** Slots that do not fit the tile or their targets: a caller's bug, never the data's. */
function badSlots(object: string | undefined, what: string): DeltacellsError {
  return new DeltacellsError(`scatter slots for ${object ?? "a tile"} are inconsistent: ${what}`, {
    tag: "InternalError",
    object,
    field: "slots",
    found: what,
  });
}
