/**
 * What reading a store written with checksums (zstd's content checksum in every chunk) costs, and
 * what the checks every decoded chunk gets anyway cost: the bench store's chunked copy
 * (`bench/sporadik/run.ts` writes it with the Python writer) against a copy whose every frame
 * carries its checksum, the compressed blocks byte for byte the same (only the frame header's flag
 * and the 4 trailing bytes differ), read through the Node entry from a local folder, alternating
 * the two stores in a random order per repetition on the same positions. Cold: a fresh reader per
 * read, opening included. Warm: the same positions read once before by the same reader (1 GiB
 * chunk cache), so nothing is decoded and the two can only differ by noise. A checksummed chunk is
 * verified by zstd as it decodes and skips the reader's range scan of `indices` (its checksum
 * covers it), so a cold row weighs one against the other. Then, per chunk of the plain store, the
 * native decode against the checksummed decode and the range scan, alternated chunk by chunk.
 * Wall and CPU time (of every thread of the process) are both reported: on a loaded machine the
 * CPU time is the steadier of the two.
 *
 *   node --import tsx --conditions=source bench/sporadik/checksum-cost.ts [--reps 15]
 *     [--only "axis 0,cold"]
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { closeDecodeWorkers, nativeZstd, openReader } from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";
import { firstOutside } from "../../packages/sporadik/src/checks.js";
import { withZstdChecksum } from "../../packages/sporadik/src/zstd-checksum.js";
import { mulberry32 } from "../../test-utils/prng.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const { values: args } = parseArgs({
  options: {
    store: { type: "string", default: join(repo, "bench/out/sporadik/c100000-g20000-k1000-s0") },
    reps: { type: "string", default: "15" },
    only: { type: "string" },
  },
});
const reps = Number(args.reps);
const only = args.only?.split(",").map((s) => s.trim());
const plainPath = join(args.store, "chunked.zarr");
const checkedPath = join(args.store, "chunked-checksums.zarr");
if (!existsSync(plainPath)) {
  throw new Error(
    `${relative(repo, plainPath)} is missing: run npm run bench:sporadik -- --quick once to write it`,
  );
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p).map((f) => join(name, f)) : [name];
  });
}

/** The checksummed copy: every frame with its checksum added, every array declaring it. */
function ensureCheckedCopy(): void {
  if (existsSync(join(checkedPath, "zarr.json"))) return;
  console.log(`writing ${relative(repo, checkedPath)} ...`);
  const files = filesUnder(plainPath);
  const metas = new Map<string, { chunk: number; width: number }>();
  for (const f of files.filter((f) => f.endsWith("zarr.json"))) {
    const json = JSON.parse(readFileSync(join(plainPath, f), "utf8"));
    if (json.node_type === "array") {
      json.codecs[1].configuration.checksum = true;
      const width = /64/.test(json.data_type) ? 8 : 4;
      metas.set(dirname(f), { chunk: json.chunk_grid.configuration.chunk_shape[0], width });
    }
    if (f !== "zarr.json") write(f, new TextEncoder().encode(JSON.stringify(json, null, 2)));
  }
  for (const f of files.filter((f) => !f.endsWith("zarr.json"))) {
    const meta = metas.get(dirname(dirname(f))) as { chunk: number; width: number };
    const frame = new Uint8Array(readFileSync(join(plainPath, f)));
    const decoded = new Uint8Array(meta.chunk * meta.width);
    nativeZstd(frame, decoded, {});
    write(f, withZstdChecksum(frame, decoded));
  }
  // The block last, as a writer would.
  write("zarr.json", readFileSync(join(plainPath, "zarr.json")));
}

function write(key: string, bytes: Uint8Array): void {
  mkdirSync(dirname(join(checkedPath, key)), { recursive: true });
  writeFileSync(join(checkedPath, key), bytes);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

interface Plan {
  label: string;
  axis: number;
  cold: boolean;
  lists: number[][];
}

/** Wall and CPU milliseconds (every thread of the process: the decode worker too) of `work`. */
async function clocked(work: () => Promise<void>): Promise<[number, number]> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await work();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return [wall, (cpu.user + cpu.system) / 1000];
}

/**
 * One read of `list`, as wall and CPU milliseconds: cold, a fresh reader opened inside the timing;
 * warm, the same list read once before by the same reader.
 */
async function timed(path: string, plan: Plan, list: number[]): Promise<[number, number]> {
  const open = () =>
    openReader(new FolderStore(path, { blockingReads: true }), {
      axis: plan.axis,
      cacheBytes: 1024 * 1024 * 1024,
    });
  const read = async (reader: Awaited<ReturnType<typeof openReader>>) => {
    if (list.length === 1) await reader.sliceAt(list[0] as number);
    else await reader.slicesAt(list);
  };
  if (plan.cold) return clocked(async () => read(await open()));
  const reader = await open();
  await read(reader);
  return clocked(() => read(reader));
}

async function main(): Promise<void> {
  ensureCheckedCopy();
  const meta = JSON.parse(readFileSync(join(args.store, "meta.json"), "utf8"));
  const random = mulberry32(11);
  const plans: Plan[] = [];
  for (const axis of [0, 1]) {
    const n = axis === 0 ? Number(meta.cells) : Number(meta.genes);
    for (const cold of [true, false]) {
      for (const size of [1, 100, 10_000]) {
        const count = size === 10_000 ? Math.max(3, Math.ceil(reps / 3)) : reps;
        plans.push({
          label: `axis ${axis}, ${size === 1 ? "one slice" : `batch ${size.toLocaleString("en-US")}`}, ${cold ? "cold" : "warm"}`,
          axis,
          cold,
          lists: Array.from({ length: count }, () =>
            Array.from({ length: size }, () => Math.floor(random() * n)),
          ),
        });
      }
    }
  }
  const load0 = loadavg();
  const started = new Date();
  console.log(`plain ${relative(repo, plainPath)} against checksummed ${relative(repo, checkedPath)}`);
  console.log(
    "| row | plain wall (ms) | checksums wall (ms) | wall ratio | plain CPU (ms) | checksums CPU (ms) | CPU ratio |",
  );
  console.log("|---|--:|--:|--:|--:|--:|--:|");
  for (const plan of plans) {
    if (only && !only.every((part) => plan.label.includes(part))) continue;
    const wall: [number[], number[]] = [[], []];
    const cpu: [number[], number[]] = [[], []];
    const wallRatios: number[] = [];
    const cpuRatios: number[] = [];
    for (const list of plan.lists) {
      const first = random() < 0.5;
      const [a, b] = first ? [plainPath, checkedPath] : [checkedPath, plainPath];
      const ta = await timed(a, plan, list);
      const tb = await timed(b, plan, list);
      const [p, c] = first ? [ta, tb] : [tb, ta];
      wall[0].push(p[0]);
      wall[1].push(c[0]);
      cpu[0].push(p[1]);
      cpu[1].push(c[1]);
      wallRatios.push(c[0] / p[0]);
      cpuRatios.push(c[1] / Math.max(p[1], 1e-3));
    }
    const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
    console.log(
      `| ${plan.label} | ${f(median(wall[0]))} | ${f(median(wall[1]))} | ${median(wallRatios).toFixed(3)} | ${f(median(cpu[0]))} | ${f(median(cpu[1]))} | ${median(cpuRatios).toFixed(3)} |`,
    );
  }
  await closeDecodeWorkers();

  // Per chunk: native decode, the same with the checksum verified, and the decode-time range check.
  for (const axis of [0, 1]) {
    const dir = join(plainPath, `layouts/axis${axis}/indices/c`);
    const names = readdirSync(dir).slice(0, 120);
    const extent = axis === 0 ? Number(meta.genes) : Number(meta.cells);
    const into = new Uint8Array(32_768 * 4);
    const view = new Int32Array(into.buffer);
    const decode: number[] = [];
    const verify: number[] = [];
    const range: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const name of names) {
        const frame = new Uint8Array(readFileSync(join(dir, name)));
        const framed = new Uint8Array(readFileSync(join(checkedPath, `layouts/axis${axis}/indices/c`, name)));
        const t0 = performance.now();
        nativeZstd(frame, into, {});
        const t1 = performance.now();
        nativeZstd(framed, into, {});
        const t2 = performance.now();
        if (firstOutside(view, view.length, extent) >= 0) throw new Error(`${name}: out of range`);
        const t3 = performance.now();
        decode.push(t1 - t0);
        verify.push(t2 - t1);
        range.push(t3 - t2);
      }
    }
    const paired = (xs: number[]) => median(xs.map((x, i) => x / (decode[i] as number)));
    console.log(
      `axis ${axis} indices chunks (${names.length}, 3 rounds), medians per chunk: native decode ${(median(decode) * 1000).toFixed(0)} µs; with the checksum ${(median(verify) * 1000).toFixed(0)} µs (${paired(verify).toFixed(3)}x); range scan ${(median(range) * 1000).toFixed(0)} µs (${(paired(range) * 100).toFixed(0)}% of the decode)`,
    );
  }
  const load1 = loadavg();
  console.log(
    `${started.toISOString()} to ${new Date().toISOString()}; load average (1 min) ${load0[0]?.toFixed(1)} at start, ${load1[0]?.toFixed(1)} at end`,
  );
}

await main();
