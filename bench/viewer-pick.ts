/**
 * The viewer's hover pick (apps/viewer/src/nearest.ts) against the pass over every cell it
 * replaced, in this process, on the 12 Gaussian clusters of `bench/viewer-data.ts` (as the page
 * holds them: apps/viewer/src/normalise.ts), in a 840 x 580 px plot zoomed out and zoomed in 30x, the
 * pointer on a random cell each pick. CPU time of this thread (/proc/thread-self/schedstat), so
 * the ratio holds on a loaded machine; both must answer the same cell.
 *
 *   node --import tsx --conditions=source bench/viewer-pick.ts [--cells 200000,500000]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { CellGrid, drawnPointSize } from "../apps/viewer/src/nearest.js";
import { normalise } from "../apps/viewer/src/normalise.js";
import { scanNearest } from "../apps/viewer/test/nearest-scan.js";
import { mulberry32 } from "../test-utils/prng.js";
import { threadSched } from "./cpu.js";
import { clusters } from "./viewer-data.js";

const { values } = parseArgs({ options: { cells: { type: "string", default: "200000,500000" } } });

/** CPU ms of this thread so far. */
const cpu = () => threadSched().cpu * 1000;

/** The cells of `bench/viewer-data.ts`, placed as the page places them. */
function cloud(n: number): { x: Float32Array; y: Float32Array } {
  const { umap } = clusters(n);
  return normalise(
    umap.filter((_, i) => i % 2 === 0),
    umap.filter((_, i) => i % 2 === 1),
  );
}

const [w, h] = [840, 580];
const pointSize = 1.5; // the page's, above 100,000 cells
const rows: string[] = [];
for (const n of values.cells!.split(",").map(Number)) {
  const { x, y } = cloud(n);
  let t = cpu();
  const grid = CellGrid.build(x, y);
  const buildMs = cpu() - t;
  for (const zoom of [1, 30]) {
    // The plot's map at this zoom, centred on cell 0 (regl-scatterplot's: y grows downwards).
    const k = (h / 2) * zoom;
    const m = Float64Array.of(k, 0, w / 2 - k * x[0]!, 0, -k, h / 2 + k * y[0]!);
    const radius = drawnPointSize(pointSize, zoom) + 4;
    const rand = mulberry32(11);
    const pointers = Array.from({ length: 200 }, () => {
      const i = Math.floor(rand() * n);
      return [m[0]! * x[i]! + m[2]! + rand() * 4 - 2, m[4]! * y[i]! + m[5]! + rand() * 4 - 2] as const;
    });
    const want = pointers.map(([px, py]) => scanNearest(x, y, m, px, py, radius));
    t = cpu();
    for (const [px, py] of pointers) scanNearest(x, y, m, px, py, radius);
    const scanMs = (cpu() - t) / pointers.length;
    const reps = 50;
    let found = 0;
    t = cpu();
    for (let r = 0; r < reps; r++) for (const [px, py] of pointers) found += grid.nearest(m, px, py, radius);
    const gridMs = (cpu() - t) / (reps * pointers.length);
    const same = pointers.every(([px, py], j) => grid.nearest(m, px, py, radius) === want[j]);
    if (!same || found === 0) throw new Error(`the grid and the scan disagree at ${n} cells, zoom ${zoom}`);
    rows.push(
      `| ${n.toLocaleString("en-US")} | ${zoom}x | ${radius.toFixed(1)} | ${buildMs.toFixed(1)} | ${(scanMs * 1000).toFixed(0)} | ${(gridMs * 1000).toFixed(1)} | ${(scanMs / gridMs).toFixed(0)}x |`,
    );
  }
}
console.log(
  `load average ${loadavg()
    .map((v) => v.toFixed(1))
    .join(
      " ",
    )}\n\n| cells | zoom | pick radius (px) | grid build (ms CPU) | scan per pick (us CPU) | grid per pick (us CPU) | scan / grid |\n|--:|--:|--:|--:|--:|--:|--:|\n${rows.join("\n")}`,
);
