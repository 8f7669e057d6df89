/**
 * The Node loader against the decode ceiling, in one run: cells per second of `createLoader` (shuffle
 * on, CSR batches, each released) from a local folder, in the second epoch of a loader (the steady
 * state; the first epoch and its time to first batch are given too), on its slot path (decoders
 * write rows straight into the batches, the default) and on its copying path (whole tiles decoded,
 * rows copied on the loader's thread: what a decoder without `scatter` gets; the loader before the
 * slot path), as a ratio to
 * (a) the pool decoding the same tiles from memory (the codec's full-decode ceiling: `threads`
 * workers, tiles in flight, each released) and (b) the dataset reader's `ds.tiles()` from the same
 * folder. Runs are interleaved and the medians reported, with the load average (the machine is
 * shared: ratios, not absolute figures, are what to read).
 *
 *   node --import tsx --conditions=source bench/loader-node.ts [--cells 20000] [--threads 1,2] [--reps 3] [--dir DATASET]
 *
 * The synthetic dataset (bench/synthetic-source.ts: 33,538 genes, ~1,500 expressed per cell) is
 * written once to bench/out/loader-<cells>-l<level>/ (zstd level 9 by default: decoding speed hardly
 * depends on the level, writing at 19 takes long); `--dir` reads an existing dataset instead (e.g.
 * bench/loader's 100,000 cells, `$TMPDIR/deltacells-bench-loader/dataset`).
 */
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createLoader, createTilePool, nnzOf, writeDataset } from "@deltacells/core";
import { tileKey } from "@deltacells/core/internal";
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
    dir: { type: "string" },
  },
});
const nCells = Number(args.cells);
const REPS = Number(args.reps);
const BATCH = Number(args.batch);
const dir =
  args.dir ?? join(fileURLToPath(new URL("./out/", import.meta.url)), `loader-${nCells}-l${args.level}`);

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

/** CPU seconds of this process (every thread: the workers' decoding included). */
function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function ceiling(threads: number, tiles: Uint8Array[]): Promise<{ wall: number; cpu: number }> {
  const pool = createTilePool({ threads });
  try {
    await (await pool.decode(tiles[0]!)).release(); // start the workers
    const c0 = cpuSeconds();
    const t0 = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < tiles.length) (await pool.decode(tiles[next++]!)).release();
    };
    await Promise.all(Array.from({ length: threads + 2 }, worker));
    return { wall: (performance.now() - t0) / 1000, cpu: cpuSeconds() - c0 };
  } finally {
    await pool.close();
  }
}

async function reader(threads: number): Promise<{ wall: number; cpu: number }> {
  await using ds = await openDataset(dir, { threads });
  (await ds.tile(0)).release();
  const c0 = cpuSeconds();
  const t0 = performance.now();
  for await (const { tile } of ds.tiles()) tile.release();
  return { wall: (performance.now() - t0) / 1000, cpu: cpuSeconds() - c0 };
}

type Path = "slots" | "copy";

/** A dataset on a pool of `threads`; on the copying path its decoder cannot scatter. */
async function openOn(threads: number, path: Path) {
  if (path === "slots") return openDataset(dir, { threads });
  const pool = createTilePool({ threads });
  const decoder = { threads, renumbers: true, decode: pool.decode };
  const ds = await openDataset(dir, { decoder });
  return Object.assign(ds, {
    async [Symbol.asyncDispose]() {
      await pool.close();
    },
  });
}

async function loader(
  threads: number,
  epoch: number,
  columnOrder: "source" | "dataset",
  path: Path,
): Promise<{ seconds: number; cpu: number; first: number; firstEpoch: number; cells: number }> {
  await using ds = await openOn(threads, path);
  (await ds.tile(0)).release();
  const l = await createLoader(ds, {
    batchSize: BATCH,
    seed: 1,
    epoch,
    bufferTiles: Number(args["buffer-tiles"]),
    memoryCap: 1024 * 1024 * 1024,
    columnOrder,
  });
  // Two epochs: the first includes warming up (the decoder's buffers are allocated as the first
  // windows are decoded), the second is the steady state of a training run.
  const epochs = [];
  for (let e = 0; e < 2; e++) {
    const c0 = cpuSeconds();
    const t0 = performance.now();
    let first = 0;
    let cells = 0;
    for await (const b of l) {
      if (first === 0) first = performance.now() - t0;
      cells += b.size;
      b.release();
    }
    epochs.push({
      seconds: (performance.now() - t0) / 1000,
      cpu: cpuSeconds() - c0,
      first: first / 1000,
      cells,
    });
  }
  return { ...epochs[1]!, first: epochs[0]!.first, firstEpoch: epochs[0]!.seconds };
}

const ds0 = await openDataset(dir);
const tiles = Array.from(
  { length: ds0.nTiles },
  (_, t) => new Uint8Array(readFileSync(join(dir, tileKey(t)))),
);
const nnz = nnzOf(ds0.manifest);
console.log(
  `${ds0.nCells} cells x ${ds0.nGenes} genes, ${(nnz / ds0.nCells).toFixed(0)} nonzeros per cell, ${ds0.nTiles} tiles of ${ds0.manifest.tile_size} cells; batch ${BATCH}, shuffle on, bufferTiles ${args["buffer-tiles"]}; load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}`,
);
for (const threads of args.threads.split(",").map(Number)) {
  const c: { wall: number; cpu: number }[] = [];
  const r: { wall: number; cpu: number }[] = [];
  type Run = { wall: number; cpu: number; first: number; firstEpoch: number };
  const variants = [
    ["source", "slots"],
    ["source", "copy"],
    ["dataset", "slots"],
    ["dataset", "copy"],
  ] as const;
  const runs = new Map<string, Run[]>(variants.map(([o, p]) => [`${o} ${p}`, []]));
  for (let rep = 0; rep < REPS; rep++) {
    c.push(await ceiling(threads, tiles));
    r.push(await reader(threads));
    // Interleaved: each path right after the other, in alternating order.
    const order = rep % 2 === 0 ? variants : [...variants].reverse();
    for (const [columns, path] of order) {
      const run = await loader(threads, rep, columns, path);
      if (run.cells < ds0.nCells) throw new Error(`the loader yielded ${run.cells} cells`);
      runs
        .get(`${columns} ${path}`)!
        .push({ wall: run.seconds, cpu: run.cpu, first: run.first, firstEpoch: run.firstEpoch });
    }
  }
  const wall = (xs: { wall: number }[]) => median(xs.map((x) => x.wall));
  const cpu = (xs: { cpu: number }[]) => median(xs.map((x) => x.cpu));
  const rate = (s: number) => `${Math.round(ds0.nCells / s).toLocaleString("en")} cells/s`;
  const row = (label: string, xs: { wall: number; cpu: number }[], extra = "") =>
    console.log(
      `  ${label.padEnd(40)} ${rate(wall(xs)).padStart(16)} ${(wall(c) / wall(xs)).toFixed(2)}x ceiling | CPU ${cpu(xs).toFixed(2)} s, ${(cpu(c) / cpu(xs)).toFixed(2)}x ceiling's${extra}`,
    );
  console.log(`threads ${threads}:`);
  row("pool decode from memory (ceiling)", c);
  row("ds.tiles() from the folder", r);
  for (const [columns, path] of variants) {
    const xs = runs.get(`${columns} ${path}`)!;
    const first = median(xs.map((x) => x.first));
    const firstEpoch = median(xs.map((x) => x.firstEpoch));
    row(
      `createLoader, ${columns} columns, ${path === "slots" ? "slot path" : "copying path"}`,
      xs,
      `; first epoch ${rate(firstEpoch)}, its first batch after ${(first * 1000).toFixed(0)} ms`,
    );
  }
}
console.log(
  `load average at the end: ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}`,
);
