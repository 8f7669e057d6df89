/**
 * The marker-gene test: Student's t tail against closed forms (1 and 2 degrees of freedom, the
 * normal limit), Benjamini-Hochberg against a worked example, and `rankGenes` against Welch's test
 * computed here from the values themselves (two passes: mean, then squared deviations). The
 * comparison with scanpy itself is apps/viewer/test/viewer-scanpy.conformance.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { mulberry32 } from "../../../test-utils/prng.js";
import {
  addRowMoments,
  benjaminiHochberg,
  emptyMoments,
  rankGenes,
  studentTwoSided,
  subtractMoments,
} from "../src/index.js";

/** erfc by its continued fraction (Lentz), good to ~1e-15 for x >= 0.5; a series below. */
function erfc(x: number): number {
  if (x < 0.5) {
    let term = x;
    let sum = x;
    for (let n = 1; n < 60; n++) {
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
    }
    return 1 - (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(x) = exp(-x²)/sqrt(pi) · 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...))))
  let f = x;
  let c = x;
  let d = 0;
  for (let n = 1; n < 500; n++) {
    const a = n / 2;
    d = x + a * d;
    d = 1 / d;
    c = x + a / c;
    const step = c * d;
    f *= step;
    if (Math.abs(step - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
}

const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-300);

test("Student's t two-sided tail equals the closed forms for 1 and 2 degrees of freedom and the normal limit", () => {
  for (const t of [0.01, 0.3, 1, 2.5, 7, 40, 1e3, 1e6]) {
    const cauchy = 1 - (2 / Math.PI) * Math.atan(t); // df = 1
    const two = 1 - t / Math.sqrt(t * t + 2); // df = 2
    // Far in the tail the closed forms cancel: 2/(pi t) and 2/t² are their leading terms.
    const cauchyTail = t > 1e3 ? (2 / Math.PI) * Math.atan(1 / t) : cauchy;
    const twoTail = t > 10 ? -Math.expm1(-0.5 * Math.log1p(2 / (t * t))) : two;
    assert.ok(
      rel(studentTwoSided(t, 1), cauchyTail) < 1e-11,
      `df 1, t ${t}: ${studentTwoSided(t, 1)} vs ${cauchyTail}`,
    );
    assert.ok(
      rel(studentTwoSided(-t, 2), twoTail) < 1e-9,
      `df 2, t ${t}: ${studentTwoSided(-t, 2)} vs ${twoTail}`,
    );
  }
  for (const t of [0.5, 1.96, 4, 10, 30]) {
    const normal = erfc(t / Math.SQRT2);
    assert.ok(
      // t differs from the normal by about t⁴/(4 df) relatively: 2e-9 here at most.
      rel(studentTwoSided(t, 1e14), normal) < 1e-7,
      `df 1e14, t ${t}: ${studentTwoSided(t, 1e14)} vs ${normal}`,
    );
  }
  assert.equal(studentTwoSided(0, 5), 1);
  assert.equal(studentTwoSided(Number.POSITIVE_INFINITY, 5), 0);
  assert.ok(Number.isNaN(studentTwoSided(Number.NaN, 5)));
});

test("Benjamini-Hochberg adjusts as statsmodels' fdr_bh: p·m/rank, the running minimum from the top, at most 1", () => {
  const p = Float64Array.from([0.01, 0.04, 0.03, 0.5, 0.04, 1]);
  // Sorted: 0.01 0.03 0.04 0.04 0.5 1 -> ·6/rank: 0.06 0.09 0.08 0.06 0.6 1 -> running min from the top.
  assert.deepEqual(
    Array.from(benjaminiHochberg(p), (v) => Number(v.toFixed(12))),
    [0.06, 0.06, 0.06, 0.6, 0.06, 1],
  );
});

test("rankGenes is Welch's t-test per gene on log1p(counts per 10,000), with the fold change, fractions and adjusted p-values", () => {
  const rand = mulberry32(3);
  const nCells = 80;
  const nGenes = 12;
  // Counts: gene 0 higher in the group, gene 1 never expressed, gene 2 only in the rest.
  const inGroup = (c: number) => c < 25;
  const counts: number[][] = Array.from({ length: nCells }, (_, c) =>
    Array.from({ length: nGenes }, (_, g) => {
      if (g === 1 || (g === 2 && inGroup(c))) return 0;
      const lambda = g === 0 && inGroup(c) ? 9 : 2;
      return rand() < 0.6 ? Math.floor(rand() * lambda) : 0;
    }),
  );
  const x = counts.map((row) => {
    const total = row.reduce((a, b) => a + b, 0);
    return row.map((v) => (total > 0 ? Math.log1p((v / total) * 1e4) : 0));
  });
  // As rows, the way the page reads them: all cells, then the group's.
  const rows = (keep: (c: number) => boolean) => {
    const indptr = [0];
    const indices: number[] = [];
    const data: number[] = [];
    for (let c = 0; c < nCells; c++) {
      if (!keep(c)) continue;
      counts[c]!.forEach((v, g) => {
        if (v) {
          indices.push(g);
          data.push(v);
        }
      });
      indptr.push(indices.length);
    }
    return { indptr, indices, data, n: indptr.length - 1 };
  };
  const all = emptyMoments(nGenes);
  const everyone = rows(() => true);
  addRowMoments(all, everyone, everyone.n, 1e4);
  const group = emptyMoments(nGenes);
  const selected = rows(inGroup);
  addRowMoments(group, selected, selected.n, 1e4);
  const table = rankGenes(group, subtractMoments(all, group));

  const stat = (cells: number[], g: number) => {
    const v = cells.map((c) => x[c]![g]!);
    const mean = v.reduce((a, b) => a + b, 0) / v.length;
    const variance = v.reduce((a, b) => a + (b - mean) ** 2, 0) / (v.length - 1);
    return { mean, variance, n: v.length, pts: v.filter((y) => y > 0).length / v.length };
  };
  const a = Array.from({ length: nCells }, (_, c) => c).filter(inGroup);
  const b = Array.from({ length: nCells }, (_, c) => c).filter((c) => !inGroup(c));
  for (let g = 0; g < nGenes; g++) {
    const s1 = stat(a, g);
    const s2 = stat(b, g);
    const se2 = s1.variance / s1.n + s2.variance / s2.n;
    const t =
      se2 === 0 ? (s1.mean === s2.mean ? 0 : Number.POSITIVE_INFINITY) : (s1.mean - s2.mean) / Math.sqrt(se2);
    const df =
      se2 === 0
        ? 1
        : se2 ** 2 / ((s1.variance / s1.n) ** 2 / (s1.n - 1) + (s2.variance / s2.n) ** 2 / (s2.n - 1));
    assert.ok(
      Math.abs(table.scores[g]! - t) < 1e-9 * Math.max(1, Math.abs(t)),
      `gene ${g}: score ${table.scores[g]} vs ${t}`,
    );
    assert.ok(rel(table.pvals[g]!, t === 0 ? 1 : studentTwoSided(t, df)) < 1e-9, `gene ${g} p`);
    const lfc = Math.log2((Math.expm1(s1.mean) + 1e-9) / (Math.expm1(s2.mean) + 1e-9));
    assert.ok(Math.abs(table.logFoldChanges[g]! - lfc) < 1e-9, `gene ${g} lfc`);
    assert.equal(table.pts[g], s1.pts);
    assert.equal(table.ptsRest[g], s2.pts);
  }
  // Never expressed: score 0, p 1 (scanpy's NaN rule), not a residue of the subtraction.
  assert.equal(table.scores[1], 0);
  assert.equal(table.pvals[1], 1);
  assert.equal(table.order[0], 0, "the gene raised in the group ranks first");
  assert.equal(table.order.at(-1), 2, "the gene only the rest expresses ranks last");
  assert.deepEqual(Array.from(table.pvalsAdj), Array.from(benjaminiHochberg(table.pvals)));
  assert.throws(() => rankGenes({ ...group, n: 1 }, group), /at least 2 cells/);
});
