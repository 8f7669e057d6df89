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
 *  - `loader` (reused, its second epoch on): as run.ts's `folder Nt reused`; `loader dataset
 *    order` (no renumbering), `loader no shuffle`, `loader dataset order, no shuffle`.
 *
 *   npm run build
 *   node --import tsx bench/loader/floor-gap.ts DATASET [--threads 2] [--reps 5] [--values int32|float32]
 */
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { createLoader, createTilePool, type Dataset, type LoaderOptions } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";

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

type TileLayout = ReturnType<Dataset["tileLayout"]>;

const probe = await openDataset(FOLDER);
const nCells = probe.nCells;
const nGenes = probe.nGenes;
const tiles = await Promise.all(Array.from({ length: probe.nTiles }, (_, t) => probe.tileBytes(t)));
const layouts: TileLayout[] = tiles.map((b, t) => probe.tileLayout(t, b));
const nnz = probe.manifest.tile_nnz.reduce((a, b) => a + b, 0);
await probe.close();

/** A pseudo-random permutation of 0..n-1 (xorshift, fixed seed). */
function permutation(n: number, seed: number): Int32Array {
  const p = Int32Array.from({ length: n }, (_, i) => i);
  let s = seed >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    const j = (s >>> 0) % (i + 1);
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}

const COLUMNS = permutation(nGenes, 7);

async function floor(mode: "plain" | "renumbered" | "shuffled"): Promise<Sample> {
  const pool = createTilePool({ threads: THREADS });
  const most = Math.max(...layouts.map((l) => l.indptr[l.header.nCells]!));
  const size = Math.ceil((1.1 * nnz * BATCH) / nCells) + most;
  const shared = () => new Int32Array(new SharedArrayBuffer(4 * size));
  const lanes = Array.from({ length: 4 }, () => ({ target: { indices: shared(), data: shared() }, at: 0 }));
  const job = (t: number, lane: (typeof lanes)[number]) => {
    const l = layouts[t]!;
    const n = l.header.nCells;
    if (lane.at + l.indptr[n]! > size) lane.at = 0;
    const slots = new Float64Array(3 * n);
    if (mode === "shuffled") {
      // Each row at a shuffled place of the tile's span: the rows' lengths laid out in a shuffled
      // order, as the loader's rows land in shuffled batches (the span here is the tile's own).
      const order = permutation(n, t + 1);
      const at = new Float64Array(n);
      let o = lane.at;
      for (let k = 0; k < n; k++) {
        const r = order[k]!;
        at[r] = o;
        o += l.indptr[r + 1]! - l.indptr[r]!;
      }
      for (let r = 0; r < n; r++) {
        slots[3 * r] = r;
        slots[3 * r + 2] = at[r]!;
      }
    } else {
      for (let r = 0; r < n; r++) {
        slots[3 * r] = r;
        slots[3 * r + 2] = lane.at + l.indptr[r]!;
      }
    }
    lane.at += l.indptr[n]!;
    return {
      values: VALUES,
      slots,
      targets: [lane.target],
      ...(mode === "renumbered" && { columns: COLUMNS }),
    };
  };
  for (const lane of lanes)
    for (let at = 0; at < size; at += 1024) lane.target.indices[at] = lane.target.data[at] = 0;
  await pool.scatter(tiles[0]!, layouts[0]!, job(0, lanes[0]!));
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let next = 0;
  const run = async (lane: (typeof lanes)[number]) => {
    while (next < tiles.length) {
      const t = next++;
      await pool.scatter(tiles[t]!, layouts[t]!, job(t, lane));
    }
  };
  await Promise.all(lanes.map(run));
  const sample = { seconds: (performance.now() - t0) / 1000, cpu: cpuSince(c0) };
  await pool.close();
  return sample;
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
  ["floor", () => floor("plain")],
  ["floor renumbered", () => floor("renumbered")],
  ["floor shuffled", () => floor("shuffled")],
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
