/**
 * The Node loader against the decode ceiling, in one run: cells per second of `createLoader` (shuffle
 * on, CSR batches, each released) from a local folder, and time to first batch, as a ratio to
 * (a) the pool decoding the same tiles from memory (the codec's full-decode ceiling: `threads`
 * workers, tiles in flight, each released) and (b) the dataset reader's `ds.tiles()` from the same
 * folder. Runs are interleaved and the medians reported, with the load average (the machine is
 * shared: ratios, not absolute figures, are what to read).
 *
 *   node --import tsx --conditions=source bench/loader-node.ts [--cells 20000] [--threads 1,2] [--reps 3]
 *
 * The synthetic dataset (bench/synthetic-source.ts: 33,538 genes, ~1,500 expressed per cell) is
 * written once to bench/out/loader-<cells>-l<level>/ (zstd level 9 by default: decoding speed hardly
 * depends on the level, writing at 19 takes long).
 */
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createLoader, createTilePool, tileKey, writeDataset } from "@deltacells/core";
import { openDataset, zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { syntheticSource } from "./synthetic-source.js";

const { values: args } = parseArgs({
  options: {
    cells: { type: "string", default: "20000" },
    threads: { type: "string", default: "1,2" },
    reps: { type: "string", default: "3" },
    batch: { type: "string", default: "4096" },
    level: { type: "string", default: "9" },
    "buffer-tiles": { type: "string", default: "8" },
  },
});
const nCells = Number(args.cells);
const REPS = Number(args.reps);
const BATCH = Number(args.batch);
const dir = join(fileURLToPath(new URL("./out/", import.meta.url)), `loader-${nCells}-l${args.level}`);

if (!existsSync(join(dir, "manifest.json"))) {
  const pool = createTilePool({ threads: 2 });
  const t0 = performance.now();
  await writeDataset(syntheticSource({ nCells, nGenes: 33_538, genesPerCell: 1500 }), new FolderStore(dir), {
    encoder: pool,
    compress: zstdCompressor(9),
    level: Number(args.level),
    inFlight: 4,
  });
  await pool.close();
  console.log(`wrote ${dir} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function ceiling(threads: number, tiles: Uint8Array[]): Promise<number> {
  const pool = createTilePool({ threads });
  try {
    await (await pool.decode(tiles[0]!)).release(); // start the workers
    const t0 = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < tiles.length) (await pool.decode(tiles[next++]!)).release();
    };
    await Promise.all(Array.from({ length: threads + 2 }, worker));
    return (performance.now() - t0) / 1000;
  } finally {
    await pool.close();
  }
}

async function reader(threads: number): Promise<number> {
  await using ds = await openDataset(dir, { threads });
  (await ds.tile(0)).release();
  const t0 = performance.now();
  for await (const { tile } of ds.tiles()) tile.release();
  return (performance.now() - t0) / 1000;
}

async function loader(
  threads: number,
  epoch: number,
): Promise<{ seconds: number; first: number; cells: number }> {
  await using ds = await openDataset(dir, { threads });
  (await ds.tile(0)).release();
  const l = await createLoader(ds, {
    batchSize: BATCH,
    seed: 1,
    epoch,
    bufferTiles: Number(args["buffer-tiles"]),
    memoryCap: 1024 * 1024 * 1024,
  });
  const t0 = performance.now();
  let first = 0;
  let cells = 0;
  for await (const b of l) {
    if (first === 0) first = performance.now() - t0;
    cells += b.size;
    b.release();
  }
  return { seconds: (performance.now() - t0) / 1000, first: first / 1000, cells };
}

const ds0 = await openDataset(dir);
const tiles = Array.from(
  { length: ds0.nTiles },
  (_, t) => new Uint8Array(readFileSync(join(dir, tileKey(t)))),
);
const nnz = ds0.manifest.tile_nnz.reduce((a, b) => a + b, 0);
console.log(
  `${ds0.nCells} cells x ${ds0.nGenes} genes, ${(nnz / ds0.nCells).toFixed(0)} nonzeros per cell, ${ds0.nTiles} tiles of ${ds0.manifest.tile_size} cells; batch ${BATCH}, shuffle on, bufferTiles ${args["buffer-tiles"]}; load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}`,
);
for (const threads of args.threads.split(",").map(Number)) {
  const c: number[] = [];
  const r: number[] = [];
  const l: number[] = [];
  const f: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    c.push(await ceiling(threads, tiles));
    r.push(await reader(threads));
    const run = await loader(threads, rep);
    if (run.cells < ds0.nCells) throw new Error(`the loader yielded ${run.cells} cells`);
    l.push(run.seconds);
    f.push(run.first);
  }
  const rate = (s: number) => `${Math.round(ds0.nCells / s).toLocaleString("en")} cells/s`;
  console.log(`threads ${threads}:`);
  console.log(`  pool decode from memory (ceiling)  ${rate(median(c)).padStart(18)}`);
  console.log(
    `  ds.tiles() from the folder         ${rate(median(r)).padStart(18)}  ${(median(c) / median(r)).toFixed(2)}x ceiling`,
  );
  console.log(
    `  createLoader, shuffled batches     ${rate(median(l)).padStart(18)}  ${(median(c) / median(l)).toFixed(2)}x ceiling, ${(median(r) / median(l)).toFixed(2)}x ds.tiles(); first batch after ${(median(f) * 1000).toFixed(0)} ms`,
  );
}
console.log(
  `load average at the end: ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}`,
);
