/**
 * What running HDF5 in a worker thread (under the watchdog) costs: reads every row block, var and
 * obs of an .h5ad through the worker-backed tree and through the same tree in this thread,
 * alternating, and prints the ratio of the medians. (Memory: the worker adds one V8 isolate, about
 * 90 MB of RSS under tsx; compare `openInput` runs in separate processes, not here, where both
 * trees are loaded.)
 *
 *   node --import tsx --conditions=source bench/hdf5-worker.ts [file.h5ad] [rounds] [blockCells]
 */
import { openAnnData } from "../packages/anndata/src/anndata.js";
import { openHdf5 } from "../packages/anndata/src/hdf5-thread.js";
import { openHdf5InThread } from "../packages/anndata/src/hdf5-tree.js";
import type { Tree } from "../packages/anndata/src/tree.js";

const file = process.argv[2] ?? "data/pbmc68k-counts/pbmc68k_counts.h5ad";
const rounds = Number(process.argv[3] ?? 5);
const blockCells = Number(process.argv[4] ?? 4096);

async function readAll(open: () => Promise<Tree>): Promise<number> {
  const started = performance.now();
  const src = await openAnnData(await open(), "h5ad", {});
  try {
    await src.var();
    await src.obs();
    let nnz = 0;
    for await (const b of src.rowBlocks({ blockCells })) nnz += b.indices.length;
    if (nnz === 0) throw new Error("no nonzeros read");
  } finally {
    await src.close();
  }
  return performance.now() - started;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const worker: number[] = [];
const inThread: number[] = [];
// one of each first: loads h5wasm in both places, so the rounds compare reads, not start-up
await readAll(() => openHdf5(file));
await readAll(() => openHdf5InThread(file));
for (let r = 0; r < rounds; r++) {
  worker.push(await readAll(() => openHdf5(file)));
  inThread.push(await readAll(() => openHdf5InThread(file)));
}
console.log(
  `${file}: worker ${median(worker).toFixed(1)} ms, this thread ${median(inThread).toFixed(1)} ms, ` +
    `ratio ${(median(worker) / median(inThread)).toFixed(2)} (median of ${rounds}, blocks of ${blockCells} cells)`,
);
