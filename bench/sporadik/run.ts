/**
 * sporadik read benchmark: @deltacells/sporadik against the Python reference reader (sporadik 1.1.1)
 * on the same store, in the same run, measurements interleaved block by block.
 *
 *   npm run bench:sporadik -- [--quick] [--only <filter>] [--out bench/sporadik/RESULTS.md]
 *
 * The store (100,000 x 20,000, ~106 M nonzeros, both layouts, chunked and byte-addressable) is
 * written once by bench/sporadik/generate.py with the Python writer and cached under
 * bench/out/sporadik/<parameters>/. Rows: single-slice latency along each axis and batches of
 * 1 / 100 / 10,000 positions (`slicesAt` vs `slices_at`), from a local folder and over HTTP from a
 * local `serve`, warm and cold (see `DEFINITIONS`). Python times itself in a worker process
 * (bench/sporadik/python_reader.py); neither side's figures include process start-up or the pipe.
 *
 * `--only` keeps rows whose label contains every comma-separated part, e.g.
 * `--only folder,chunked,axis 0,batch 10000,warm` (use it with `node --cpu-prof` to profile a row).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { codecInfo, formatCodecInfo } from "@deltacells/core/node";
import { openReader as openBrowser, type ReadableStore } from "@deltacells/sporadik";
import { openReader as openNode } from "@deltacells/sporadik/node";
import { HttpStore, withStats } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { mulberry32 } from "../../test-utils/prng.js";
import { startServe } from "../../test-utils/servers.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const python = join(repo, "conformance/.venv/bin/python");

const { values: args } = parseArgs({
  options: {
    cells: { type: "string", default: "100000" },
    genes: { type: "string", default: "20000" },
    "genes-per-cell": { type: "string", default: "1000" },
    seed: { type: "string", default: "0" },
    slices: { type: "string", default: "200" },
    "cold-slices": { type: "string", default: "60" },
    "small-reps": { type: "string", default: "30" },
    "large-reps": { type: "string", default: "3" },
    blocks: { type: "string", default: "4" },
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    out: { type: "string", default: join(here, "RESULTS.md") },
  },
});

const quick = args.quick;
const SLICES = quick ? 20 : Number(args.slices);
const COLD_SLICES = quick ? 10 : Number(args["cold-slices"]);
const SMALL_REPS = quick ? 4 : Number(args["small-reps"]);
const LARGE_REPS = quick ? 1 : Number(args["large-reps"]);
const BLOCKS = Number(args.blocks);
const BATCH_SIZES = [1, 100, 10_000];
const WARMUP = 64;
const only = args.only?.split(",").map((part) => part.trim());

/**
 * The two entries of our reader. "ours" is what a Node user gets: `@deltacells/sporadik/node`,
 * whose `openReader` decodes zstd natively (zstd-napi) straight into reused chunk buffers. The
 * secondary column is the browser-safe entry, `@deltacells/sporadik`, whose `openReader` decodes
 * through zarrita's registry (numcodecs' WebAssembly zstd); it differs only for chunked stores.
 */
type Open = typeof openNode;
const entries = { node: openNode as Open, browser: openBrowser as Open };

const DEFINITIONS = `- **warm**: one reader per row, opened before timing and warmed by one untimed batch of ${WARMUP}
  evenly spaced positions (so every \`indptr\` chunk is loaded, as Python's chunked reader loads the
  whole \`indptr\` at open), then reused for every measurement of the row. Ours keeps its chunk cache
  (64 MiB LRU of decoded chunks) across the row; Python's zarr has no chunk cache, only the cached
  \`indptr\` (chunked) or nothing (byte-addressable).
- **cold**: a fresh reader per measurement, and the timed region includes opening it
  (\`openReader\` / \`SparseReader(...)\`: the block and every layout's metadata, plus for Python's
  chunked reader the whole \`indptr\`). Requests for cold rows include the open.
- The operating system's file cache is warm for both readers in every row (the store is read
  before measuring; dropping it needs root); HTTP connections are kept alive across measurements.
- Requests are counted at the store: ours through \`withStats\` around the FolderStore/HttpStore,
  Python's at zarr's LocalStore (each \`get\` and each range of a \`get_partial_values\`). A **wave**
  is a moment the store goes from idle to busy: requests that run concurrently are one wave. Our
  FolderStore answers small reads by blocking calls, so reads no longer overlap in time and the
  meter would split one wave into several; our folder rows' waves are therefore counted on an
  untimed replay of the same measurements with \`blockingReads: false\` (the requests are the same).
- Each row alternates ${BLOCKS} blocks of ours and Python's measurements; positions are the same for
  both (seeded), random and distinct within a batch, in random order. Every measurement's nonzero
  count and sum of values are checked equal between the two readers.`;

// --- the store ---------------------------------------------------------------------------------

const params = {
  cells: Number(args.cells),
  genes: Number(args.genes),
  perCell: Number(args["genes-per-cell"]),
  seed: Number(args.seed),
};
const storeDir = join(
  repo,
  "bench/out/sporadik",
  `c${params.cells}-g${params.genes}-k${params.perCell}-s${params.seed}`,
);

async function ensureStore(): Promise<Record<string, unknown>> {
  const metaPath = join(storeDir, "meta.json");
  if (!existsSync(metaPath)) {
    console.log(`writing the store with the Python writer into ${relative(repo, storeDir)} ...`);
    await runToEnd(python, [
      join(here, "generate.py"),
      storeDir,
      "--cells",
      String(params.cells),
      "--genes",
      String(params.genes),
      "--genes-per-cell",
      String(params.perCell),
      "--seed",
      String(params.seed),
    ]);
  }
  return JSON.parse(readFileSync(metaPath, "utf8"));
}

function runToEnd(cmd: string, argv: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
  });
}

// --- the HTTP server ---------------------------------------------------------------------------

// npm `serve` (correct Range support), started by test-utils/servers.ts as the tests start it.

// --- the Python worker -------------------------------------------------------------------------

interface Measured {
  times: number[];
  requests: number[];
  waves: number[];
  nnz: number[];
  sums: number[];
}

class PythonWorker {
  readonly #child: ChildProcess;
  readonly #lines: AsyncIterator<string>;
  constructor() {
    this.#child = spawn(python, [join(here, "python_reader.py")], { stdio: ["pipe", "pipe", "inherit"] });
    process.once("exit", () => this.#child.kill());
    this.#lines = createInterface({ input: this.#child.stdout! })[Symbol.asyncIterator]();
  }
  async ask<T = Measured>(command: Record<string, unknown>): Promise<T> {
    this.#child.stdin!.write(`${JSON.stringify(command)}\n`);
    const line = await this.#lines.next();
    if (line.done) throw new Error("the Python worker exited");
    const answer = JSON.parse(line.value) as T & { error?: string };
    if (answer.error) throw new Error(`Python: ${answer.error}`);
    const times = (answer as { times?: number[] }).times;
    // Python answers in seconds.
    if (times) (answer as unknown as { times: number[] }).times = times.map((s) => s * 1000);
    return answer;
  }
  close(): void {
    this.#child.stdin!.end();
  }
}

// --- our side ----------------------------------------------------------------------------------

/** Counts waves: each time the store goes from no request in flight to one. */
class WaveMeter implements ReadableStore {
  waves = 0;
  #inFlight = 0;
  constructor(readonly inner: ReturnType<typeof withStats>) {}
  async #track<T>(call: () => Promise<T>): Promise<T> {
    if (this.#inFlight++ === 0) this.waves++;
    try {
      return await call();
    } finally {
      this.#inFlight--;
    }
  }
  get(key: string, options?: { signal?: AbortSignal }) {
    return this.#track(() => this.inner.get(key, options));
  }
  getRange(
    key: string,
    range: { offset: number; length: number } | { suffixLength: number },
    options?: { signal?: AbortSignal },
  ) {
    return this.#track(() => this.inner.getRange(key, range, options));
  }
  reset(): void {
    this.waves = 0;
    this.inner.reset();
  }
  get requests(): number {
    return this.inner.totalRequests;
  }
}

type Work = (reader: Awaited<ReturnType<Open>>) => Promise<[number, number]>;

function sumOf(values: ArrayLike<number | bigint>): number {
  let total = 0;
  for (let i = 0; i < values.length; i++) total += Number(values[i]);
  return total;
}

const single =
  (position: number): Work =>
  async (reader) => {
    const { values } = await reader.sliceAt(position);
    return [values.length, sumOf(values)];
  };

const batch =
  (positions: number[]): Work =>
  async (reader) => {
    const selection = await reader.slicesAt(positions);
    return [selection.nnz, sumOf(selection.data)];
  };

async function measureOurs(
  open: Open,
  meter: WaveMeter,
  axis: number,
  cold: boolean,
  warmup: number[],
  works: Work[],
): Promise<Measured> {
  const out: Measured = { times: [], requests: [], waves: [], nnz: [], sums: [] };
  let reader = cold ? undefined : await open(meter, { axis });
  if (reader) await reader.slicesAt(warmup);
  for (const work of works) {
    meter.reset();
    const t0 = performance.now();
    if (cold) reader = await open(meter, { axis });
    const [nnz, sum] = await work(reader!);
    out.times.push(performance.now() - t0);
    out.requests.push(meter.requests);
    out.waves.push(meter.waves);
    out.nnz.push(nnz);
    out.sums.push(sum);
  }
  return out;
}

// --- the plan ----------------------------------------------------------------------------------

/** `k` distinct positions in `[0, n)`, in random order. */
function distinct(random: () => number, n: number, k: number): number[] {
  const picked = new Map<number, number>();
  const out: number[] = [];
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(random() * (n - i));
    const atJ = picked.get(j) ?? j;
    picked.set(j, picked.get(i) ?? i);
    out.push(atJ);
  }
  return out;
}

interface Row {
  transport: "folder" | "http";
  format: "chunked" | "byte-addressable";
  axis: number;
  read: string;
  cache: "warm" | "cold";
  /** Ours as Node gets it: `@deltacells/sporadik/node`, native zstd. */
  ours: Measured;
  /** The browser-safe entry, WASM zstd (chunked rows only). */
  browser?: Measured;
  python?: Measured;
}

const label = (r: Pick<Row, "transport" | "format" | "axis" | "read" | "cache">) =>
  `${r.transport} ${r.format} axis ${r.axis} ${r.read} ${r.cache}`;

function wanted(l: string): boolean {
  return only === undefined || only.every((part) => l.includes(part));
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}
const median = (xs: number[]) => quantile(xs, 0.5);

function split<T>(items: T[], blocks: number): T[][] {
  const size = Math.ceil(items.length / blocks);
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function concat(parts: Measured[]): Measured {
  return {
    times: parts.flatMap((p) => p.times),
    requests: parts.flatMap((p) => p.requests),
    waves: parts.flatMap((p) => p.waves),
    nnz: parts.flatMap((p) => p.nnz),
    sums: parts.flatMap((p) => p.sums),
  };
}

function ms(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

function counts(m: Measured): string {
  const lo = Math.min(...m.requests);
  const hi = Math.max(...m.requests);
  const wlo = Math.min(...m.waves);
  const whi = Math.max(...m.waves);
  const req = lo === hi ? `${lo}` : `${median(m.requests)} (${lo}–${hi})`;
  const w = wlo === whi ? `${wlo}` : `${wlo}–${whi}`;
  return `${req} / ${w}`;
}

function ratioText(python: Measured | undefined, mine: Measured | undefined): string {
  if (python === undefined || mine === undefined) return "—";
  const ratio = median(python.times) / median(mine.times);
  return `${ratio.toFixed(1)}×${ratio < 2 ? " ⚠" : ""}`;
}

function tableOf(rows: Row[]): string {
  const head = [
    "| source | layout | axis | read | cache | ours median ms | ours p90 | Python median ms | Python p90 | **Python/ours** | browser path, WASM zstd: median ms | Python/browser path | ours requests / waves | Python requests / waves |",
    "|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  const lines = rows.map((r) => {
    const o = r.ours;
    const p = r.python;
    const b = r.browser;
    return `| ${r.transport} | ${r.format} | ${r.axis} | ${r.read} | ${r.cache} | ${ms(median(o.times))} | ${ms(quantile(o.times, 0.9))} | ${p ? ms(median(p.times)) : "—"} | ${p ? ms(quantile(p.times, 0.9)) : "—"} | ${ratioText(p, o)} | ${b ? ms(median(b.times)) : "—"} | ${ratioText(p, b)} | ${counts(o)} | ${p ? counts(p) : "—"} |`;
  });
  return [...head, ...lines].join("\n");
}

async function main(): Promise<void> {
  const meta = await ensureStore();
  const load0 = loadavg();
  const server = await startServe(storeDir);
  const worker = new PythonWorker();
  const version = await worker.ask<{ version: string; python: string }>({
    op: "version",
    path: "",
    axis: 0,
    cold: false,
  });
  const rows: Row[] = [];
  const started = Date.now();
  // Python's answers per (format, axis, read, cache), reused as the reference for the HTTP rows.
  const reference = new Map<string, Measured>();

  for (const format of ["chunked", "byte-addressable"] as const) {
    const folderPath = join(storeDir, format === "chunked" ? "chunked.zarr" : "ranged.zarr");
    for (const axis of [0, 1]) {
      const n = axis === 0 ? params.cells : params.genes;
      const random = mulberry32(params.seed * 1000 + axis * 10 + (format === "chunked" ? 1 : 2));
      const warmup = Array.from({ length: WARMUP }, (_, k) => Math.floor((k * n) / WARMUP));
      const plans: { read: string; cache: "warm" | "cold"; lists: number[][]; single: boolean }[] = [];
      for (const cache of ["warm", "cold"] as const) {
        const count = cache === "warm" ? SLICES : COLD_SLICES;
        plans.push({
          read: "slice",
          cache,
          single: true,
          lists: Array.from({ length: count }, () => [Math.floor(random() * n)]),
        });
        for (const size of BATCH_SIZES) {
          const reps = size >= 10_000 ? LARGE_REPS : SMALL_REPS;
          plans.push({
            read: `batch ${size.toLocaleString("en-US")}`,
            cache,
            single: false,
            lists: Array.from({ length: reps }, () => distinct(random, n, Math.min(size, n))),
          });
        }
      }
      for (const transport of ["folder", "http"] as const) {
        const inner =
          transport === "folder"
            ? new FolderStore(folderPath, { blockingReads: true })
            : new HttpStore(`${server.url}/${format === "chunked" ? "chunked.zarr" : "ranged.zarr"}`);
        const meter = new WaveMeter(withStats(inner));
        const waveMeter =
          transport === "folder"
            ? new WaveMeter(withStats(new FolderStore(folderPath, { blockingReads: false })))
            : undefined;
        for (const plan of plans) {
          const key = { transport, format, axis, read: plan.read, cache: plan.cache };
          if (!wanted(label(key))) continue;
          const oursParts: Measured[] = [];
          const browserParts: Measured[] = [];
          const pyParts: Measured[] = [];
          for (const block of split(plan.lists, BLOCKS)) {
            const works = block.map((list) => (plan.single ? single(list[0]!) : batch(list)));
            const timed = await measureOurs(entries.node, meter, axis, plan.cache === "cold", warmup, works);
            if (waveMeter) {
              // A folder store answers small reads synchronously, which collapses waves at the meter:
              // count them on a replay of the same reads through the thread pool.
              timed.waves = (
                await measureOurs(entries.node, waveMeter, axis, plan.cache === "cold", warmup, works)
              ).waves;
            }
            oursParts.push(timed);
            if (format === "chunked") {
              browserParts.push(
                await measureOurs(entries.browser, meter, axis, plan.cache === "cold", warmup, works),
              );
            }
            if (transport === "folder") {
              pyParts.push(
                await worker.ask({
                  op: plan.single ? "single" : "batch",
                  path: folderPath,
                  axis,
                  cold: plan.cache === "cold",
                  warmup,
                  ...(plan.single ? { positions: block.map((l) => l[0]) } : { batches: block }),
                }),
              );
            }
          }
          const ours = concat(oursParts);
          const browser = browserParts.length > 0 ? concat(browserParts) : undefined;
          const refKey = `${format} ${axis} ${plan.read} ${plan.cache}`;
          const python = transport === "folder" ? concat(pyParts) : undefined;
          if (python) reference.set(refKey, python);
          const check = python ?? reference.get(refKey);
          for (const mine of check ? [ours, browser] : []) {
            mine?.nnz.forEach((nnz, i) => {
              if (nnz !== check!.nnz[i] || mine.sums[i] !== check!.sums[i]) {
                throw new Error(
                  `${label(key)}: measurement ${i} read ${nnz} values summing to ${mine.sums[i]}, Python ${check!.nnz[i]} summing to ${check!.sums[i]}`,
                );
              }
            });
          }
          const row: Row = { ...key, ours, ...(browser ? { browser } : {}), ...(python ? { python } : {}) };
          rows.push(row);
          console.log(tableOf([row]).split("\n")[2]);
        }
      }
    }
  }
  worker.close();
  await server.stop();

  const load1 = loadavg();
  // The sporadik reader does not use the deltacells codec; the line records what this machine's
  // native builds are (the kernel's ISA, whether zstd-napi loaded) next to the figures.
  const codec = formatCodecInfo(await codecInfo());
  const command = `npm run bench:sporadik${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
  const misses = rows.filter((r) => r.python && median(r.python.times) / median(r.ours.times) < 2);
  const browserMisses = rows.filter(
    (r) => r.python && r.browser && median(r.python.times) / median(r.browser.times) < 2,
  );
  const text = `# sporadik read benchmark: @deltacells/sporadik vs Python sporadik ${version.version}

Generated by \`bench/sporadik/run.ts\` on ${new Date().toISOString()} in ${((Date.now() - started) / 1000).toFixed(0)} s.
Reproduce with:

\`\`\`
${command}
\`\`\`

Machine: ${availableParallelism()} cores, shared; load average ${load0.map((x) => x.toFixed(1)).join(" ")} at the start, ${load1.map((x) => x.toFixed(1)).join(" ")} at the end. Node ${process.version}, Python ${version.python}. deltacells codec here (\`codecInfo()\`): ${codec}.

Store (written by ${String(meta.writer)} into \`${relative(repo, storeDir)}\`): ${Number(meta.cells).toLocaleString("en-US")} × ${Number(meta.genes).toLocaleString("en-US")}, ${Number(meta.nnz).toLocaleString("en-US")} nonzeros (${JSON.stringify(meta.nnz_per_cell)} per cell, ${JSON.stringify(meta.nnz_per_gene)} per gene), dtypes ${JSON.stringify(meta.dtypes)}; both layouts (axis 0 = CSR, axis 1 = CSC); **chunked** = the writer's default (32,768-element zstd chunks), **byte-addressable** = one raw chunk per array.

Python reads the folder only: sporadik ${version.version}'s reader takes a local path (\`pathlib.Path(path)\` then \`zarr.open_group\`), and the environment has neither fsspec nor obstore, so the HTTP rows have no Python figure.

${DEFINITIONS}

"ours" is what a Node user gets: \`openReader\` from \`@deltacells/sporadik/node\`, which decodes zstd chunks natively (zstd-napi, one reused decompression context) straight into reused chunk buffers. "browser path, WASM zstd" (chunked rows) is \`openReader\` from the browser-safe \`@deltacells/sporadik\`: the same reader, with zstd from zarrita's codec registry (numcodecs' WebAssembly build) and a fresh buffer per decoded chunk. Byte-addressable stores decompress nothing, so both entries run the same code there.

Per row: ${SLICES} warm / ${COLD_SLICES} cold single slices, ${SMALL_REPS} batches of 1 and of 100, ${LARGE_REPS} of 10,000. ⚠ marks a row under the goal of 2× (Python/ours < 2).

${tableOf(rows)}

${misses.length === 0 ? "Every row with a Python figure meets the 2× goal." : `${misses.length} of ${rows.filter((r) => r.python).length} rows with a Python figure miss the 2× goal: ${misses.map((r) => label(r)).join("; ")}.`} On the browser path (WASM zstd), ${browserMisses.length} of the ${rows.filter((r) => r.python && r.browser).length} chunked rows miss it${browserMisses.length > 0 ? `: ${browserMisses.map((r) => label(r)).join("; ")}` : ""}. See bench/sporadik/README.md for where the time goes.
`;
  writeFileSync(args.out, text);
  console.log(`\n${text}`);
  console.log(`wrote ${relative(repo, args.out)}`);
}

await main();
