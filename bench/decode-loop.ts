/**
 * A child of bench/codec.ts: decodes the tiles of a folder with `decodeTileSync` into reused
 * outputs, over and over for a given time, and prints its rate as JSON. bench/codec.ts runs one
 * alone and then two at once: their ratio is the machine's own 2-core scaling for this work, with
 * no pool in between (separate processes share nothing but the cores, caches and memory), the
 * reference the pool's 2-worker ratios can reach at best in the same run.
 *
 * Usage: node --import tsx --conditions=source bench/decode-loop.ts TILES_DIR SECONDS
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeTileSync, loadZstd } from "@deltacells/core";
import { inspectTile } from "../packages/deltacells/src/codec/layout.js";

const [dir, seconds] = [process.argv[2]!, Number(process.argv[3] ?? 3)];
await loadZstd();
const tiles = readdirSync(dir)
  .sort()
  .map((f) => new Uint8Array(readFileSync(join(dir, f))));
const layouts = tiles.map((t) => inspectTile(t));
const maxNnz = Math.max(...layouts.map((l) => l.header.nnz));
const maxCells = Math.max(...layouts.map((l) => l.header.nCells));
const nnz = layouts.reduce((a, l) => a + l.header.nnz, 0);
const out = {
  indptr: new Float64Array(maxCells + 1),
  indices: new Int32Array(maxNnz),
  data: new Int32Array(maxNnz),
};
const pass = () => {
  for (const t of tiles) decodeTileSync(t, { out });
};
for (let i = 0; i < 2; i++) pass();
const t0 = performance.now();
let done = 0;
while (performance.now() - t0 < seconds * 1000) {
  pass();
  done += nnz;
}
console.log(JSON.stringify({ nnzPerSecond: done / ((performance.now() - t0) / 1000) }));
