/**
 * The viewer's hover index (src/nearest.ts) against a scan over every cell, the pick the page made
 * before it: random clouds (clusters that leave most squares empty, cells on one spot, on a line,
 * without coordinates), random views (zoomed, rotated, stretched, flipped), pointers anywhere.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { mulberry32 } from "../../../test-utils/prng.js";
import { CellGrid, drawnPointSize } from "../src/nearest.js";
import { scanNearest as scan } from "./nearest-scan.js";

type Cloud = (n: number, rand: () => number) => { x: Float32Array; y: Float32Array };
const fill = (n: number, f: (i: number) => [number, number]) => {
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) [x[i], y[i]] = f(i);
  return { x, y };
};
const clouds: Record<string, Cloud> = {
  uniform: (n, r) => fill(n, () => [r() * 2 - 1, r() * 2 - 1]),
  // Three tight clusters and a far corner: most squares hold no cell.
  clusters: (n, r) =>
    fill(n, (i) => {
      const c = [
        [-0.8, -0.8],
        [0.7, 0.1],
        [0.1, 0.9],
        [10, 10],
      ][i % 4]!;
      return [c[0]! + (r() - 0.5) * 0.02, c[1]! + (r() - 0.5) * 0.02];
    }),
  // A coarse lattice with repeats: cells on the same spot and equally far ones (ties).
  lattice: (n, r) => fill(n, () => [Math.floor(r() * 8) / 4 - 1, Math.floor(r() * 8) / 4 - 1]),
  point: (n) => fill(n, () => [0.25, -0.5]),
  line: (n, r) => fill(n, () => [r() * 2 - 1, 0.5]),
  // Some cells without coordinates (never picked).
  gaps: (n, r) => fill(n, (i) => (i % 3 === 0 ? [Number.NaN, r()] : [r() * 2 - 1, r() * 2 - 1])),
};

/** A view: zoom, rotation (a quarter turn keeps lattice distances exact), stretch and flips. */
function view(r: () => number, exact: boolean): Float64Array {
  const zoom = exact ? 2 ** Math.floor(r() * 12) : 10 ** (r() * 5);
  const a = exact ? (Math.floor(r() * 4) * Math.PI) / 2 : r() * 2 * Math.PI;
  const [c, s] = exact ? [Math.round(Math.cos(a)), Math.round(Math.sin(a))] : [Math.cos(a), Math.sin(a)];
  const sx = exact ? 1 : 0.5 + r();
  const flip = r() < 0.5 ? -1 : 1;
  return Float64Array.of(
    zoom * c * sx,
    -zoom * s,
    r() * 800,
    flip * zoom * s * sx,
    flip * zoom * c,
    r() * 600,
  );
}

test("the grid's nearest cell is the scan's, for random clouds, views, pointers and radii (ties included)", () => {
  const rand = mulberry32(7);
  let hits = 0;
  let ties = 0;
  for (const [name, cloud] of Object.entries(clouds)) {
    for (const n of [0, 1, 2, 7, 100, 3000]) {
      const { x, y } = cloud(n, rand);
      const grid = CellGrid.build(x, y);
      for (let v = 0; v < 20; v++) {
        const exact = name === "lattice" || name === "point";
        const m = view(rand, exact);
        for (let k = 0; k < 40; k++) {
          // At a cell (or half-way between lattice cells, where ties are), or anywhere.
          let px = rand() * 1000 - 100;
          let py = rand() * 800 - 100;
          if (n > 0 && k % 2 === 0) {
            const i = Math.floor(rand() * n);
            const [jx, jy] = exact ? [m[0]! * 0.125 + m[1]! * 0.125, m[3]! * 0.125 + m[4]! * 0.125] : [0, 0];
            px = m[0]! * x[i]! + m[1]! * y[i]! + m[2]! + jx;
            py = m[3]! * x[i]! + m[4]! * y[i]! + m[5]! + jy;
          }
          const radius = exact ? 2 ** Math.floor(rand() * 10) : rand() * 60 + 0.5;
          const want = scan(x, y, m, px, py, radius);
          assert.equal(
            grid.nearest(m, px, py, radius),
            want,
            `${name} n=${n} view ${v} pointer ${px},${py} r=${radius}`,
          );
          if (want >= 0) hits++;
          // A tie: another cell at exactly the found one's distance (the lowest index must win).
          if (want >= 0) {
            const d = (i: number) =>
              (m[0]! * x[i]! + m[1]! * y[i]! + m[2]! - px) ** 2 +
              (m[3]! * x[i]! + m[4]! * y[i]! + m[5]! - py) ** 2;
            for (let i = want + 1; i < n; i++) if (d(i) === d(want)) ties++;
          }
        }
      }
    }
  }
  // The cases were not all misses, and ties were among them.
  assert.ok(hits > 1000, `${hits} hits`);
  assert.ok(ties > 100, `${ties} ties`);
});

test("the pick radius follows the drawn point: larger zoomed in, never below 1 px zoomed out", () => {
  assert.equal(drawnPointSize(5, 1), 5);
  assert.ok(Math.abs(drawnPointSize(5, 10) - (5 * Math.asinh(10)) / Math.asinh(1)) < 1e-12);
  assert.ok(drawnPointSize(5, 10) > 15);
  assert.equal(drawnPointSize(5, 0.5), 2.5);
  assert.equal(drawnPointSize(5, 0.01), 1);
});

test("the grid's cells inside a lasso are regl-scatterplot's own (its box, then its polygon test, over every cell)", async () => {
  // The plot's own test, as its lasso runs it on the points of its KDBush range over the box.
  const plot = (await import("regl-scatterplot/src/utils.js" as string)) as {
    getBBox(flat: number[]): [number, number, number, number];
    isValidBBox(box: [number, number, number, number]): boolean;
    isPointInPolygon(flat: number[], point: [number, number]): boolean;
  };
  const rand = mulberry32(11);
  let inside = 0;
  for (const [name, cloud] of Object.entries(clouds)) {
    for (const n of [0, 1, 100, 3000]) {
      const { x, y } = cloud(n, rand);
      const grid = CellGrid.build(x, y);
      for (let k = 0; k < 30; k++) {
        // A freeform loop (self-crossing at times) about a cell or anywhere, or a box's corners
        // on cells (lattice), where cells lie on its edges.
        const [cx, cy] = n > 0 && k % 2 === 0 ? [x[k % n]!, y[k % n]!] : [rand() * 2 - 1, rand() * 2 - 1];
        const flat: number[] = [];
        if (k % 5 === 4) flat.push(cx, cy, cx + 0.5, cy, cx + 0.5, cy + 0.5, cx, cy + 0.5);
        else
          for (let v = 0, m = 3 + Math.floor(rand() * 20); v < m; v++) {
            const a = (2 * Math.PI * v) / m + (k % 3 === 0 ? rand() * 3 : 0);
            const r = rand() * 0.6;
            flat.push(cx + r * Math.cos(a), cy + r * Math.sin(a));
          }
        const skip = k % 4 === 1 ? Uint8Array.from({ length: n }, () => (rand() < 0.3 ? 1 : 0)) : undefined;
        const box = plot.getBBox(flat);
        const want: number[] = [];
        if (plot.isValidBBox(box))
          for (let i = 0; i < n; i++) {
            const [px, py] = [x[i]!, y[i]!];
            if (skip?.[i] || px < box[0] || px > box[2] || py < box[1] || py > box[3]) continue;
            if (plot.isPointInPolygon(flat, [px, py])) want.push(i);
          }
        assert.deepEqual(grid.inPolygon(flat, skip), want, `${name} n=${n} polygon ${k}`);
        inside += want.length;
      }
    }
  }
  assert.ok(inside > 10_000, `${inside} cells inside`);
  // A polygon without area (a click's lasso of one or two points) holds no cell, as the plot's.
  const { x, y } = clouds.uniform!(100, rand);
  assert.deepEqual(CellGrid.build(x, y).inPolygon([0, 0, 0.5, 0.5]), []);
});
