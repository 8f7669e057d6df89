/**
 * Decoding on the calling thread into buffers kept for reuse: what a dataset reader does without
 * threads. Each tile is lent as a {@link RecycledTile}; released buffers decode the next tiles.
 */
import { checkColumns } from "./columns.js";
import { cellRange, type DecodeOptions, decodeLayoutSync, indptrScratch, valuesOf } from "./decode.js";
import { inspectTile, type TileLayout } from "./layout.js";
import {
  BufferRecycler,
  type LentBytes,
  lendBytes,
  outputBytes,
  outputViews,
  type RecycledTile,
  recycledTile,
} from "./recycle.js";
import { type ScatterJob, scatterTileSync } from "./scatter.js";
import { loadZstd } from "./zstd/load.js";

/** A decoder on this thread whose tiles are views of recycled buffers (see {@link RecycledTile}). */
export interface LocalDecoder {
  decode(bytes: Uint8Array, opts?: Omit<DecodeOptions, "out">): Promise<RecycledTile>;
  /** Memory to read tile bytes into (given back once the tile is decoded). */
  lend(size: number): LentBytes;
  /** Decodes a whole tile and writes its rows to their slots (see `scatterTileSync`). */
  scatter(bytes: Uint8Array, layout: TileLayout, job: ScatterJob): Promise<void>;
  /** `decode` applies the `columns` option. */
  readonly renumbers: true;
}

export function createLocalDecoder(): LocalDecoder {
  // Plain memory, detached on release: a view kept past release() reads as empty instead of
  // showing a later tile's numbers.
  const buffers = new BufferRecycler((n) => new ArrayBuffer(n), true);
  const inputs = new BufferRecycler((n) => new ArrayBuffer(n));
  return {
    renumbers: true,
    lend: (size) => lendBytes(inputs, size),
    async scatter(bytes, layout, job) {
      const zstd = await loadZstd();
      if (job.columns !== undefined) checkColumns(job.columns, layout.header.nGenes, job.object);
      scatterTileSync(bytes, layout, zstd, job);
    },
    async decode(bytes, opts = {}) {
      const zstd = await loadZstd();
      // Sizes come from a checked layout (CRC included), never from an unchecked header field;
      // the same layout is decoded, so the tile is parsed and checksummed once.
      const layout = inspectTile(bytes, { object: opts.object, indptrBuffer: indptrScratch(bytes) });
      const [c0, c1] = cellRange(opts.cells, layout.header.nCells, opts.object);
      const nnz = layout.indptr[c1]! - layout.indptr[c0]!;
      const buffer = buffers.acquire(outputBytes(c1 - c0, nnz));
      try {
        const out = outputViews(buffer, c1 - c0, nnz, valuesOf(opts));
        const tile = decodeLayoutSync(bytes, layout, zstd, { ...opts, out });
        return recycledTile(tile, () => buffers.release(buffer), opts.object);
      } catch (err) {
        buffers.release(buffer);
        throw err;
      }
    },
  };
}
