/**
 * The training loader against its ceilings and against the fastest Python loader, all
 * in one run on the same cells, batch size 4096, shuffle on:
 *
 *  (a) `createLoader` from a local folder, 1 and 2 decoding threads, against the codec's full
 *      decode of the same tiles on a pool of as many threads (tile bytes already in memory, 4 in
 *      flight, the pool's own recycled outputs: nothing but decoding);
 *  (b) the same loader from a local S3 server (`--s3-server gofakes3`, the default when Go can build
 *      it: bench/loader/s3-server; or `moto`, the tests' moto_server), against the folder and
 *      against the server's own raw GET throughput (every tile object fetched, 4 in flight,
 *      nothing decoded);
 *  (c) the Python package's `ds.batches()` as scipy CSR float32 batches with their cell_type
 *      codes, through shared memory (`transport="shm"`) and through the pipe, against the Node
 *      loader alone (the same `deltacells stream` with its output on /dev/null);
 *  (d) annbatch 0.3.1 over its recommended store (a pre-shuffled sharded zarr DatasetCollection
 *      written by its own writer from the same .h5ad), scipy CSR batches with obs, as its README
 *      shows it.
 *
 *   npm run build     # the packages' dist, as a user runs them (tsx only compiles this script)
 *   node --import tsx bench/loader/run.ts --annbatch-python "$(/path/to/annbatch-py311.sh)"
 *
 * (With `--conditions=source` the loader rows run the TypeScript sources instead: every pool worker
 * then compiles them through tsx before its first tile, which adds about a second to each first
 * batch. (c) always runs the built command, bin/deltacells.js.)
 *
 * Options: --dir DIR (inputs, made once: default $TMPDIR/deltacells-bench-loader), --cells N and
 * --genes-per-cell K (when generating), --reps N (each row measured N times, interleaved; the
 * median is reported), --skip a,b,c,d,e,m (e: the elastic order with 8 lanes on one rank against
 * the default order, second epochs, 2 threads; m: the mixing report of the loader's batches at
 * these settings, printed after the table), --threads 1,2 (the loader rows of (a)).
 * Cells per second count every cell of one epoch from the moment the loader (or process) starts,
 * so the time to the first batch is included; the time to the first batch is given separately,
 * and so is the rate after it (the steady state: worker start-up and the first shuffle window
 * left out). `folder Nt reused` is the second epoch of the same loader (its pool started, its
 * batch buffers touched: what training sees from the second epoch on, and like the ceiling, whose
 * pool is started before it is timed); goal (a) is judged on it. `folder Nt copying` is the same
 * loader on its copying path (the loader before the slot path: whole tiles decoded, rows copied
 * on its thread), interleaved with `folder Nt`.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { Agent, request } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  createLoader,
  createTilePool,
  type Dataset,
  type LoaderOptions,
  nnzOf,
  openDataset as openStoreDataset,
} from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";
import { openStore, S3Store, type Store } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { AwsClient } from "aws4fetch";
import { floorPass, permutation, type TileLayout } from "./floor.js";
import { MIXING_HEADER, measureMixing, mixingCells } from "./mixing-measure.js";
import { type S3ServerKind, startBenchS3Server } from "./s3-server.js";

const REPO = resolve(import.meta.dirname, "../..");
const PY = join(REPO, "conformance/.venv/bin/python");
const { values: args } = parseArgs({
  options: {
    dir: { type: "string", default: join(tmpdir(), "deltacells-bench-loader") },
    cells: { type: "string", default: "100000" },
    reps: { type: "string", default: "1" },
    skip: { type: "string", default: "" },
    "annbatch-python": { type: "string" },
    "batch-size": { type: "string", default: "4096" },
    "s3-server": { type: "string" },
    "genes-per-cell": { type: "string", default: "1500" },
    threads: { type: "string", default: "1,2" },
  },
});
const THREADS = args.threads!.split(",").map(Number);
const S3_SERVER = args["s3-server"] as S3ServerKind | undefined;
if (S3_SERVER !== undefined && S3_SERVER !== "moto" && S3_SERVER !== "gofakes3")
  throw new Error(`--s3-server ${S3_SERVER}: expected moto or gofakes3`);
const DIR = args.dir!;
const BATCH = Number(args["batch-size"]);
const REPS = Number(args.reps);
const skip = new Set(args.skip!.split(",").filter(Boolean));
const FOLDER = join(DIR, "dataset");
const ANNBATCH = join(DIR, "annbatch.zarr");

interface Row {
  cells: number;
  seconds: number;
  firstBatch: number;
  /** Cells per second after the first batch (worker start-up and the first window left out). */
  steady: number;
  /**
   * CPU seconds of the epoch, every thread (the Python rows: every process; the loader and GET rows:
   * this node process, the S3 server not included). Less sensitive to the load than seconds.
   */
  cpu?: number;
  /** The S3 rows: CPU seconds the S3 server used meanwhile. */
  serverCpu?: number;
}
const rows = new Map<string, Row[]>();
function record(name: string, r: Row): void {
  rows.set(name, [...(rows.get(name) ?? []), r]);
  console.error(
    `  ${name.padEnd(22)} ${(r.cells / r.seconds).toFixed(0).padStart(8)} cells/s, first batch ${r.firstBatch.toFixed(2)} s, then ${r.steady.toFixed(0)} cells/s${r.cpu === undefined ? "" : `, CPU ${r.cpu.toFixed(2)} s`}${r.serverCpu === undefined ? "" : `, server CPU ${r.serverCpu.toFixed(2)} s`}`,
  );
}
function median(name: string): Row | undefined {
  const rs = rows.get(name);
  if (!rs?.length) return undefined;
  const by = [...rs].sort((a, b) => a.cells / a.seconds - b.cells / b.seconds);
  return by[(by.length - 1) >> 1];
}
const rate = (r: Row | undefined) => (r ? r.cells / r.seconds : Number.NaN);
/** This process's CPU seconds (every thread) since `from`. */
const cpuSince = (from: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1e6;
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");

function run(cmd: string, argv: string[], env: Record<string, string> = {}): string {
  return execFileSync(cmd, argv, {
    cwd: REPO,
    env: { ...process.env, ...env },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
}

/** The inputs, made once: the .h5ad, the dataset converted from it, annbatch's collection. */
function prepare(): void {
  if (!existsSync(join(DIR, "meta.json"))) {
    console.error(`generating ${args.cells} cells in ${DIR} ...`);
    run(PY, [
      "bench/loader/generate.py",
      DIR,
      "--cells",
      args.cells!,
      "--genes-per-cell",
      args["genes-per-cell"]!,
    ]);
  }
  if (!existsSync(join(FOLDER, "manifest.json"))) {
    console.error("converting to a deltacells dataset ...");
    run(process.execPath, [
      "packages/cli/bin/deltacells.js",
      "convert",
      join(DIR, "cells.h5ad"),
      FOLDER,
      "--quiet",
      "--overwrite",
    ]);
  }
  if (args["annbatch-python"] && !skip.has("d") && !existsSync(`${ANNBATCH}.complete`)) {
    console.error("writing annbatch's collection ...");
    run(args["annbatch-python"], [
      join(REPO, "bench/loader/annbatch_side.py"),
      "write",
      join(DIR, "cells.h5ad"),
      ANNBATCH,
    ]);
  }
}

/** Cells per second after the first batch (of `firstCells`) came at `first` seconds. */
const after = (cells: number, seconds: number, firstCells: number, first: number) =>
  (cells - firstCells) / Math.max(1e-9, seconds - first);

/**
 * Epochs of one loader: for each, cells/s from its start (the first: from opening the dataset,
 * the pool's start-up and the first touch of the batch buffers included), the time to the first
 * batch and the rate after it. Epoch 1 on is what training sees after the first epoch: the pool
 * started, the batch buffers recycled. `copy`: on the copying path (a pool decoder without
 * `scatter`: whole tiles decoded, rows copied on the loader's thread; the loader before the slot
 * path).
 */
async function loaderEpochs(
  open: () => Promise<Dataset>,
  threads: number,
  copy = false,
  epochs = 1,
  extra: LoaderOptions = {},
): Promise<Row[]> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const pool = copy ? createTilePool({ threads }) : undefined;
  const ds = await open();
  const on = pool ? ds.withDecoder({ threads, renumbers: true, decode: pool.decode }) : ds;
  const loader = await createLoader(on, {
    batchSize: BATCH,
    seed: 1,
    threads: pool ? undefined : threads,
    output: "csr",
    ...extra,
  });
  const out: Row[] = [];
  for (let epoch = 0; epoch < epochs; epoch++) {
    const start = epoch === 0 ? t0 : performance.now();
    const cpu0 = epoch === 0 ? c0 : process.cpuUsage();
    loader.setEpoch(epoch);
    let first = 0;
    let firstCells = 0;
    let cells = 0;
    for await (const batch of loader) {
      if (!first) {
        first = performance.now() - start;
        firstCells = batch.size;
      }
      cells += batch.size;
      batch.release();
    }
    const seconds = (performance.now() - start) / 1000;
    out.push({
      cells,
      seconds,
      firstBatch: first / 1000,
      steady: after(cells, seconds, firstCells, first / 1000),
      cpu: cpuSince(cpu0),
    });
  }
  await loader.close();
  await ds.close();
  await pool?.close();
  return out;
}

/** The codec's full decode of every tile on a pool of `threads` (bytes in memory, 4 in flight). */
async function ceiling(tiles: Uint8Array[], nCells: number, threads: number): Promise<Row> {
  const pool = createTilePool({ threads });
  await pool.decode(tiles[0]!).then((t) => t.release()); // workers started and warm
  const t0 = performance.now();
  let next = 0;
  let first = 0;
  const lane = async () => {
    while (next < tiles.length) {
      const tile = await pool.decode(tiles[next++]!);
      if (!first) first = performance.now() - t0;
      tile.release();
    }
  };
  await Promise.all(Array.from({ length: 4 }, lane));
  const seconds = (performance.now() - t0) / 1000;
  await pool.close();
  const firstCells = nCells / tiles.length;
  return {
    cells: nCells,
    seconds,
    firstBatch: first / 1000,
    steady: after(nCells, seconds, firstCells, first / 1000),
  };
}

/** The floor (floor.ts): the same decode, each tile's rows written once into batch memory. */
async function ceilingIntoMemory(
  tiles: Uint8Array[],
  layouts: TileLayout[],
  nCells: number,
  nnz: number,
  threads: number,
  columns?: Int32Array,
): Promise<Row> {
  const pass = await floorPass(tiles, layouts, nCells, nnz, {
    threads,
    batchSize: BATCH,
    ...(columns && { columns }),
  });
  return {
    cells: nCells,
    seconds: pass.seconds,
    firstBatch: pass.firstBatch,
    steady: after(nCells, pass.seconds, nCells / tiles.length, pass.firstBatch),
    cpu: pass.cpu,
  };
}

/** Every tile object fetched by `get` (4 in flight, nothing decoded): the storage's own ceiling. */
async function rawGets(
  get: (key: string) => Promise<number>,
  nTiles: number,
  nCells: number,
): Promise<Row & { bytes: number }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let next = 0;
  let bytes = 0;
  let first = 0;
  const lane = async () => {
    while (next < nTiles) {
      const t = next++;
      const n = await get(`tiles/tile_${String(t).padStart(6, "0")}.dct`);
      if (!first) first = performance.now() - t0;
      bytes += n;
    }
  };
  await Promise.all(Array.from({ length: 4 }, lane));
  const seconds = (performance.now() - t0) / 1000;
  const steady = after(nCells, seconds, nCells / nTiles, first / 1000);
  return { cells: nCells, seconds, firstBatch: first / 1000, steady, bytes, cpu: cpuSince(c0) };
}

/**
 * A plain GET of `url` by node:http on a keep-alive agent, the body's chunks counted and dropped:
 * the least a client can do, so that `s3 raw GET` measures the server, not our S3 client.
 */
function plainGet(agent: Agent, url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((ok, fail) => {
    request(url, { agent, headers }, (res) => {
      let n = 0;
      res.on("data", (d: Buffer) => {
        n += d.length;
      });
      res.on("end", () =>
        res.statusCode === 200 ? ok(n) : fail(new Error(`GET ${url}: ${res.statusCode}`)),
      );
      res.on("error", fail);
    })
      .on("error", fail)
      .end();
  });
}

/** One epoch as a Python side reports it (bench/loader/*.py). */
interface SideEpoch {
  cells: number | null;
  seconds: number;
  first_batch_s: number;
  cpu_s: number;
  open_s?: number;
  open_cpu_s?: number;
}

/**
 * A Python side: one JSON line on stdout with cells, seconds, first_batch_s, cpu_s, and with
 * several epochs each one's under "epochs"; a row per epoch. `openInClock`: an epoch's clock
 * started before a once-per-job open (annbatch's collection and Loader: open_s, open_cpu_s), which
 * is taken out so that every Python row is one epoch's own cost.
 */
function pythonSide(
  python: string,
  argv: string[],
  env: Record<string, string> = {},
  openInClock = false,
): Promise<Row[]> {
  return new Promise((ok, fail) => {
    const child = spawn(python, argv, {
      cwd: "/",
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.on("close", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0 || !line.startsWith("{"))
        return fail(new Error(`${python} ${argv.join(" ")} failed (${code}):\n${err}`));
      const j = JSON.parse(line) as SideEpoch & { epochs?: SideEpoch[] };
      ok((j.epochs ?? [j]).map((e) => sideRow(e, openInClock)));
    });
  });
}

function sideRow(j: SideEpoch, openInClock: boolean): Row {
  const open = openInClock ? (j.open_s ?? 0) : 0;
  const seconds = j.seconds - open;
  const firstBatch = Math.max(0, j.first_batch_s - open);
  const cpu = j.cpu_s - (openInClock ? (j.open_cpu_s ?? 0) : 0);
  // (The command alone counts no cells: it streams one whole epoch of rank 0 of 1.)
  const cells = j.cells ?? nCells;
  // The first batch is a full one (the datasets here hold many batches).
  const steady = firstBatch > 0 ? after(cells, seconds, Math.min(BATCH, cells), firstBatch) : Number.NaN;
  return { cells, seconds, firstBatch, steady, cpu };
}

prepare();
const uptimeBefore = execFileSync("uptime", { encoding: "utf8" }).trim();
console.error(`uptime: ${uptimeBefore}`);
const probe = await openDataset(FOLDER);
const nCells = probe.nCells;
const tiles = await Promise.all(Array.from({ length: probe.nTiles }, (_, t) => probe.tileBytes(t)));
const layouts: TileLayout[] = tiles.map((b, t) => probe.tileLayout(t, b));
const nnz = nnzOf(probe.manifest);
// The floor renumbered as the loader's default (source gene order) output is: a permutation.
const floorColumns = permutation(probe.nGenes, 7);
await probe.close();
console.error(
  `${nCells} cells x ${probe.nGenes} genes, ${nnz} nonzeros, ${probe.nTiles} tiles of ${probe.manifest.tile_size} cells`,
);

let server: Awaited<ReturnType<typeof startBenchS3Server>> | undefined;
let s3: (() => Store) | undefined;
let rawGet: ((key: string) => Promise<number>) | undefined;
if (!skip.has("b")) {
  server = await startBenchS3Server(S3_SERVER);
  console.error(`S3 server: ${server.kind} at ${server.url}`);
  const creds = { accessKeyId: "testing", secretAccessKey: "testing", region: "us-east-1" };
  const url = server.url;
  const made = await new AwsClient({ ...creds, service: "s3", retries: 0 }).fetch(`${url}/bench`, {
    method: "PUT",
  });
  if (!made.ok) throw new Error(`creating the bucket: ${made.status} ${await made.text()}`);
  const from = new FolderStore(FOLDER);
  const to = new S3Store({ ...creds, endpoint: url, bucket: "bench", prefix: "ds" });
  for (const key of await from.list()) await to.set(key, (await from.get(key))!);
  // As a user opens s3:// (retries and the stall timeout included).
  s3 = () => openStore("s3://bench/ds", { s3: { ...creds, endpoint: url } });
  // The server's ceiling: gofakes3 checks no signature, so its raw GETs are unsigned; moto wants
  // one (a 403 otherwise), so they are signed, by aws4fetch (~0.2 ms a request, small against moto).
  const agent = new Agent({ keepAlive: true });
  const signer = server.kind === "moto" ? new AwsClient({ ...creds, service: "s3", retries: 0 }) : undefined;
  rawGet = async (key) => {
    const at = `${url}/bench/ds/${key}`;
    const signed = await signer?.sign(at, { method: "GET" });
    return plainGet(agent, at, signed ? Object.fromEntries(signed.headers) : {});
  };
}

try {
  for (let rep = 0; rep < REPS; rep++) {
    console.error(`rep ${rep + 1}/${REPS}, load ${load()}`);
    if (!skip.has("a")) {
      for (const threads of THREADS) {
        record(`ceiling ${threads}t`, await ceiling(tiles, nCells, threads));
        record(
          `ceiling ${threads}t into memory`,
          await ceilingIntoMemory(tiles, layouts, nCells, nnz, threads),
        );
        record(
          `ceiling ${threads}t into memory renumbered`,
          await ceilingIntoMemory(tiles, layouts, nCells, nnz, threads, floorColumns),
        );
        // The copying path next to the slot path, in alternating order (interleaved pairs).
        const paths = rep % 2 === 0 ? [false, true] : [true, false];
        for (const copy of paths) {
          const [cold, reused] = await loaderEpochs(() => openDataset(FOLDER), threads, copy, copy ? 1 : 2);
          record(`folder ${threads}t${copy ? " copying" : ""}`, cold!);
          if (reused) record(`folder ${threads}t reused`, reused);
        }
      }
    }
    if (!skip.has("e")) {
      // The elastic order on one rank serving 8 lanes (8 shuffle windows at once, beyond the
      // default memory cap), next to the default order, interleaved; second epochs.
      const pair = rep % 2 === 0 ? [false, true] : [true, false];
      for (const elastic of pair) {
        const extra: LoaderOptions = elastic ? { order: "elastic", lanes: 8, memoryCap: 2 ** 31 } : {};
        const [, reused] = await loaderEpochs(() => openDataset(FOLDER), 2, false, 2, extra);
        record(elastic ? "elastic 2t, 8 lanes" : "default order 2t", reused!);
      }
    }
    if (s3) {
      /** A row with the server's CPU seconds meanwhile. */
      const withServer = async (row: () => Promise<Row>): Promise<Row> => {
        const s0 = server!.cpuSeconds();
        const r = await row();
        return { ...r, serverCpu: server!.cpuSeconds() - s0 };
      };
      record("s3 raw GET", await withServer(() => rawGets(rawGet!, tiles.length, nCells)));
      const store = s3();
      const get = async (k: string) => (await store.get(k))!.byteLength;
      record("s3 store GET", await withServer(() => rawGets(get, tiles.length, nCells)));
      for (const threads of [1, 2]) {
        const open = () => openStoreDataset(s3!());
        record(`s3 ${threads}t`, await withServer(async () => (await loaderEpochs(open, threads))[0]!));
      }
    }
    if (!skip.has("c")) {
      // The pipe alone, the epoch's bytes (8 per nonzero, 16 per cell) in batch-sized writes.
      const bytes = 8 * nnz + 16 * nCells;
      const [raw] = await pythonSide(PY, [
        join(REPO, "bench/loader/stream_consume.py"),
        "--raw-pipe",
        String(bytes),
        "--chunk",
        String(Math.round((bytes * BATCH) / nCells)),
        "--cells",
        String(nCells),
      ]);
      record("pipe node->python", raw!);
    }
    // The package's transports, the Node loader alone and annbatch, in an order that turns with
    // each repetition (the machine's speed drifts: no row is always first or last).
    const sides: [string, () => Promise<Row[]>][] = [];
    if (!skip.has("c")) {
      const consume = (...more: string[]) =>
        pythonSide(PY, [
          join(REPO, "bench/loader/package_consume.py"),
          FOLDER,
          "--batch-size",
          String(BATCH),
          "--threads",
          "2",
          "--obs",
          "cell_type",
          "--epochs",
          "2",
          ...more,
        ]);
      sides.push(
        ["python shm 2t", () => consume("--transport", "shm")],
        ["python pipe 2t", () => consume("--transport", "pipe")],
        ["node stream 2t", () => consume("--command-only")],
      );
    }
    if (!skip.has("d") && args["annbatch-python"]) {
      const python = args["annbatch-python"];
      const script = join(REPO, "bench/loader/annbatch_side.py");
      const argv = [
        script,
        "read",
        ANNBATCH,
        "--batch-size",
        String(BATCH),
        "--obs",
        "cell_type",
        "--epochs",
        "2",
      ];
      sides.push(["annbatch", () => pythonSide(python, argv, {}, true)]);
    }
    // A training job's second epoch is the row; its first (the Python process new, the shared
    // memory allocated for the first time) is recorded apart.
    for (let i = 0; i < sides.length; i++) {
      const [name, side] = sides[(i + rep) % sides.length]!;
      const epochs = await side();
      if (epochs.length > 1) record(`${name} 1st epoch`, epochs[0]!);
      record(name, epochs.at(-1)!);
    }
  }
} finally {
  await server?.stop();
}
const uptimeAfter = execFileSync("uptime", { encoding: "utf8" }).trim();

const fmt = (r: Row | undefined) => (r ? `${Math.round(rate(r)).toLocaleString("en-US")}` : "-");
const ratio = (a: string, b: string) => {
  const x = rate(median(a)) / rate(median(b));
  return Number.isFinite(x) ? `${x.toFixed(2)}x` : "-";
};
const steadyRatio = (a: string, b: string) => {
  const x = (median(a)?.steady ?? Number.NaN) / (median(b)?.steady ?? Number.NaN);
  return Number.isFinite(x) ? `${x.toFixed(2)}x` : "-";
};
/** Cells per CPU second of a against b (medians of each; the Python rows only). */
const cpuRatio = (a: string, b: string) => {
  const per = (name: string) => {
    const rs = rows.get(name) ?? [];
    const v = rs.map((r) => r.cells / (r.cpu ?? Number.NaN)).sort((x, y) => x - y);
    return v[(v.length - 1) >> 1] ?? Number.NaN;
  };
  const x = per(a) / per(b);
  return Number.isFinite(x) ? `; per CPU second ${x.toFixed(2)}x` : "";
};
/** b's CPU per epoch over a's (medians): how much of a's work b's is. */
const cpuShare = (a: string, b: string) => {
  const m = (name: string) => {
    const v = (rows.get(name) ?? []).map((r) => r.cpu ?? Number.NaN).sort((x, y) => x - y);
    return v[(v.length - 1) >> 1] ?? Number.NaN;
  };
  const x = m(b) / m(a);
  return Number.isFinite(x) ? `${x.toFixed(2)}x` : "-";
};
const cpuOf = (name: string, of: "cpu" | "serverCpu" = "cpu") => {
  const v = (rows.get(name) ?? []).map((r) => r[of] ?? Number.NaN).sort((x, y) => x - y);
  const m = v[(v.length - 1) >> 1];
  return m === undefined || Number.isNaN(m) ? "" : `${m.toFixed(2)} s`;
};
/** The S3 server's CPU during a row (median), and its share of the median row's wall time. */
const serverOf = (name: string) => {
  const cpu = cpuOf(name, "serverCpu");
  const r = median(name);
  if (!cpu || r?.serverCpu === undefined) return "";
  return `server CPU ${cpu} (${Math.round((100 * r.serverCpu) / r.seconds)}% of a core)`;
};
/**
 * A Python row against annbatch's row of the same epoch (the first, or the second of one process)
 * and against the Node loader alone: for a first epoch, and for the pipe's epochs (a command per
 * epoch), the same command into /dev/null; for the shared-memory transport's second epoch (its
 * command kept from the first, loader and pool included), the loader reused across epochs in this
 * process.
 */
const nodeAlone = (name: string) => (name === "python shm 2t" ? "folder 2t reused" : "node stream 2t");
const pythonRatios = (name: string) => {
  const annbatch = name.endsWith(" 1st epoch") ? "annbatch 1st epoch" : "annbatch";
  return `${ratio(name, annbatch)} of ${annbatch}; ${steadyRatio(name, annbatch)}${cpuRatio(name, annbatch)}; ${ratio(name, nodeAlone(name))} of the Node loader alone (${nodeAlone(name)})`;
};
const lines = [
  `| row | cells/s (epoch) | first batch | cells/s after it | CPU (epoch) | ratio (epoch; after the first batch) |`,
  `|---|---|---|---|---|---|`,
  ...[...rows.keys()].map((name) => {
    const r = median(name)!;
    const ceilingOf = (n: string) => n.replace(/ (copying|reused)$/, "").replace("folder", "ceiling");
    const ref = name.startsWith("folder")
      ? `${ratio(name, ceilingOf(name))} of the codec ceiling; ${steadyRatio(name, ceilingOf(name))}; ${ratio(name, `${ceilingOf(name)} into memory`)} of it into memory`
      : name.includes("into memory")
        ? `${ratio(name, name.replace(/ into memory.*/, ""))} of the codec ceiling`
        : name === "s3 store GET"
          ? `${ratio(name, "s3 raw GET")} of raw GETs (our S3 client's cost)`
          : name.startsWith("s3 ") && name !== "s3 raw GET"
            ? `${ratio(name, name.replace("s3", "folder"))} of the folder, ${ratio(name, "s3 raw GET")} of raw GETs`
            : name.startsWith("elastic")
              ? `${ratio(name, "default order 2t")} of the default order`
              : name.startsWith("python ")
                ? pythonRatios(name)
                : "";
    const steady = Number.isFinite(r.steady) ? Math.round(r.steady).toLocaleString("en-US") : "-";
    const first = r.firstBatch > 0 ? `${r.firstBatch.toFixed(2)} s` : "-";
    return `| ${name} | ${fmt(r)} | ${first} | ${steady} | ${cpuOf(name)} | ${[ref, serverOf(name)].filter(Boolean).join("; ")} |`;
  }),
];
console.log(lines.join("\n"));
// The goals, as ratios of medians of this run (a quiet machine decides: see bench/RESULTS.md).
const firstOf = (name: string) => median(name)?.firstBatch.toFixed(2) ?? "-";
const goals = [
  ...THREADS.map(
    (t) =>
      `goal (a), ${t} thread${t > 1 ? "s" : ""}: loader reused ${ratio(`folder ${t}t reused`, `ceiling ${t}t`)} of the codec ceiling (>= 0.80x; new loader ${ratio(`folder ${t}t`, `ceiling ${t}t`)} per epoch, ${steadyRatio(`folder ${t}t`, `ceiling ${t}t`)} after its first batch)`,
  ),
  ...THREADS.map(
    (t) =>
      `goal (floor), ${t} thread${t > 1 ? "s" : ""}: loader reused ${ratio(`folder ${t}t reused`, `ceiling ${t}t into memory`)} of the decode writing each tile's rows once into batch memory (>= 0.90x; ${ratio(`folder ${t}t reused`, `ceiling ${t}t into memory renumbered`)} of it renumbered to the source gene order as the loader's output is; by CPU ${cpuShare(`folder ${t}t reused`, `ceiling ${t}t into memory`)} and ${cpuShare(`folder ${t}t reused`, `ceiling ${t}t into memory renumbered`)})`,
  ),
  ...(server === undefined ? [] : [1, 2]).map(
    (t) =>
      `goal (b), ${t} thread${t > 1 ? "s" : ""}: S3 (${server?.kind ?? "-"}) ${ratio(`s3 ${t}t`, `folder ${t}t`)} of the folder (>= 0.80x), ${ratio(`s3 ${t}t`, "s3 raw GET")} of the server's raw GETs (${fmt(median("s3 raw GET"))} cells/s, ${serverOf("s3 raw GET")}; during the loader ${serverOf(`s3 ${t}t`)})`,
  ),
  `goal (shm): Python through shared memory ${ratio("python shm 2t", "annbatch")} of annbatch per epoch (>= 3.00x; ${steadyRatio("python shm 2t", "annbatch")} after the first batch; first batch ${firstOf("python shm 2t")} s against ${firstOf("annbatch")} s), ${ratio("python shm 2t", "folder 2t reused")} of the Node loader alone, reused across epochs (>= 0.90x); first epochs ${ratio("python shm 2t 1st epoch", "annbatch 1st epoch")} of annbatch's (first batch ${firstOf("python shm 2t 1st epoch")} s against ${firstOf("annbatch 1st epoch")} s), ${ratio("python shm 2t 1st epoch", "node stream 2t")} of the Node loader alone in a new process`,
  `for the record: Python through the pipe ${ratio("python pipe 2t", "annbatch")} of annbatch per epoch (first batch ${firstOf("python pipe 2t")} s), ${ratio("python pipe 2t", "node stream 2t")} of the Node loader alone`,
];
console.log(`\n${goals.join("\n")}`);
console.log(`\nuptime before: ${uptimeBefore}\nuptime after:  ${uptimeAfter}`);
if (!skip.has("m")) {
  // How mixed the loader's batches are at the settings above (not timed): the default order on
  // 1 and 8 ranks, the elastic order with 8 lanes (the same batches on 1 and on 8 ranks; one rank
  // serving the 8 lanes holds 8 windows, beyond the default memory cap).
  const ds = await openDataset(FOLDER);
  const options = { batchSize: BATCH, seed: 1 };
  const table = [...MIXING_HEADER];
  for (const [name, extra, worlds] of [
    ["default", {}, [1, 8]],
    ["elastic, lanes 8, memoryCap 2 GiB", { order: "elastic", lanes: 8, memoryCap: 2 ** 31 }, [1, 8]],
  ] as const)
    for (const w of worlds) {
      const m = await measureMixing(FOLDER, ds, "cell_type", { ...options, ...extra }, w, 1);
      table.push(`| ${name} | ${w} | ${mixingCells(m).join(" | ")} |`);
    }
  await ds.close();
  console.log(`\nmixing of cell_type, batches of ${BATCH}, one epoch:\n${table.join("\n")}`);
}
console.log(JSON.stringify(Object.fromEntries([...rows].map(([k, v]) => [k, v]))));
