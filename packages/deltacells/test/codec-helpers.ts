/** Seeded random CSR matrices for the codec tests (not a test file itself). */
import assert from "node:assert/strict";
import type { DecodedTile, TileRows } from "@deltacells/core";

/** A small seeded PRNG, so every failing case can be replayed. */
export { mulberry32 as prng } from "../../../test-utils/prng.js";

export interface RandomCsrOptions {
  nCells: number;
  nGenes: number;
  /** Mean nonzeros per non-empty cell. */
  perCell?: number;
  /** Fraction of cells with no nonzeros. */
  emptyRate?: number;
  /** Per-nonzero probability of a count above 65535. */
  bigValueRate?: number;
  /** Per-nonzero probability of a gap above 65535 (needs nGenes > 65536). */
  bigGapRate?: number;
}

/** A CSR matrix with sorted unique indices and small, skewed counts, plus optional exceptions. */
export function randomCsr(
  rnd: () => number,
  o: RandomCsrOptions,
): TileRows & { indptr: number[]; indices: Int32Array; data: Int32Array } {
  const indptr = [0];
  const idx: number[] = [];
  const dat: number[] = [];
  const perCell = o.perCell ?? 20;
  for (let c = 0; c < o.nCells; c++) {
    if (rnd() >= (o.emptyRate ?? 0.1)) {
      const k = Math.floor(rnd() * 2 * perCell) + 1;
      let g = Math.floor(rnd() * 3);
      for (let i = 0; i < k && g < o.nGenes; i++) {
        idx.push(g);
        const big = rnd() < (o.bigValueRate ?? 0);
        dat.push(
          big
            ? 65535 + Math.floor(rnd() * 2 ** 30) + (rnd() < 0.5 ? 1 : 2 ** 30)
            : 1 + Math.floor(rnd() * rnd() * 40),
        );
        const jump = rnd() < (o.bigGapRate ?? 0) ? 65536 + Math.floor(rnd() * 70000) : 0;
        g += 1 + Math.floor(rnd() * rnd() * rnd() * 50) + jump;
      }
    }
    indptr.push(idx.length);
  }
  return { nGenes: o.nGenes, indptr, indices: Int32Array.from(idx), data: Int32Array.from(dat) };
}

/** Asserts that `d` is rows `[c0, c1)` of `rows`, values compared as numbers. */
export function assertDecodedEquals(
  d: DecodedTile,
  rows: TileRows,
  c0 = 0,
  c1 = rows.indptr.length - 1,
): void {
  const base = rows.indptr[c0]! - rows.indptr[0]!;
  const end = rows.indptr[c1]! - rows.indptr[0]!;
  assert.equal(d.nCells, c1 - c0);
  assert.equal(d.nnz, end - base);
  assert.equal(d.nGenes, rows.nGenes);
  const indptr = Array.from({ length: c1 - c0 + 1 }, (_, i) => rows.indptr[c0 + i]! - rows.indptr[c0]!);
  assert.deepEqual(Array.from(d.indptr), indptr);
  assert.deepEqual(Array.from(d.indices), Array.from(rows.indices.subarray(base, end)));
  // float32 is exact only up to 2^24: compare with the rounded counts.
  const round = d.data instanceof Float32Array ? Math.fround : Number;
  assert.deepEqual(Array.from(d.data), Array.from(rows.data.subarray(base, end), round));
}

/** A tile's contents as the golden JSON files and the Python decoder spell them: indptr from 0. */
export interface TileContents {
  n_cells: number;
  n_genes: number;
  nnz: number;
  indptr: number[];
  indices: number[];
  data: number[];
}

/** The contents `rows` must decode to, in the form of {@link TileContents}. */
export function tileContents(rows: TileRows): TileContents {
  const indptr = Array.from(rows.indptr, (v) => v - rows.indptr[0]!);
  const nnz = indptr[indptr.length - 1]!;
  return {
    n_cells: indptr.length - 1,
    n_genes: rows.nGenes,
    nnz,
    indptr,
    indices: Array.from(rows.indices.subarray(0, nnz)),
    data: Array.from(rows.data.subarray(0, nnz), Number),
  };
}
