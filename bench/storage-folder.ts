/**
 * FolderStore read cost for many small requests (what the sporadik reader does), against the
 * previous implementation (fs/promises: a FileHandle per call, open + fstat + read + close for
 * every range), kept inline below as the reference and measured in the same run.
 *
 *   node --import tsx --conditions=source bench/storage-folder.ts [--reps 5] [--ranges 20000] [--gets 2000]
 *
 * Workloads on a temporary folder (removed afterwards):
 * - `getRange` of 64..1087 bytes at random offsets in 4 objects of 1 MiB, one call at a time and
 *   with 64 calls in flight (the sporadik reader's cap);
 * - `get` of 2,000 distinct objects of 1..4 KiB, one at a time and 64 in flight.
 * Each figure is the median of `--reps` runs; the two stores alternate within every rep.
 */
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { FolderStore } from "@deltacells/storage/node";

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "5" },
    ranges: { type: "string", default: "20000" },
    gets: { type: "string", default: "2000" },
  },
});
const REPS = Number(args.reps);
const N_RANGES = Number(args.ranges);
const N_GETS = Number(args.gets);
const CONCURRENCY = 64;
const RANGE_OBJECTS = 4;
const RANGE_OBJECT_BYTES = 1 << 20;

type Range = { offset: number; length: number };
interface Reader {
  get(key: string): Promise<Uint8Array | undefined>;
  getRange(key: string, range: Range): Promise<Uint8Array | undefined>;
}

/** The previous FolderStore read path, as it was before raw descriptors (reference only). */
class PromisesFolder implements Reader {
  constructor(readonly root: string) {}
  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const buf = await readFile(join(this.root, key));
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  }
  async getRange(key: string, range: Range): Promise<Uint8Array | undefined> {
    const handle = await open(join(this.root, key), "r");
    try {
      const { size } = await handle.stat();
      if (range.offset + range.length > size) throw new Error("range not satisfiable");
      const out = new Uint8Array(range.length);
      let done = 0;
      while (done < out.length) {
        const { bytesRead } = await handle.read(out, done, out.length - done, range.offset + done);
        if (bytesRead === 0) throw new Error("short read");
        done += bytesRead;
      }
      return out;
    } finally {
      await handle.close();
    }
  }
}

/** A small deterministic PRNG so both stores get the same requests. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Runs `n` tasks with at most `width` in flight. */
async function pool(n: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, n) }, lane));
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

const root = await mkdtemp(join(tmpdir(), "dc-bench-folder-"));
try {
  const rnd = lcg(42);
  const rangeKeys = Array.from({ length: RANGE_OBJECTS }, (_, i) => `ranged/obj${i}.bin`);
  const contents = new Map<string, Uint8Array>();
  for (const key of rangeKeys) {
    const bytes = new Uint8Array(RANGE_OBJECT_BYTES).map(() => (rnd() * 256) | 0);
    contents.set(key, bytes);
  }
  const getKeys = Array.from({ length: N_GETS }, (_, i) => `small/${i % 50}/${i}.bin`);
  const setup = new FolderStore(root);
  for (const [key, bytes] of contents) await setup.set(key, bytes);
  for (const key of getKeys) {
    const bytes = new Uint8Array(1024 + ((rnd() * 3072) | 0)).map(() => (rnd() * 256) | 0);
    contents.set(key, bytes);
    await mkdir(dirname(join(root, key)), { recursive: true });
    await writeFile(join(root, key), bytes); // no fsync per object: setup only
  }
  const ranges = Array.from({ length: N_RANGES }, () => {
    const key = rangeKeys[(rnd() * RANGE_OBJECTS) | 0]!;
    const length = 64 + ((rnd() * 1024) | 0);
    const offset = (rnd() * (RANGE_OBJECT_BYTES - length)) | 0;
    return { key, range: { offset, length } };
  });

  const stores: [string, Reader][] = [
    ["fs/promises (before)", new PromisesFolder(root)],
    // As measured in bench/RESULTS.md: with blocking whole-object reads (opt-in since; the CLI's setting).
    ["FolderStore (after)", new FolderStore(root, { blockingReads: true })],
  ];

  // Both stores must give the same bytes as were written, or the timing means nothing.
  for (const [name, store] of stores) {
    for (const { key, range } of ranges.slice(0, 200)) {
      const got = await store.getRange(key, range);
      const want = contents.get(key)!.subarray(range.offset, range.offset + range.length);
      if (got === undefined || Buffer.compare(got, want) !== 0)
        throw new Error(`${name}: wrong bytes for ${key}`);
    }
    for (const key of getKeys.slice(0, 50)) {
      const got = await store.get(key);
      if (got === undefined || Buffer.compare(got, contents.get(key)!) !== 0) {
        throw new Error(`${name}: wrong bytes for ${key}`);
      }
    }
  }

  const workloads: [string, number, (s: Reader) => Promise<void>][] = [
    [
      `getRange x${N_RANGES}, sequential`,
      N_RANGES,
      async (s) => {
        for (const { key, range } of ranges) await s.getRange(key, range);
      },
    ],
    [
      `getRange x${N_RANGES}, ${CONCURRENCY} in flight`,
      N_RANGES,
      (s) => pool(ranges.length, CONCURRENCY, (i) => s.getRange(ranges[i]!.key, ranges[i]!.range)),
    ],
    [
      `get x${N_GETS}, sequential`,
      N_GETS,
      async (s) => {
        for (const key of getKeys) await s.get(key);
      },
    ],
    [
      `get x${N_GETS}, ${CONCURRENCY} in flight`,
      N_GETS,
      (s) => pool(getKeys.length, CONCURRENCY, (i) => s.get(getKeys[i]!)),
    ],
  ];

  console.log(`FolderStore read benchmark: median of ${REPS} runs, ${root}`);
  console.log(
    `${"workload".padEnd(34)} ${"before ms".padStart(10)} ${"after ms".padStart(10)} ${"µs/call".padStart(16)} ${"speed-up".padStart(9)}`,
  );
  for (const [name, calls, run] of workloads) {
    const times: number[][] = stores.map(() => []);
    await run(stores[0]![1]); // warm-up of both, also fills the page cache
    await run(stores[1]![1]);
    for (let r = 0; r < REPS; r++) {
      // Alternate the order so neither store always runs right after the other's garbage.
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) times[i]!.push(await timed(() => run(stores[i]![1])));
    }
    const [before, after] = times.map(median) as [number, number];
    const perCall = `${((before * 1000) / calls).toFixed(1)} -> ${((after * 1000) / calls).toFixed(1)}`;
    console.log(
      `${name.padEnd(34)} ${before.toFixed(1).padStart(10)} ${after.toFixed(1).padStart(10)} ${perCall.padStart(16)} ${`${(before / after).toFixed(2)}x`.padStart(9)}`,
    );
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
