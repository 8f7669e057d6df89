/**
 * Microbenchmark of the decoder's native loops on one realistic tile (CPU ns per nonzero): zstd
 * alone, the gap prefix sums, the count planes, the CRC and the structural checks, each over
 * the whole tile as in a full decode (outputs into one reused tile-sized buffer).
 *
 *   node --import tsx --conditions=source bench/codec-kernels.ts [--only NAME] [--reps 5]
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { decodeTileSync, loadZstd } from "@deltacells/core";
import { checksum, inspectTile } from "../packages/deltacells/src/codec/layout.js";
import { loadNativeKernel } from "../packages/deltacells/src/codec/native.js";

const { values: args } = parseArgs({
  options: {
    only: { type: "string", default: "synthetic-12k" },
    reps: { type: "string", default: "7" },
    isa: { type: "string" },
  },
});
const dir = fileURLToPath(new URL(`./out/tiles-${args.only}-t4096-l19/`, import.meta.url));
const tiles = readdirSync(dir)
  .sort()
  .map((f) => new Uint8Array(readFileSync(join(dir, f))));
const zstd = await loadZstd();
const k = await loadNativeKernel();
if (!k) throw new Error("native kernel not built");
if (args.isa !== undefined) k.isa(Number(args.isa));
console.log(`native kernel instruction set level ${k.isa()}`);
const layouts = tiles.map((t) => inspectTile(t));
const nnz = layouts.reduce((a, l) => a + l.header.nnz, 0);
const maxNnz = Math.max(...layouts.map((l) => l.header.nnz));
const maxChunk = Math.max(...layouts.flatMap((l) => l.chunks.map((c) => c.nnzHi - c.nnzLo)));
// Every chunk's planes, decompressed once (the kernels then read them as after a decompression).
const planes = layouts.map((l, i) =>
  l.chunks.map((c) => {
    const n = c.nnzHi - c.nnzLo;
    const g = new Uint8Array(2 * n);
    const v = new Uint8Array(2 * n);
    zstd.decompressInto(tiles[i]!.subarray(c.gapsOff, c.gapsOff + c.gapsLen), g);
    zstd.decompressInto(tiles[i]!.subarray(c.valsOff, c.valsOff + c.valsLen), v);
    return { g, v, n };
  }),
);
const scratch = new Uint8Array(2 * maxChunk);
const scratch2 = new Uint8Array(2 * maxChunk);
const indices = new Int32Array(maxNnz);
const data = new Int32Array(maxNnz);
const indptr = new Float64Array(maxNnz + 1);

function cpu(fn: () => void): number {
  let n = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  do {
    fn();
    n++;
  } while (performance.now() - t0 < 200);
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) * 1e3) / n / nnz; // ns per nonzero
}
const parts: Record<string, () => void> = {
  zstd: () => {
    for (let i = 0; i < tiles.length; i++)
      for (const c of layouts[i]!.chunks) {
        const n = c.nnzHi - c.nnzLo;
        const t = tiles[i]!;
        zstd.decompressInto(t.subarray(c.gapsOff, c.gapsOff + c.gapsLen), scratch.subarray(0, 2 * n));
        zstd.decompressInto(t.subarray(c.valsOff, c.valsOff + c.valsLen), scratch.subarray(0, 2 * n));
      }
  },
  // zstd + the two kernels per chunk, as a full decode does, without the JS around them (no
  // checks of the structure, no CRC, no exceptions).
  loop: () => {
    for (let i = 0; i < tiles.length; i++) {
      const t = tiles[i]!;
      const l = layouts[i]!;
      for (const c of l.chunks) {
        const n = c.nnzHi - c.nnzLo;
        const g = scratch.subarray(0, 2 * n);
        const v = scratch2.subarray(0, 2 * n);
        zstd.decompressInto(t.subarray(c.gapsOff, c.gapsOff + c.gapsLen), g);
        k.gaps(g, n, l.indptr, c.nnzLo, c.cellLo, c.cellHi, indices, c.nnzLo, l.header.nGenes);
        zstd.decompressInto(t.subarray(c.valsOff, c.valsOff + c.valsLen), v);
        k.vals(v, n, 0, n, data, c.nnzLo);
      }
    }
  },
  gaps: () => {
    for (let i = 0; i < tiles.length; i++) {
      const l = layouts[i]!;
      l.chunks.forEach((c, j) => {
        const p = planes[i]![j]!;
        k.gaps(p.g, p.n, l.indptr, c.nnzLo, c.cellLo, c.cellHi, indices, c.nnzLo, l.header.nGenes);
      });
    }
  },
  vals: () => {
    for (let i = 0; i < tiles.length; i++) {
      const l = layouts[i]!;
      l.chunks.forEach((c, j) => {
        const p = planes[i]![j]!;
        k.vals(p.v, p.n, 0, p.n, data, c.nnzLo);
      });
    }
  },
  fill: () => {
    for (const l of layouts) {
      indices.fill(1, 0, l.header.nnz);
      data.fill(1, 0, l.header.nnz);
    }
  },
  crc: () => {
    for (const t of tiles) checksum(t.subarray(64));
  },
  inspect: () => {
    for (const t of tiles) inspectTile(t, { skipCrc: true, indptrBuffer: indptr });
  },
  full: () => {
    for (const t of tiles) decodeTileSync(t, { out: { indptr, indices, data } });
  },
  // The same with the SSE2 loops and zlib's CRC (what x86-64 hosts without AVX2 get).
  fullSse2: () => {
    const was = k.isa();
    k.isa(1);
    for (const t of tiles) decodeTileSync(t, { out: { indptr, indices, data } });
    k.isa(was);
  },
};
const res: Record<string, number[]> = {};
for (let r = 0; r < Number(args.reps); r++)
  for (const [name, fn] of Object.entries(parts)) (res[name] ??= []).push(cpu(fn));
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(
  `${args.only}: ${nnz} nonzeros, ${tiles.length} tiles; CPU ns per nonzero, medians of ${args.reps}`,
);
for (const [name, xs] of Object.entries(res)) console.log(`  ${name.padEnd(8)} ${med(xs).toFixed(3)}`);
const z = med(res.zstd!);
console.log(`  full / zstd-only throughput ratio: ${(z / med(res.full!)).toFixed(2)}x`);
