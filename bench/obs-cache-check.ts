/**
 * What the obs cache's integrity check costs: opening a cached 1,000,000-row column the first
 * time in a process (the file read, its SHA-256 computed and compared with the record beside it,
 * the Arrow table decoded) against opening it again with the same localizer (read and decoded,
 * the hash skipped: each file is hashed once per process).
 *
 *   node --import tsx --conditions=source bench/obs-cache-check.ts [--cells 1000000] [--reps 15]
 *
 * One dataset (in memory) with a float64 column and the barcodes as the index (a string column);
 * both localized once into a temporary cache folder (removed afterwards), so every timed open
 * reads a warm file. Within each repetition the checked and the unchecked open of a column
 * alternate; medians of `--reps`. For scale, the fetch the check saves when it fails: the
 * column localized from the shards into an empty folder (median of 3).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type DatasetSource, encodeTile, writeDataset } from "@deltacells/core";
import { cacheLocalizer, openDataset, zstdCompressor } from "@deltacells/core/node";
import { MemoryStore } from "@deltacells/storage";
import { obsCachePath } from "../packages/deltacells/src/obs/cache-node.js";

const { values: args } = parseArgs({
  options: { cells: { type: "string", default: "1000000" }, reps: { type: "string", default: "15" } },
});
const N = Number(args.cells);
const REPS = Number(args.reps);
const TILE = 4096;

/** N cells of one gene (a count every 50th cell): the matrix is not what is measured. */
const source: DatasetSource = {
  format: "h5ad",
  location: "synthetic",
  matrixPath: "X",
  nCells: N,
  nGenes: 1,
  var: async () => ({ indexName: null, index: ["g0"], columns: [] }),
  obs: async () => ({
    indexName: "barcode",
    index: Array.from({ length: N }, (_, i) => `CELL${String(i).padStart(8, "0")}-1`),
    columns: [
      { name: "score", kind: "numeric", values: Float64Array.from({ length: N }, (_, i) => Math.sin(i)) },
    ],
  }),
  async *rowBlocks() {
    for (let a = 0; a < N; a += TILE) {
      const n = Math.min(TILE, N - a);
      const cells = Array.from({ length: n }, (_, i) => ((a + i) % 50 === 0 ? 1 : 0));
      const indptr = new Float64Array(n + 1);
      for (let i = 0; i < n; i++) indptr[i + 1] = indptr[i]! + cells[i]!;
      const nnz = indptr[n]!;
      yield {
        rowStart: a,
        nRows: n,
        indptr,
        indices: new Int32Array(nnz),
        data: new Int32Array(nnz).fill(1),
      };
    }
  },
};

const store = new MemoryStore();
await writeDataset(source, store, {
  encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
  compress: zstdCompressor(3),
  tileSize: TILE,
});
const cacheDir = mkdtempSync(join(tmpdir(), "deltacells-bench-obs-check-"));
const columns = ["score", "barcode"];
const warm = await openDataset(store, { obsLocalizer: cacheLocalizer() });
await warm.obs(columns, { cacheDir });
const fingerprint = warm.manifest.obs_fingerprint!;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const rows: string[] = [];
for (const name of columns) {
  const bytes = readFileSync(obsCachePath(cacheDir, fingerprint, name)).length;
  const checked: number[] = [];
  const unchecked: number[] = [];
  for (let r = 0; r < REPS + 1; r++) {
    // a new localizer: its first open of the file hashes it
    const ds = await openDataset(store, { obsLocalizer: cacheLocalizer() });
    await ds.obsSchema();
    let t = performance.now();
    await ds.obs([name], { cacheDir });
    const first = performance.now() - t;
    t = performance.now();
    await ds.obs([name], { cacheDir });
    const again = performance.now() - t;
    if (r === 0) continue; // untimed: the first pass pays for loading the modules
    checked.push(first);
    unchecked.push(again);
  }
  const fetches: number[] = [];
  for (let r = 0; r < 3; r++) {
    const empty = mkdtempSync(join(tmpdir(), "deltacells-bench-obs-fetch-"));
    const ds = await openDataset(store, { obsLocalizer: cacheLocalizer() });
    await ds.obsSchema();
    const t = performance.now();
    await ds.obs([name], { cacheDir: empty });
    fetches.push(performance.now() - t);
    rmSync(empty, { recursive: true, force: true });
  }
  const c = median(checked);
  const u = median(unchecked);
  rows.push(
    `| ${name} | ${(bytes / 1e6).toFixed(1)} MB | ${c.toFixed(1)} ms | ${u.toFixed(1)} ms | ${(c - u).toFixed(1)} ms | ${(c / u).toFixed(2)}x | ${median(fetches).toFixed(0)} ms |`,
  );
}
rmSync(cacheDir, { recursive: true, force: true });
console.log(`${N.toLocaleString("en-US")} cells in ${Math.ceil(N / TILE)} tiles; medians of ${REPS}\n`);
console.log(
  "| column | file | first open (hashed) | later open | the check | ratio | fetch from the shards |",
);
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) console.log(r);
console.log(
  `\nload average at the end: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(", ")}`,
);
