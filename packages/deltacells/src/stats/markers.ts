/**
 * Marker genes of a group of cells against a reference (the rest of the cells, or another group),
 * from per-gene moments of x = ln(1 + 10,000 · count / cell total): the test scanpy's
 * `rank_genes_groups(method="t-test")` runs on `log1p(normalize_total(target_sum=1e4))`.
 *
 * Per gene: Welch's t statistic and two-sided p-value (scipy's `ttest_ind_from_stats`, unequal
 * variances, variances with one degree of freedom removed), a NaN score taken as 0 and a NaN
 * p-value as 1 (scanpy's rule); Benjamini-Hochberg adjusted p-values over every gene (statsmodels'
 * `fdr_bh`); the log2 fold change of the means back on the count scale, log2((expm1(m1) + 1e-9) /
 * (expm1(m2) + 1e-9)) (scanpy's definition and epsilon); the fraction of cells expressing the
 * gene in each group (`pts`, `pts_rest`). Genes come ranked by decreasing score.
 */
import { DeltacellsError } from "../errors.js";
import type { Moments } from "./read.js";
import { studentTwoSided } from "./student-t.js";

/** scanpy's epsilon in the fold change. */
const FOLD_EPSILON = 1e-9;

/** The table of {@link rankGenes}, one entry per gene, in gene order; `order` ranks them. */
export interface MarkerTable {
  /** Genes by decreasing score (ties by gene index). */
  order: Int32Array;
  scores: Float64Array;
  pvals: Float64Array;
  pvalsAdj: Float64Array;
  logFoldChanges: Float64Array;
  /** Fraction of the group's cells expressing each gene, and of the reference's. */
  pts: Float64Array;
  ptsRest: Float64Array;
  meanGroup: Float64Array;
  meanRest: Float64Array;
  nGroup: number;
  nRest: number;
}

/**
 * The moments of `total` minus `part` (the rest of the cells, when `part` is a subset of `total`).
 * A gene no cell of the rest expresses gets exact zeros, not the residue of a subtraction, so it
 * scores 0 as it would from its own cells.
 */
export function subtractMoments(total: Moments, part: Moments): Moments {
  const g = total.sum.length;
  const sum = new Float64Array(g);
  const sumSq = new Float64Array(g);
  const nnz = new Float64Array(g);
  for (let j = 0; j < g; j++) {
    const k = total.nnz[j]! - part.nnz[j]!;
    nnz[j] = k;
    if (k <= 0) continue;
    sum[j] = Math.max(0, total.sum[j]! - part.sum[j]!);
    sumSq[j] = Math.max(0, total.sumSq[j]! - part.sumSq[j]!);
  }
  return { n: total.n - part.n, sum, sumSq, nnz };
}

/** Mean and variance (n - 1 in the denominator) of each gene; variances below 0 from rounding are 0. */
function meanVar(m: Moments, mean: Float64Array, variance: Float64Array): void {
  const n = m.n;
  for (let j = 0; j < mean.length; j++) {
    const s = m.sum[j]!;
    mean[j] = s / n;
    variance[j] = m.nnz[j] === 0 ? 0 : Math.max(0, (m.sumSq[j]! - (s * s) / n) / (n - 1));
  }
}

/**
 * Benjamini-Hochberg adjusted p-values (statsmodels' `multipletests(method="fdr_bh")`): p sorted
 * ascending, p_(i) · m / i, the running minimum from the largest down, at most 1.
 */
export function benjaminiHochberg(pvals: Float64Array): Float64Array {
  const m = pvals.length;
  const order = Int32Array.from({ length: m }, (_, i) => i).sort((a, b) => pvals[a]! - pvals[b]! || a - b);
  const out = new Float64Array(m);
  let running = 1;
  for (let r = m - 1; r >= 0; r--) {
    const i = order[r]!;
    running = Math.min(running, (pvals[i]! * m) / (r + 1));
    out[i] = running;
  }
  return out;
}

/**
 * Ranks every gene for `group` against `reference` (each gene's moments over each group's cells:
 * the rest as {@link subtractMoments} of every cell's and the group's, or another group's). Both
 * need at least two cells (scanpy refuses a group of one: its variance is undefined).
 */
export function rankGenes(group: Moments, reference: Moments): MarkerTable {
  for (const [what, m] of [
    ["group", group],
    ["reference", reference],
  ] as const) {
    if (!(m.n >= 2)) {
      throw new DeltacellsError(`a t-test needs at least 2 cells in each group; the ${what} has ${m.n}`, {
        tag: "InvalidInput",
        field: what,
        expected: ">= 2 cells",
        found: m.n,
      });
    }
  }
  const g = group.sum.length;
  if (reference.sum.length !== g) {
    throw new DeltacellsError(`the groups have moments of ${g} and ${reference.sum.length} genes`, {
      tag: "InvalidInput",
      field: "reference",
      expected: g,
      found: reference.sum.length,
    });
  }
  const meanGroup = new Float64Array(g);
  const varGroup = new Float64Array(g);
  const meanRest = new Float64Array(g);
  const varRest = new Float64Array(g);
  meanVar(group, meanGroup, varGroup);
  meanVar(reference, meanRest, varRest);
  const n1 = group.n;
  const n2 = reference.n;
  const scores = new Float64Array(g);
  const pvals = new Float64Array(g);
  const logFoldChanges = new Float64Array(g);
  const pts = new Float64Array(g);
  const ptsRest = new Float64Array(g);
  for (let j = 0; j < g; j++) {
    const v1 = varGroup[j]! / n1;
    const v2 = varRest[j]! / n2;
    const se2 = v1 + v2;
    let df = (se2 * se2) / ((v1 * v1) / (n1 - 1) + (v2 * v2) / (n2 - 1));
    if (Number.isNaN(df)) df = 1;
    const t = (meanGroup[j]! - meanRest[j]!) / Math.sqrt(se2);
    const p = studentTwoSided(t, df);
    scores[j] = Number.isNaN(t) ? 0 : t;
    pvals[j] = Number.isNaN(p) ? 1 : p;
    logFoldChanges[j] = Math.log2(
      (Math.expm1(meanGroup[j]!) + FOLD_EPSILON) / (Math.expm1(meanRest[j]!) + FOLD_EPSILON),
    );
    pts[j] = group.nnz[j]! / n1;
    ptsRest[j] = reference.nnz[j]! / n2;
  }
  const order = Int32Array.from({ length: g }, (_, j) => j).sort((a, b) => scores[b]! - scores[a]! || a - b);
  return {
    order,
    scores,
    pvals,
    pvalsAdj: benjaminiHochberg(pvals),
    logFoldChanges,
    pts,
    ptsRest,
    meanGroup,
    meanRest,
    nGroup: n1,
    nRest: n2,
  };
}

/**
 * Accumulates into `into` the moments of cells given as rows (CSR over genes, counts): each
 * row's total is its own sum, x = ln(1 + 10,000 · count / total). `columnOf[j]`, when given,
 * renames a row's gene j (into the order of `into`).
 */
export function addRowMoments(
  into: Moments & { nnz: Float64Array },
  rows: { indptr: ArrayLike<number>; indices: ArrayLike<number>; data: ArrayLike<number> },
  nRows: number,
  targetSum: number,
  columnOf?: ArrayLike<number>,
): void {
  const { indptr, indices, data } = rows;
  for (let r = 0; r < nRows; r++) {
    const lo = indptr[r]!;
    const hi = indptr[r + 1]!;
    let total = 0;
    for (let k = lo; k < hi; k++) total += data[k]!;
    const scale = total > 0 ? targetSum / total : 0;
    for (let k = lo; k < hi; k++) {
      const v = data[k]!;
      if (v === 0) continue;
      const j = columnOf ? columnOf[indices[k]!]! : indices[k]!;
      const x = Math.log1p(v * scale);
      into.sum[j]! += x;
      into.sumSq[j]! += x * x;
      into.nnz[j]!++;
    }
  }
  into.n += nRows;
}

/** Moments of no cells over `nGenes` genes, to add rows to. */
export function emptyMoments(nGenes: number): Moments & { nnz: Float64Array } {
  return {
    n: 0,
    sum: new Float64Array(nGenes),
    sumSq: new Float64Array(nGenes),
    nnz: new Float64Array(nGenes),
  };
}
