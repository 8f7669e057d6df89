/** `Dataset.cells()`: a range of cells as CSR, copied out of the tiles that hold them. */
import { copyRange } from "../codec/copy.js";
import type { DecodedTile } from "../codec/decode.js";
import { DeltacellsError } from "../errors.js";
import type { Dataset } from "./reader.js";
import type { ReadOptions, TileReader } from "./tile-io.js";

/**
 * Consecutive cells' rows of the matrix in CSR form, as {@link Dataset.cells} returns them: a
 * decoded tile's shape without its `nnz` (`indptr` starts at 0).
 */
export type CellRows = Omit<DecodedTile, "nnz">;

/** Cells `a .. b-1` of `ds` as CSR, fetching each tile they touch once (through `tiles`). */
export async function readCells(
  ds: Dataset,
  tiles: TileReader,
  a: number,
  b: number,
  opts: ReadOptions = {},
): Promise<CellRows> {
  if (!(Number.isSafeInteger(a) && Number.isSafeInteger(b) && 0 <= a && a <= b && b <= ds.nCells)) {
    throw new DeltacellsError(`cell range ${a}:${b} is not within 0:${ds.nCells} (${ds.url})`, {
      tag: "InvalidInput",
      object: ds.url,
      expected: `0 <= a <= b <= ${ds.nCells}`,
      found: [a, b],
    });
  }
  const float = opts.values === "float32";
  if (a === b) {
    return {
      nCells: 0,
      nGenes: ds.nGenes,
      indptr: new Float64Array(1),
      indices: new Int32Array(0),
      data: float ? new Float32Array(0) : new Int32Array(0),
    };
  }
  const first = ds.locate(a).tile;
  const last = ds.locate(b - 1).tile;
  const parts = await Promise.all(
    Array.from({ length: last - first + 1 }, async (_, k) => {
      const t = first + k;
      const start = ds.tileStart(t);
      const lo = Math.max(a, start) - start;
      const hi = Math.min(b, ds.limits[t]!) - start;
      const whole = lo === 0 && hi === ds.manifest.tile_cells[t];
      return tiles.decodeFetched(
        t,
        await tiles.fetchTile(t, opts.signal),
        whole ? opts : { ...opts, cells: [lo, hi] },
      );
    }),
  );
  // The decoded tiles are lent: the answer is a copy the caller keeps.
  try {
    return concatRows(parts, ds.nGenes, float);
  } finally {
    for (const p of parts) p.release();
  }
}

/** The parts copied into new arrays (always: the parts are lent tiles, about to be released). */
function concatRows(parts: DecodedTile[], nGenes: number, float: boolean): CellRows {
  let nCells = 0;
  let nnz = 0;
  for (const p of parts) {
    nCells += p.nCells;
    nnz += p.indptr[p.nCells]! - p.indptr[0]!;
  }
  const indptr = new Float64Array(nCells + 1);
  const indices = new Int32Array(nnz);
  const data = float ? new Float32Array(nnz) : new Int32Array(nnz);
  let row = 0;
  let at = 0;
  for (const p of parts) {
    const base = p.indptr[0]!;
    const end = p.indptr[p.nCells]!;
    for (let r = 1; r <= p.nCells; r++) indptr[row + r] = at + p.indptr[r]! - base;
    copyRange(indices, at, p.indices, base, end);
    copyRange(data, at, p.data, base, end);
    row += p.nCells;
    at += end - base;
  }
  return { nCells, nGenes, indptr, indices, data };
}
