/**
 * The slot path's work per nonzero on one thread, against the full decode the codec ceiling does:
 * every tile of a dataset (a) decoded whole into recycled arrays, (b) the same renumbered to the
 * source's gene order (`columns`: gene_order.npy), (c) scattered into 4 shared batch-sized targets
 * (rows spread over them as the loader's batches do), (d) the same renumbered: what the loader's
 * workers do for each tile; and the row copies into those targets alone, from a buffer in cache
 * (the cost of writing the batches to memory, which the ceiling's recycled tile outputs, small
 * enough to stay in cache, never pay). CPU nanoseconds per nonzero of this thread, the median of `--reps`
 * interleaved passes (CPU time moves less with the machine's load than wall time).
 *
 *   node --import tsx --conditions=source bench/loader/scatter.ts DATASET [--reps 5]
 */
import { parseArgs } from "node:util";
import { copyRange } from "../../packages/deltacells/src/codec/copy.js";
import { decodeTileSync } from "../../packages/deltacells/src/codec/decode.js";
import { inspectTile } from "../../packages/deltacells/src/codec/layout.js";
import { loadNativeKernel, nativeKernel } from "../../packages/deltacells/src/codec/native.js";
import { type ScatterTarget, scatterTileSync } from "../../packages/deltacells/src/codec/scatter.js";
import { loadZstd } from "../../packages/deltacells/src/codec/zstd/load.js";
import { nnzOf } from "../../packages/deltacells/src/dataset/manifest.js";
import { openDataset } from "../../packages/deltacells/src/node.js";
import { threadSched } from "../cpu.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { reps: { type: "string", default: "5" } },
});
const ds = await openDataset(positionals[0]!);
const zstd = await loadZstd();
await loadNativeKernel();
const tiles = await Promise.all(Array.from({ length: ds.nTiles }, (_, t) => ds.tileBytes(t)));
const layouts = tiles.map((b) => inspectTile(b, { skipCrc: true }));
const columns = (await ds.geneOrder()) ?? Int32Array.from({ length: ds.nGenes }, (_, j) => j);
const nnz = nnzOf(ds.manifest);
const most = Math.max(...ds.manifest.tile_nnz);
await ds.close();

// Whole-tile outputs, recycled (the ceiling's pool recycles its outputs too).
const out = {
  indptr: new Float64Array(ds.manifest.tile_size + 1),
  indices: new Int32Array(most),
  data: new Int32Array(most),
};
// 4 batch-sized shared targets (4096 cells of the bench's ~1,600 nonzeros each); each tile's rows
// go round-robin over them, 64 rows at a time, at the next free offset.
const SIZE = 4096 * 1700;
const shared = () => new Int32Array(new SharedArrayBuffer(4 * SIZE));
const targets: ScatterTarget[] = Array.from({ length: 4 }, () => ({ indices: shared(), data: shared() }));
const free = [0, 0, 0, 0];
const slotsOf = layouts.map((l) => {
  const n = l.header.nCells;
  const slots = new Float64Array(3 * n);
  for (let r = 0; r < n; r++) {
    const t = (r >> 6) % 4;
    const len = l.indptr[r + 1]! - l.indptr[r]!;
    if (free[t]! + len > SIZE) free[t] = 0;
    slots.set([r, t, free[t]!], 3 * r);
    free[t]! += len;
  }
  return slots;
});

// A row's worth of values, always in cache.
const hot = new Int32Array(Math.max(...layouts.map((l) => maxRow(l.indptr))));
function maxRow(indptr: Float64Array): number {
  let m = 0;
  for (let r = 0; r + 1 < indptr.length; r++) m = Math.max(m, indptr[r + 1]! - indptr[r]!);
  return m;
}

/** This thread's CPU nanoseconds (its own, not V8's helper threads': see the top). */
const cpuNs = () => threadSched().cpu * 1e9;
const variants: Record<string, () => void> = {
  "full decode (the ceiling's work)": () => {
    for (const b of tiles) decodeTileSync(b, zstd, { out });
  },
  "decode renumbered": () => {
    for (const b of tiles) decodeTileSync(b, zstd, { out, columns });
  },
  "the row copies alone (from a buffer in cache)": () => {
    for (let t = 0; t < tiles.length; t++) {
      const l = layouts[t]!;
      const slots = slotsOf[t]!;
      for (let q = 0; q < slots.length; q += 3) {
        const r = slots[q]!;
        const len = l.indptr[r + 1]! - l.indptr[r]!;
        const target = targets[slots[q + 1]!]!;
        copyRange(target.indices!, slots[q + 2]!, hot, 0, len);
        copyRange(target.data!, slots[q + 2]!, hot, 0, len);
      }
    }
  },
  "scatter into batches": () => {
    for (let t = 0; t < tiles.length; t++)
      scatterTileSync(tiles[t]!, layouts[t]!, zstd, { values: "int32", slots: slotsOf[t]!, targets });
  },
  "scatter renumbered (the loader's slot path)": () => {
    for (let t = 0; t < tiles.length; t++)
      scatterTileSync(tiles[t]!, layouts[t]!, zstd, {
        values: "int32",
        slots: slotsOf[t]!,
        targets,
        columns,
      });
  },
};
const times = new Map<string, number[]>();
for (const f of Object.values(variants)) f(); // warm: first touch of every buffer
for (let rep = 0; rep < Number(args.reps); rep++)
  for (const [name, f] of Object.entries(variants)) {
    const t0 = cpuNs();
    f();
    times.set(name, [...(times.get(name) ?? []), (cpuNs() - t0) / nnz]);
  }
const med = (v: number[]) => [...v].sort((a, b) => a - b)[(v.length - 1) >> 1]!;
const base = med(times.get("full decode (the ceiling's work)")!);
console.log(
  `${tiles.length} tiles, ${nnz} nonzeros; kernel ${nativeKernel() ? "native" : "TypeScript"}${nativeKernel()?.copyMapped ? " with copyMapped" : ""}`,
);
console.log("| per tile, one thread | CPU ns per nonzero | vs the full decode |\n|---|---|---|");
for (const [name, v] of times)
  console.log(`| ${name} | ${med(v).toFixed(2)} | ${(med(v) / base).toFixed(2)}x |`);
