/**
 * What the page should show, computed here from the dataset's tiles (read in Node by
 * `@deltacells/core`, a path independent of the companion and the statistics the page reads):
 * counts, the moments of any cells, their marker genes, the dot plot and violins per category.
 */
import {
  addRowMoments,
  emptyMoments,
  type MarkerTable,
  type Moments,
  rankGenes,
  subtractMoments,
} from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";

export async function truthOf(dir: string) {
  const ds = await openDataset(dir);
  const names = (await ds.geneNames())!;
  const order = (await ds.geneOrder()) ?? Int32Array.from({ length: ds.nGenes }, (_, j) => j);
  const rows = await ds.cells(0, ds.nCells);
  /** Gene names by source column (the statistics' order). */
  const nameOfColumn: string[] = [];
  names.forEach((n, j) => {
    nameOfColumn[order[j]!] = n;
  });
  const total = (c: number) => {
    let t = 0;
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++) t += Number(rows.data[k]);
    return t;
  };
  /** Gene `name`'s count in every cell. */
  const counts = (name: string) => {
    const j = names.indexOf(name);
    const out = new Float64Array(ds.nCells);
    for (let c = 0; c < ds.nCells; c++)
      for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
        if (rows.indices[k] === j) out[c] = Number(rows.data[k]);
    return out;
  };
  /** log1p(counts per 10,000) of gene `name` in every cell. */
  const logNormalised = (name: string) => {
    const v = counts(name);
    return v.map((x, c) => (x ? Math.log1p((x / total(c)) * 1e4) : 0));
  };
  const moments = (cells: readonly number[]): Moments => {
    const m = emptyMoments(ds.nGenes);
    const indptr = [0];
    const indices: number[] = [];
    const data: number[] = [];
    for (const c of cells) {
      for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++) {
        indices.push(rows.indices[k]!);
        data.push(Number(rows.data[k]));
      }
      indptr.push(indices.length);
    }
    addRowMoments(m, { indptr, indices, data }, cells.length, 1e4, order);
    return m;
  };
  const all = Array.from({ length: ds.nCells }, (_, c) => c);
  const everyCell = moments(all);
  /** The marker table of `cells` against the rest, or against `reference` cells. */
  const markers = (cells: readonly number[], reference?: readonly number[]): MarkerTable =>
    rankGenes(moments(cells), reference ? moments(reference) : subtractMoments(everyCell, moments(cells)));
  return { ds, names, order, rows, nameOfColumn, total, counts, logNormalised, moments, markers };
}

/** numpy's `quantile(x, p)` (linear interpolation). */
export function quantile(values: number[], p: number): number {
  const x = [...values].sort((a, b) => a - b);
  const h = (x.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(x.length - 1, lo + 1);
  return x[lo]! + (h - lo) * (x[hi]! - x[lo]!);
}

/** Relative closeness for statistics that add the same numbers in another order. */
export function close(a: number, b: number, tol = 1e-9): boolean {
  if (a === b) return true;
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b));
}
