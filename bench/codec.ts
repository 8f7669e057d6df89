/**
 * Tile codec benchmark: decode throughput (nonzeros/s) on real and synthetic matrices, against
 * "decompress the same zstd frames and do nothing else" measured in the same run, for one thread,
 * a pool of 1 worker and a pool of 2 workers called each way the README shows (the caller's
 * shared or plain outputs, or none: the pool's own, released), and the dataset reader end to end
 * from a local folder (`ds.tiles()` on this thread and with `threads: 2`, written once by the
 * dataset writer into bench/out/ds-<name>-...); and bytes per nonzero against CSR int32 indices +
 * float32 data + int64 indptr with gzip (what an h5ad holds). The first lines name the kernel
 * (`codecInfo()`) and the load average when the matrix was done.
 *
 * Rows are independent: each starts after a full garbage collection and one untimed call, and the
 * one row that leaves garbage on purpose (`ds.tiles()` never released) runs in its own phase after
 * all the others. Each pool and `ds.tiles()` row is compared with decodeTileSync ("this thread")
 * timed right before and right after it.
 * The `ds.tiles()` rows open the folder as the README does, `openDataset(dir)` of
 * `@deltacells/core/node` (a tile read by blocking calls while they come from the page cache,
 * the default), plus two rows with `folder: { blockingReads: false }` (reads through libuv's
 * thread pool).
 *
 *   conformance/.venv/bin/python bench/codec_data.py      # once: writes bench/out/*.npy
 *   node --import tsx --conditions=source bench/codec.ts [--reps 7] [--only synthetic-12k] [--wasm]
 *
 * Options: --reps N (medians of N runs), --only NAME, --tile-size CELLS (default: the dataset
 * writer's choice for the matrix, autoTileSize), --chunks N (8),
 * --wasm (zstddec instead of zstd-napi), --single-only (skip the pool rows: a quicker, steadier run),
 * --scaling-seconds S (each run of bench/decode-loop.ts, one process alone and two at once, for
 * the machine's own 2-core scaling line; 0 skips it). Set DELTACELLS_NATIVE=0 to measure the TypeScript loops.
 *
 * Encoded tiles are cached in bench/out/tiles-<name>/ (level 19 takes a while).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { gzipSync } from "node:zlib";
import {
  autoTileSize,
  codecInfo,
  createTilePool,
  type Dataset,
  type DatasetSource,
  type DecodeOutput,
  decodeTileSync,
  formatCodecInfo,
  loadZstd,
  setZstdBackend,
  writeDataset,
} from "@deltacells/core";
import { openDataset, zstdCompressor } from "@deltacells/core/node";
import { openStore as openLocation } from "@deltacells/storage/node";
import { inspectTile } from "../packages/deltacells/src/codec/layout.js";
import { nativeKernel } from "../packages/deltacells/src/codec/native.js";
import { loadWasmZstd } from "../packages/deltacells/src/codec/zstd/wasm.js";
import { threadSched } from "./cpu.js";

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "7" },
    only: { type: "string" },
    "tile-size": { type: "string", default: "auto" },
    wasm: { type: "boolean", default: false },
    "scaling-seconds": { type: "string", default: "3" },
    chunks: { type: "string", default: "8" },
    "single-only": { type: "boolean", default: false },
  },
});
const REPS = Number(args.reps);
/** Cells per tile: the dataset writer's default for the matrix (`autoTileSize`) unless given. */
const tileSizeFor = (nCells: number, nnz: number) =>
  args["tile-size"] === "auto" ? autoTileSize(nCells, nnz) : Number(args["tile-size"]);
const CHUNKS = Number(args.chunks);
const out = fileURLToPath(new URL("./out/", import.meta.url));

function readNpy(path: string): Int32Array | Float32Array | Float64Array {
  const b = readFileSync(path);
  const headerLen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLen).toString("latin1");
  const descr = /'descr':\s*'([^']+)'/.exec(header)![1];
  const body = new Uint8Array(b.subarray(10 + headerLen));
  const copy = body.slice().buffer;
  if (descr === "<i4") return new Int32Array(copy);
  if (descr === "<f4") return new Float32Array(copy);
  if (descr === "<i8") return Float64Array.from(new BigInt64Array(copy), Number);
  throw new Error(`unsupported npy dtype ${descr} in ${path}`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function tilesOf(
  name: string,
  level: number,
): Promise<{
  tiles: Uint8Array[];
  dir: string;
  tileCells: number;
  nnz: number;
  nGenes: number;
  csr: { indptr: Float64Array; indices: Int32Array; data: Float32Array };
}> {
  const meta = JSON.parse(readFileSync(join(out, `${name}.json`), "utf8")) as {
    n_genes: number;
    nnz: number;
  };
  const indptr = readNpy(join(out, `${name}.indptr.npy`)) as Float64Array;
  const indices = readNpy(join(out, `${name}.indices.npy`)) as Int32Array;
  const data = readNpy(join(out, `${name}.data.npy`)) as Float32Array;
  const nCells = indptr.length - 1;
  const TILE = tileSizeFor(nCells, meta.nnz);
  const dir = join(out, `tiles-${name}-t${TILE}-l${level}${CHUNKS === 8 ? "" : `-c${CHUNKS}`}`);
  const nTiles = Math.ceil(nCells / TILE);
  if (!existsSync(dir) || readdirSync(dir).length !== nTiles) {
    mkdirSync(dir, { recursive: true });
    const pool = createTilePool({ threads: 2 });
    const t0 = performance.now();
    for (let t = 0; t < nTiles; t++) {
      const lo = t * TILE;
      const hi = Math.min(nCells, lo + TILE);
      const rows = {
        nGenes: meta.n_genes,
        indptr: indptr.subarray(lo, hi + 1),
        indices: indices.subarray(indptr[lo]!, indptr[hi]!),
        data: data.subarray(indptr[lo]!, indptr[hi]!),
      };
      writeFileSync(
        join(dir, `${String(t).padStart(6, "0")}.dct`),
        await pool.encode(rows, { level, nChunks: CHUNKS }),
      );
    }
    await pool.close();
    console.log(
      `  encoded ${name}: ${nTiles} tiles in ${((performance.now() - t0) / 1000).toFixed(1)} s (2 workers, level ${level})`,
    );
  }
  const tiles = readdirSync(dir)
    .sort()
    .map((f) => new Uint8Array(readFileSync(join(dir, f))));
  return { tiles, dir, tileCells: TILE, nnz: meta.nnz, nGenes: meta.n_genes, csr: { indptr, indices, data } };
}

/**
 * The matrix as a dataset in a local folder (cached in bench/out/ds-<name>-...), written by the
 * dataset writer with the same tile size, chunks and level as the tiles above.
 */
async function datasetOf(
  name: string,
  level: number,
  tileCells: number,
  csr: { indptr: Float64Array; indices: Int32Array; data: Float32Array },
  nGenes: number,
): Promise<string> {
  const dir = join(out, `ds-${name}-t${tileCells}-l${level}${CHUNKS === 8 ? "" : `-c${CHUNKS}`}`);
  if (existsSync(join(dir, "manifest.json"))) return dir;
  const nCells = csr.indptr.length - 1;
  const source: DatasetSource = {
    format: "bench",
    location: name,
    matrixPath: "X",
    nCells,
    nGenes,
    async var() {
      return { indexName: null, index: Array.from({ length: nGenes }, (_, j) => `G${j}`), columns: [] };
    },
    async *rowBlocks({ blockCells = 1000 } = {}) {
      for (let lo = 0; lo < nCells; lo += blockCells) {
        const hi = Math.min(nCells, lo + blockCells);
        const a = csr.indptr[lo]!;
        const b = csr.indptr[hi]!;
        yield {
          rowStart: lo,
          nRows: hi - lo,
          indptr: Float64Array.from(csr.indptr.subarray(lo, hi + 1), (x) => x - a),
          indices: csr.indices.slice(a, b),
          data: Int32Array.from(csr.data.subarray(a, b)),
        };
      }
    },
  };
  const pool = createTilePool({ threads: 2 });
  const t0 = performance.now();
  await writeDataset(source, openLocation(dir), {
    encoder: pool,
    compress: zstdCompressor(3),
    tileSize: tileCells,
    nChunks: CHUNKS,
    level,
  });
  await pool.close();
  console.log(`  wrote dataset ${dir} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return dir;
}

/** Seconds per call, by the wall clock, this process's CPU time and this thread's. */
type Timing = { wall: number; cpu: number; main: number };

/**
 * Runs `fn` once untimed, then enough times to take >= 100 ms; returns seconds per call, by the
 * wall clock and by this process's CPU time. On a shared, loaded machine the CPU time of
 * single-threaded work is far steadier than the wall clock (time spent waiting for a core is not
 * counted). The untimed call puts the row in its steady state, as a loop over many tiles would
 * be: the first call after other rows paid for switching to them (workers idle for seconds, their
 * caches cold), 3-10 ms of a 100 ms row (pools 636-655 against 783-789 M nnz/s, bench/RESULTS.md).
 */
async function time(fn: () => unknown): Promise<Timing> {
  await fn();
  let n = 0;
  const c0 = process.cpuUsage();
  const m0 = threadCpu();
  const t0 = performance.now();
  do {
    await fn();
    n++;
  } while (performance.now() - t0 < 100);
  const c = process.cpuUsage(c0);
  return {
    wall: (performance.now() - t0) / 1000 / n,
    cpu: (c.user + c.system) / 1e6 / n,
    main: (threadCpu() - m0) / n,
  };
}

/**
 * A full garbage collection (V8's `gc`, exposed at run time: no flag needed on the command line),
 * between rows and outside their timing.
 */
const collectGarbage: () => void = (() => {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
})();

/**
 * This thread's CPU time in seconds (NaN off Linux). For `ds.tiles()` on this thread it bounds the
 * wall time on idle cores from below (the reads run on libuv's threads, on the other core, when
 * they overlap the decodes): far steadier under load than the wall clock, though cache and memory
 * contention still move it.
 */
const threadCpu = (): number => threadSched().cpu;

/**
 * The machine's own 2-core scaling of this decode: bench/decode-loop.ts run alone, then two of
 * them at once (separate processes: no pool, no messages, no shared buffers), in turn `rounds`
 * times; the median of (two processes' summed rate) / (one process's rate). What the pool's
 * "vs 1 worker" and "vs this thread" ratios could reach at best on these cores at this time.
 */
async function machineScaling(dir: string, seconds: number, rounds = 3): Promise<number> {
  const script = fileURLToPath(new URL("./decode-loop.ts", import.meta.url));
  const run = () =>
    new Promise<number>((resolve, reject) => {
      execFile(process.execPath, [...process.execArgv, script, dir, String(seconds)], (err, stdout) => {
        if (err) reject(err);
        else resolve((JSON.parse(stdout) as { nnzPerSecond: number }).nnzPerSecond);
      });
    });
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const one = await run();
    const two = await Promise.all([run(), run()]);
    ratios.push((two[0]! + two[1]!) / one);
  }
  return median(ratios);
}

async function bench(name: string) {
  const zstd = await loadZstd();
  const { tiles, dir: tilesDir, tileCells, nnz, nGenes, csr } = await tilesOf(name, 19);
  const layouts = tiles.map((t) => inspectTile(t));
  const maxNnz = Math.max(...layouts.map((l) => l.header.nnz));
  const maxCells = Math.max(...layouts.map((l) => l.header.nCells));
  const maxChunk = Math.max(...layouts.flatMap((l) => l.chunks.map((c) => c.nnzHi - c.nnzLo)));
  const scratch = new Uint8Array(Math.max(16, 8 * maxChunk));
  const bufs = {
    indptr: new Float64Array(maxCells + 1),
    indices: new Int32Array(maxNnz),
    data: new Int32Array(maxNnz),
  };
  const fbufs = { ...bufs, data: new Float32Array(maxNnz) };

  /** Every frame of every tile through `decompress` into the reused buffer, and nothing else. */
  const zstdOnlyWith = (decompress: (src: Uint8Array, dst: Uint8Array) => unknown) => () => {
    for (let i = 0; i < tiles.length; i++) {
      const t = tiles[i]!;
      for (const c of layouts[i]!.chunks) {
        const n = c.nnzHi - c.nnzLo;
        decompress(t.subarray(c.gapsOff, c.gapsOff + c.gapsLen), scratch.subarray(0, 2 * n));
        decompress(t.subarray(c.valsOff, c.valsOff + c.valsLen), scratch.subarray(0, 2 * n));
        if (c.vexcLen) decompress(t.subarray(c.vexcOff, c.vexcOff + c.vexcLen), scratch);
        if (c.gexcLen) decompress(t.subarray(c.gexcOff, c.gexcOff + c.gexcLen), scratch);
      }
    }
  };
  const zstdOnly = zstdOnlyWith((src, dst) => zstd.decompressInto(src, dst));
  // The same frames through the zstd the native kernel itself runs (the library zstd-napi is
  // built from, compiled into the addon): the fused decode's own reference.
  const kernel = nativeKernel();
  const kernelZstdOnly = zstdOnlyWith((src, dst) => kernel!.decompress(src, dst));
  const withKernelZstd = kernel !== undefined && !args.wasm;
  const full = () => {
    for (const t of tiles) decodeTileSync(t, { out: bufs });
  };
  const fullFloat = () => {
    for (const t of tiles) decodeTileSync(t, { out: fbufs, values: "float32" });
  };
  const fresh = () => {
    for (const t of tiles) decodeTileSync(t);
  };
  // Pools, called in each way the README shows, with 4 tiles in flight (what a loader does):
  // the caller's shared outputs, the caller's plain outputs (both recycled like the single-thread
  // rows' buffers, one set per tile in flight), and no outputs (the pool lends its own; released).
  const IN_FLIGHT = 4;
  const sharedOut = Array.from({ length: IN_FLIGHT }, () => ({
    indptr: new Float64Array(maxCells + 1),
    indices: new Int32Array(new SharedArrayBuffer(4 * maxNnz)),
    data: new Int32Array(new SharedArrayBuffer(4 * maxNnz)),
  }));
  const plainOut = Array.from({ length: IN_FLIGHT }, () => ({
    indptr: new Float64Array(maxCells + 1),
    indices: new Int32Array(maxNnz),
    data: new Int32Array(maxNnz),
  }));
  const pool1 = createTilePool({ threads: 1 });
  const pool2 = createTilePool({ threads: 2 });
  type Pool = typeof pool1;
  const together = (p: Pool, outs?: DecodeOutput[]) => async () => {
    let next = 0;
    const lane = async (slot: number) => {
      while (next < tiles.length) {
        const tile = await p.decode(tiles[next++]!, outs ? { out: outs[slot]! } : {});
        tile.release();
      }
    };
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, tiles.length) }, (_, slot) => lane(slot)));
  };
  const oneByOne = (p: Pool) => async () => {
    for (const t of tiles) await p.decode(t, { out: sharedOut[0]! });
  };
  // What plain outputs add: the copy of each tile from the pool's shared buffers into the
  // caller's arrays on this thread (TypedArray.set on contiguous ranges, as the pool does).
  const scratch2 = {
    indices: new Int32Array(new SharedArrayBuffer(4 * maxNnz)),
    data: new Int32Array(new SharedArrayBuffer(4 * maxNnz)),
  };
  const copyOnly = () => {
    for (const l of layouts) {
      const n = l.header.nnz;
      bufs.indices.set(scratch2.indices.subarray(0, n));
      bufs.data.set(scratch2.data.subarray(0, n));
    }
  };
  const pools = !args["single-only"];
  // The dataset reader end to end from a local folder, as the README shows it (written once).
  const dsDir = pools ? await datasetOf(name, 19, tileCells, csr, nGenes) : undefined;
  const ds1 = dsDir ? await openDataset(dsDir) : undefined;
  const ds2 = dsDir ? await openDataset(dsDir, { threads: 2 }) : undefined;
  // The same with reads through libuv's thread pool (the default reads by blocking calls while
  // they stay fast): what the blocking reads change.
  const poolReads = { folder: { blockingReads: false } };
  const ds1pool = dsDir ? await openDataset(dsDir, poolReads) : undefined;
  const ds2pool = dsDir ? await openDataset(dsDir, { threads: 2, ...poolReads }) : undefined;
  const readAll = (ds: Dataset | undefined, release: boolean) => async () => {
    if (ds === undefined) return;
    for await (const { tile } of ds.tiles()) if (release) tile.release();
  };
  if (pools) {
    await together(pool1, sharedOut)();
    await together(pool2, sharedOut)();
    await readAll(ds2, true)();
    await readAll(ds2pool, true)();
  }
  const rows: Record<string, Timing[]> = {};
  // decodeTileSync's timing right before and right after each row compared with it ("this
  // thread"), their mean per row: this machine's speed drifts by 10-30% within seconds (other
  // tenants' load), and a reference timed seconds away from its row moved the ratios by as much.
  const around: Record<string, Timing[]> = {};
  let lastFull: Timing | undefined;
  const timeFull = async () => {
    collectGarbage();
    return time(full);
  };
  // Each row starts from a collected heap, so no row pays for the garbage of the one before
  // (the unreleased row leaves ~210 MB per pass: its collection, on other threads, cost the next
  // rows 30 ms of CPU per pass and ds.tiles() 0.83x -> 0.60-0.69x of decodeTileSync).
  const measure = async (k: string, fn: () => unknown) => {
    collectGarbage();
    const r = await time(fn);
    (rows[k] ??= []).push(r);
  };
  const measureAround = async (k: string, fn: () => unknown) => {
    const before = lastFull ?? (await timeFull());
    await measure(k, fn);
    const after = await timeFull();
    const mean = (c: keyof Timing) => (before[c] + after[c]) / 2;
    (around[k] ??= []).push({ wall: mean("wall"), cpu: mean("cpu"), main: mean("main") });
    lastFull = after;
  };
  for (let r = 0; r < REPS; r++) {
    await measure("zstd", zstdOnly);
    if (withKernelZstd) await measure("zstdk", kernelZstdOnly);
    await measure("full", full);
    await measure("float", fullFloat);
    await measure("fresh", fresh);
    await measure("copy", copyOnly);
    if (!pools) continue;
    lastFull = undefined;
    await measureAround("pool1", together(pool1, sharedOut));
    await measureAround("pool2", together(pool2, sharedOut));
    await measureAround("pool1plain", together(pool1, plainOut));
    await measureAround("pool2plain", together(pool2, plainOut));
    await measureAround("pool1none", together(pool1));
    await measureAround("pool2none", together(pool2));
    await measureAround("pool1seq", oneByOne(pool1));
    await measureAround("pool2seq", oneByOne(pool2));
    await measureAround("ds1", readAll(ds1, true));
    await measureAround("ds2", readAll(ds2, true));
    await measureAround("ds1pool", readAll(ds1pool, true));
    await measureAround("ds2pool", readAll(ds2pool, true));
  }
  // Never released: a phase of its own after every other row (see `measure`).
  lastFull = undefined;
  if (pools) for (let r = 0; r < REPS; r++) await measureAround("ds1kept", readAll(ds1, false));
  await pool1.close();
  await pool2.close();
  await ds2?.close();
  await ds2pool?.close();
  const rate = (k: string, clock: keyof Timing = "wall") => nnz / median(rows[k]!.map((x) => x[clock]));
  // Against decodeTileSync ("full"), a row timed between two of its timings is compared with them.
  const ratio = (a: string, b: string, clock: keyof Timing = "wall") => {
    const ref = b === "full" && around[a] !== undefined ? around[a] : rows[b]!;
    return median(rows[a]!.map((x, i) => ref[i]![clock] / x[clock]));
  };
  const M = (x: number) => `${(x / 1e6).toFixed(0)} M nnz/s`;
  const tileBytes = tiles.reduce((a, t) => a + t.length, 0);
  const nCells = csr.indptr.length - 1;
  const indptrBytes = new Uint8Array(new BigInt64Array(Array.from(csr.indptr, BigInt)).buffer);
  const gz =
    gzipSync(new Uint8Array(csr.indices.buffer), { level: 4 }).length +
    gzipSync(new Uint8Array(csr.data.buffer), { level: 4 }).length +
    gzipSync(indptrBytes, { level: 4 }).length;
  const info = await codecInfo();
  console.log(
    `\ncodec: ${formatCodecInfo(info)}; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  console.log(
    `${name}: ${nCells} cells, ${nnz} nonzeros, ${tiles.length} tiles of ${tileCells} cells (zstd: ${zstd.name}), medians of ${REPS}`,
  );
  // Single-thread rows: wall clock and CPU time; pools: wall clock only (their CPU time is spread over threads).
  const line1 = (label: string, k: string) =>
    console.log(
      `  ${label.padEnd(52)} ${M(rate(k)).padStart(14)} ${ratio(k, "zstd").toFixed(2)}x zstd-only | CPU time: ${M(rate(k, "cpu")).padStart(14)} ${ratio(k, "zstd", "cpu").toFixed(2)}x${withKernelZstd ? ` | vs the kernel's zstd: ${ratio(k, "zstdk").toFixed(2)}x wall, ${ratio(k, "zstdk", "cpu").toFixed(2)}x CPU` : ""}`,
    );
  // Pools: the CPU time of all threads; equal CPU per nonzero for 1 and 2 workers means the
  // split adds no work, so on idle cores the speedup is bounded only by the main thread's share.
  const line = (label: string, k: string, vs: string, vsLabel: string) =>
    console.log(
      `  ${label.padEnd(52)} ${M(rate(k)).padStart(14)} ${ratio(k, vs).toFixed(2)}x ${vsLabel.padEnd(9)} | CPU, all threads: ${M(rate(k, "cpu")).padStart(14)}`,
    );
  console.log(
    `  ${"zstd only (the same frames, into a reused buffer)".padEnd(52)} ${M(rate("zstd")).padStart(14)}                | CPU time: ${M(rate("zstd", "cpu")).padStart(14)}`,
  );
  if (withKernelZstd)
    console.log(
      `  ${"zstd only, the native kernel's own zstd build".padEnd(52)} ${M(rate("zstdk")).padStart(14)}                | CPU time: ${M(rate("zstdk", "cpu")).padStart(14)}`,
    );
  line1("full decode, this thread, int32, caller's buffers", "full");
  line1("full decode, this thread, float32, caller's buffers", "float");
  line1("full decode, this thread, int32, fresh arrays", "fresh");
  // The copy's cost per nonzero bounds plain outputs on a pool: each nonzero costs a worker d
  // (the decode) and this thread c (the copy), so on P cores at most P/(d+c) nonzeros/s, i.e.
  // P*d/(d+c) x this thread's decode, and the same against 1 worker (whose copies run on a
  // second core beside it: 1/d). CPU times: the steadiest figures on a loaded machine.
  const nsPer = (k: string) => (1e9 * median(rows[k]!.map((x) => x.cpu))) / nnz;
  const [d, c] = [nsPer("full"), nsPer("copy")];
  console.log(
    `  ${"copy shared -> plain arrays, this thread (CPU)".padEnd(52)} ${c.toFixed(2).padStart(6)} ns/nnz against ${d.toFixed(2)} ns/nnz to decode (c/d = ${(c / d).toFixed(2)}): plain outputs on 2 cores at most 2d/(d+c) = ${((2 * d) / (d + c)).toFixed(2)}x this thread and 1 worker`,
  );
  if (pools) {
    // Each pool row against 1 worker called the same way, and against this thread (reused outputs).
    const line2 = (label: string, k: string, one: string) =>
      console.log(
        `  ${label.padEnd(52)} ${M(rate(k)).padStart(14)} ${ratio(k, one).toFixed(2)}x 1 worker, ${ratio(k, "full").toFixed(2)}x this thread | CPU, all threads: ${M(rate(k, "cpu")).padStart(14)}`,
      );
    line("pool of 1 worker, 4 in flight, shared outputs", "pool1", "zstd", "zstd-only");
    line2("pool of 2 workers, 4 in flight, shared outputs", "pool2", "pool1");
    line("pool of 1 worker, 4 in flight, plain outputs", "pool1plain", "zstd", "zstd-only");
    line2("pool of 2 workers, 4 in flight, plain outputs", "pool2plain", "pool1plain");
    line("pool of 1 worker, 4 in flight, no out (released)", "pool1none", "zstd", "zstd-only");
    line2("pool of 2 workers, 4 in flight, no out (released)", "pool2none", "pool1none");
    line("pool of 1 worker, one tile at a time", "pool1seq", "zstd", "zstd-only");
    line("pool of 2 workers, one tile at a time (chunks split)", "pool2seq", "pool1seq", "1 worker");
    line("ds.tiles(), folder, this thread (released)", "ds1", "full", "this thread");
    line2("ds.tiles(), folder, threads: 2 (released)", "ds2", "ds1");
    line("ds.tiles(), folder, this thread, never released", "ds1kept", "full", "this thread");
    line("ds.tiles(), this thread, thread-pool reads", "ds1pool", "full", "this thread");
    line("ds.tiles(), threads: 2, thread-pool reads", "ds2pool", "full", "this thread");
    // The copy as it happens in the pool (the lines come from the core that decoded them): CPU per
    // nonzero of plain outputs minus that of shared outputs, same pool, and the bound it implies.
    for (const [workers, plain, shared] of [
      [1, "pool1plain", "pool1"],
      [2, "pool2plain", "pool2"],
    ] as const) {
      const inPool = nsPer(plain) - nsPer(shared);
      console.log(
        `  ${`plain outputs' extra CPU, ${workers} worker${workers > 1 ? "s" : ""}`.padEnd(52)} ${inPool.toFixed(2).padStart(6)} ns/nnz (c/d = ${(inPool / d).toFixed(2)}): at most 2d/(d+c) = ${((2 * d) / (d + Math.max(0, inPool))).toFixed(2)}x on 2 cores`,
      );
    }
    // The goals of the pool and of ds.tiles(), each ratio from pairs measured side by side in this run.
    const goal = (label: string, r: number, min: number) =>
      `${label} ${r.toFixed(2)}x ${r >= min ? "met" : "MISSED"} (>= ${min}x)`;
    for (const [how, k, one] of [
      ["shared outputs", "pool2", "pool1"],
      ["plain outputs", "pool2plain", "pool1plain"],
      ["no out (released)", "pool2none", "pool1none"],
    ] as const)
      console.log(
        `  goal, pool of 2 workers, ${how}: ${goal("vs 1 worker", ratio(k, one), 1.7)}; ${goal("vs this thread", ratio(k, "full"), 1.4)}`,
      );
    const scalingSeconds = Number(args["scaling-seconds"]);
    if (scalingSeconds > 0)
      console.log(
        `  ${"the machine's 2-core scaling (bench/decode-loop.ts: 2 processes at once vs 1)".padEnd(52)} ${(await machineScaling(tilesDir, scalingSeconds)).toFixed(2)}x: no pool ratio above this can be expected now`,
      );
    console.log(
      `  goal, ds.tiles() from a folder: ${goal("this thread vs decodeTileSync", ratio("ds1", "full"), 0.8)}; ${goal("threads: 2 vs decodeTileSync", ratio("ds2", "full"), 1.4)}`,
    );
    // The calling thread's own CPU time (Linux), steadier under load: for ds.tiles() on this thread,
    // decodeTileSync's over it is the best wall ratio idle cores can give (reads fully overlapped);
    // with threads, it is what the calling thread spends per nonzero beside the workers.
    console.log(
      `  calling thread's CPU (Linux): ds.tiles() on this thread ${ratio("ds1", "full", "main").toFixed(2)}x decodeTileSync's (${M(rate("ds1", "main"))} against ${M(rate("full", "main"))}); with threads: 2 ${M(rate("ds2", "main"))}, pool no out ${M(rate("pool2none", "main"))}`,
    );
    // Where a 2-worker row stands against its CPU bound (on quiet cores): the work it does, all
    // threads' CPU, against decodeTileSync's, bounds it at 2x that ratio; the cores' busy share
    // (CPU over 2 x wall) says whether it is short of cores (near 100%: less work is the only
    // lever) or leaves them idle (gaps between jobs, the start or the tail of a pass).
    const busy = (k: string) => median(rows[k]!.map((x) => x.cpu / (2 * x.wall)));
    for (const [label, k] of [
      ["pool of 2 workers, no out", "pool2none"],
      ["pool of 2 workers, shared outputs", "pool2"],
      ["ds.tiles(), threads: 2", "ds2"],
    ] as const)
      console.log(
        `  ${label}: CPU bound ${(2 * ratio(k, "full", "cpu")).toFixed(2)}x this thread (its work ${(1 / ratio(k, "full", "cpu")).toFixed(2)}x decodeTileSync's); cores busy ${(100 * busy(k)).toFixed(0)}% of 2`,
      );
  }
  console.log(
    `  size: ${(tileBytes / nnz).toFixed(3)} bytes/nnz (tiles, level 19) vs ${(gz / nnz).toFixed(3)} (CSR int32+float32+int64 indptr, gzip 4) = ${(tileBytes / gz).toFixed(2)}x`,
  );
}

if (args.wasm) setZstdBackend(await loadWasmZstd());
const names = ["10x-chr21", "mouse-10k", "synthetic-12k"].filter(
  (n) => args.only === undefined || args.only === n,
);
for (const n of names) {
  if (!existsSync(join(out, `${n}.json`))) {
    console.log(`skipping ${n}: run conformance/.venv/bin/python bench/codec_data.py first`);
    continue;
  }
  await bench(n);
}
