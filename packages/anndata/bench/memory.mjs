/**
 * Peak memory and rate of streaming row blocks from large inputs (not a test). Runs the compiled
 * package under plain node: tsx would transpile h5wasm's 5 MB inlined module and add ~600 MB of
 * peak RSS that production never sees.
 *   conformance/.venv/bin/python conformance/anndata_synthetic.py /tmp/anndata-bench 20000 20000
 *   npx tsc -b packages/anndata
 *   node packages/anndata/bench/memory.mjs /tmp/anndata-bench/csr.h5ad [FORMAT|-] [BLOCK_CELLS]
 * Prints wall time, nonzeros per second and the process's peak RSS (VmHWM) before and after.
 */

import { readFileSync } from "node:fs";
import { openInput } from "../dist/node.js";

const [path, format, blockArg] = process.argv.slice(2);
if (path === undefined) throw new Error("usage: memory.mjs PATH [FORMAT|-] [BLOCK_CELLS]");
const blockCells = Number(blockArg ?? 4096);

const peak = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) / 1024;
const before = peak();
const t0 = performance.now();
const src = await openInput(path, format && format !== "-" ? { format } : {});
let nnz = 0;
let blocks = 0;
for await (const b of src.rowBlocks({ blockCells })) {
  nnz += b.data.length;
  blocks++;
}
await src.close();
const s = (performance.now() - t0) / 1000;
console.log(
  JSON.stringify({
    path,
    format: src.format,
    cells: src.nCells,
    genes: src.nGenes,
    nnz,
    blockCells,
    blocks,
    seconds: Number(s.toFixed(2)),
    nnzPerSecond: Math.round(nnz / s),
    startPeakRssMB: Math.round(before),
    peakRssMB: Math.round(peak()),
  }),
);
