/**
 * Where a reused loader's epoch loses against the floor (the decode writing each tile's rows once
 * into batch memory, `ceiling Nt into memory` in run.ts), by CPU seconds per epoch, which move far
 * less with the machine's load than wall time. Interleaved, repeated, medians:
 *
 *  - `floor`: tiles in memory, each tile's rows written in tile order into 4 batch-sized shared
 *    buffers (run.ts's row);
 *  - `floor renumbered`: the same with the columns renumbered through a permutation (as the
 *    loader's default source gene order);
 *  - `floor shuffled`: the same rows written at shuffled places of their buffer (each row's place
 *    drawn as a shuffled batch's);
 *  - `floor renumbered, shuffled`: both, the work per nonzero the default loader's output needs;
 *  - `loader` (reused, its second epoch on): as run.ts's `folder Nt reused`; `loader dataset
 *    order` (no renumbering), `loader no shuffle`, `loader dataset order, no shuffle`.
 *
 *   npm run build
 *   node --import tsx bench/loader/floor-gap.ts DATASET [--threads 2] [--reps 5] [--values int32|float32]
 */
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { createLoader, type LoaderOptions, nnzOf } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";
import { floorPass, permutation, type TileLayout } from "./floor.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    threads: { type: "string", default: "2" },
    reps: { type: "string", default: "5" },
    "batch-size": { type: "string", default: "4096" },
    values: { type: "string", default: "int32" },
  },
});
const THREADS = Number(args.threads);
const REPS = Number(args.reps);
const BATCH = Number(args["batch-size"]);
const VALUES = args.values as "int32" | "float32";
const FOLDER = positionals[0]!;

interface Sample {
  seconds: number;
  cpu: number;
}

const cpuSince = (from: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1e6;
};

const probe = await openDataset(FOLDER);
const nCells = probe.nCells;
const nGenes = probe.nGenes;
const tiles = await Promise.all(Array.from({ length: probe.nTiles }, (_, t) => probe.tileBytes(t)));
const layouts: TileLayout[] = tiles.map((b, t) => probe.tileLayout(t, b));
const nnz = nnzOf(probe.manifest);
await probe.close();

const COLUMNS = permutation(nGenes, 7);

async function floor(how: { renumbered?: boolean; shuffled?: boolean }): Promise<Sample> {
  const pass = await floorPass(tiles, layouts, nCells, nnz, {
    threads: THREADS,
    batchSize: BATCH,
    values: VALUES,
    shuffled: how.shuffled ?? false,
    ...(how.renumbered && { columns: COLUMNS }),
  });
  return { seconds: pass.seconds, cpu: pass.cpu };
}

/** The mean of a reused loader's epochs 1 and 2 (epoch 0 warms it). */
async function loader(extra: LoaderOptions): Promise<Sample> {
  const ds = await openDataset(FOLDER);
  const l = await createLoader(ds, {
    batchSize: BATCH,
    seed: 1,
    threads: THREADS,
    output: "csr",
    values: VALUES,
    ...extra,
  });
  const samples: Sample[] = [];
  for (let epoch = 0; epoch < 3; epoch++) {
    l.setEpoch(epoch);
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    for await (const batch of l) batch.release();
    if (epoch > 0) samples.push({ seconds: (performance.now() - t0) / 1000, cpu: cpuSince(c0) });
  }
  await l.close();
  await ds.close();
  return {
    seconds: (samples[0]!.seconds + samples[1]!.seconds) / 2,
    cpu: (samples[0]!.cpu + samples[1]!.cpu) / 2,
  };
}

const ROWS: [string, () => Promise<Sample>][] = [
  ["floor", () => floor({})],
  ["floor renumbered", () => floor({ renumbered: true })],
  ["floor shuffled", () => floor({ shuffled: true })],
  ["floor renumbered, shuffled", () => floor({ renumbered: true, shuffled: true })],
  ["loader", () => loader({})],
  ["loader dataset order", () => loader({ columnOrder: "dataset" })],
  ["loader no shuffle", () => loader({ shuffle: false })],
  ["loader dataset order, no shuffle", () => loader({ columnOrder: "dataset", shuffle: false })],
];

const uptime = () => execFileSync("uptime", { encoding: "utf8" }).trim();
console.log(
  `${nCells} cells x ${nGenes} genes, ${nnz} nonzeros, ${tiles.length} tiles; ${THREADS} threads, ${VALUES}`,
);
console.log(`uptime before: ${uptime()}`);
const got = new Map<string, Sample[]>(ROWS.map(([name]) => [name, []]));
for (let rep = 0; rep < REPS; rep++) {
  // The order turns with each repetition, so no row always runs after the same one.
  for (let k = 0; k < ROWS.length; k++) {
    const [name, run] = ROWS[(k + rep) % ROWS.length]!;
    got.get(name)!.push(await run());
  }
  console.error(`rep ${rep + 1}/${REPS} done`);
}
console.log(`uptime after:  ${uptime()}`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const floorCpu = median(got.get("floor")!.map((s) => s.cpu));
const floorWall = median(got.get("floor")!.map((s) => s.seconds));
console.log(
  "| row | CPU s per epoch (median) | vs the floor's CPU | wall s (median) | vs the floor's wall |",
);
console.log("|---|---|---|---|---|");
for (const [name] of ROWS) {
  const s = got.get(name)!;
  const cpu = median(s.map((x) => x.cpu));
  const wall = median(s.map((x) => x.seconds));
  console.log(
    `| ${name} | ${cpu.toFixed(3)} | ${(floorCpu / cpu).toFixed(2)}x | ${wall.toFixed(3)} | ${(floorWall / wall).toFixed(2)}x |`,
  );
}
// The default loader against the floor doing the same per-nonzero work (renumbered, shuffled).
const like = got.get("floor renumbered, shuffled")!;
const dflt = got.get("loader")!;
console.log(
  `loader against the floor renumbered, shuffled: ${(median(like.map((x) => x.cpu)) / median(dflt.map((x) => x.cpu))).toFixed(2)}x by CPU, ${(median(like.map((x) => x.seconds)) / median(dflt.map((x) => x.seconds))).toFixed(2)}x by wall`,
);
