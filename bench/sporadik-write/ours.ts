/**
 * One run of the streaming writer for the benchmark (a child process, so its peak RSS is its own):
 * reads the raw matrix of generate.ts in row blocks and writes a sporadik store into a folder, with
 * native zstd on worker threads and the spill beside the output. Prints one JSON line: seconds,
 * peak RSS, bytes spilled, and where the time went.
 *
 *   node --import tsx --conditions=source bench/sporadik-write/ours.ts MATRIX_DIR OUT AXES BYTE_ADDRESSABLE
 */
import { readdirSync, readFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  EncodePool,
  FileSpill,
  nativeEncoder,
  StreamWriter,
  TRANSPOSE_MEMORY,
  withFileParts,
} from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";
import { threadSched } from "../cpu.js";
import type { MatrixMeta } from "./generate.js";

/** CPU seconds (user, system) of every thread, by id, from /proc/self/task/<id>/stat; empty elsewhere. */
function threadTimes(): Map<string, { user: number; system: number }> {
  const out = new Map<string, { user: number; system: number }>();
  try {
    for (const task of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, "utf8");
      // After the name in parentheses: state is field 3, utime and stime fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(task, { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 });
    }
  } catch {
    // Not Linux: no per-thread figures.
  }
  return out;
}

/**
 * CPU seconds (user+system) each thread spent since `before`, for the threads past 0.05 s: "main",
 * then the others by id with their system share, which tells libuv's file threads (mostly system)
 * from the compression workers and V8's helpers (mostly user).
 */
function threadSeconds(before: Map<string, { user: number; system: number }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [task, now] of threadTimes()) {
    const was = before.get(task) ?? { user: 0, system: 0 };
    const user = now.user - was.user;
    const system = now.system - was.system;
    if (user + system < 0.05) continue;
    const key = task === String(process.pid) ? "main" : task;
    out[key] = `${(user + system).toFixed(2)} (sys ${system.toFixed(2)})`;
  }
  return out;
}

const [matrix, output, axesText, ba] = process.argv.slice(2) as [string, string, string, string];
const meta = JSON.parse(readFileSync(join(matrix, "meta.json"), "utf8")) as MatrixMeta;
const axes = axesText.split(",").map(Number);
const byteAddressable = ba === "1";
const BLOCK = 4096;

/** CPU spent so far (every thread), in seconds. */
const cpu = () => {
  const { userCPUTime, systemCPUTime } = process.resourceUsage();
  return (userCPUTime + systemCPUTime) / 1e6;
};
// Startup (loading modules, starting the compression threads, which compile the worker's sources
// through tsx here) is not the writer's work; Python's import is excluded the same way.
const pool = new EncodePool();
// Byte-addressable arrays are not compressed: that run never starts the threads.
if (!byteAddressable) {
  await Promise.all(Array.from({ length: pool.size }, () => pool.encode(new Uint8Array(64), 1)));
}
const cpuAtStart = cpu();
const t0 = performance.now();
const sched0 = threadSched();
const threads0 = threadTimes();
const spill = await FileSpill.create(dirname(output));
const folder = withFileParts(new FolderStore(output), output, { deferSync: true });
// The one sync pass before the block, timed on its own: the durability the format needs.
let flushing = 0;
const store = {
  ...folder,
  flush: async () => {
    const t = performance.now();
    await folder.flush();
    flushing += performance.now() - t;
  },
};
let rowsDone = 0;
const writer = await StreamWriter.open(store, {
  shape: [meta.nRows, meta.nCols],
  axes,
  byteAddressable,
  nnz: meta.nnz,
  dtype: "int32",
  spill,
  encoder: nativeEncoder(pool),
  // As writeStoreFromRowBlocks (the CLI): the transposition in memory up to its default bound.
  transposeMemory: TRANSPOSE_MEMORY,
  // Many writes in flight: a folder store syncs every object, and the syncs overlap.
  concurrency: 32,
  onProgress: (p) => {
    if (p.phase === "rows") rowsDone = p.done;
  },
});
const files = await Promise.all(["indptr", "indices", "data"].map((name) => open(join(matrix, name), "r")));
const [indptrFile, indicesFile, dataFile] = files as [
  import("node:fs/promises").FileHandle,
  import("node:fs/promises").FileHandle,
  import("node:fs/promises").FileHandle,
];
let reading = 0;
let rowsPhase = 0;
const tRows = performance.now();
// indptr whole (8 bytes a row), then each block of rows into one pair of buffers sized for the
// largest block and reused (the writer is done with a block's memory once writeRows resolved, as
// an input reader reuses its buffers): no 48 MB of fresh memory, page-faulted, per block.
const bounds = new BigInt64Array(meta.nRows + 1);
await indptrFile.read(new Uint8Array(bounds.buffer), 0, bounds.byteLength, 0);
let most = 0;
for (let start = 0; start < meta.nRows; start += BLOCK) {
  const end = Math.min(start + BLOCK, meta.nRows);
  most = Math.max(most, Number(bounds[end]) - Number(bounds[start]));
}
const indicesBuffer = new Int32Array(most);
const dataBuffer = new Int32Array(most);
reading += performance.now() - tRows;
for (let start = 0; start < meta.nRows; start += BLOCK) {
  const n = Math.min(BLOCK, meta.nRows - start);
  const r0 = performance.now();
  const lo = Number(bounds[start]);
  const hi = Number(bounds[start + n]);
  const indices = indicesBuffer.subarray(0, hi - lo);
  const data = dataBuffer.subarray(0, hi - lo);
  if (hi > lo) {
    await indicesFile.read(new Uint8Array(indices.buffer, 0, (hi - lo) * 4), 0, (hi - lo) * 4, lo * 4);
    await dataFile.read(new Uint8Array(data.buffer, 0, (hi - lo) * 4), 0, (hi - lo) * 4, lo * 4);
  }
  const indptr = new Float64Array(n + 1);
  for (let r = 0; r <= n; r++) indptr[r] = Number(bounds[start + r]) - lo;
  reading += performance.now() - r0;
  await writer.writeRows({ nRows: n, indptr, indices, data });
}
rowsPhase = performance.now() - tRows;
const tFinish = performance.now();
const result = await writer.finish();
const finishing = performance.now() - tFinish;
await Promise.all(files.map((file) => file.close()));
const threads = threadSeconds(threads0);
await pool.close();
const seconds = (performance.now() - t0) / 1000;
const sched1 = threadSched();
// The main thread's wall time split: running, runnable but waiting for a core (other processes'
// load), and idle (waiting for I/O or workers): the idle part is what load does not explain.
const mainThread = {
  cpu: sched1.cpu - sched0.cpu,
  queued: sched1.queued - sched0.queued,
  idle: seconds - (sched1.cpu - sched0.cpu + sched1.queued - sched0.queued),
};
console.log(
  JSON.stringify({
    writer: "ours",
    seconds,
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
    // CPU of every thread (main and workers): on a shared, loaded box, the figure load does not inflate.
    cpuSeconds: cpu() - cpuAtStart,
    bytesSpilled: result.bytesSpilled,
    bytesInMemory: result.bytesInMemory,
    peakSpillBytes: result.peakSpillBytes,
    rows: rowsDone,
    threads,
    mainThread,
    phases: {
      reading: reading / 1000,
      rows: (rowsPhase - reading) / 1000,
      finish: (finishing - flushing) / 1000,
      sync: flushing / 1000,
    },
  }),
);
