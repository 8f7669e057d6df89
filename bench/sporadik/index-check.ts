/**
 * What the readers' index check (`checkIndices`) costs: batches of random slices read by two
 * readers of the same store, one checking and one not, alternating on the same positions. Warm
 * (one reader, every chunk cached) is where it weighs most: no request and no decode, only the
 * copy out of cached chunks that the check's one pass over the positions is measured against.
 * Cold: a fresh reader per batch, so chunks are fetched (from memory) and decoded again.
 *
 * The store is synthetic and in memory (cells x genes, sorted random genes per cell, int32 counts),
 * written by our writer chunked (zstd, 32,768-element chunks) and byte-addressable.
 *
 *   node --import tsx --conditions=source bench/sporadik/index-check.ts [--cells 20000]
 *     [--genes 20000] [--per-cell 500] [--reps 41]
 */
import { parseArgs } from "node:util";
import { closeDecodeWorkers, layoutOver, openReader, writeStore } from "@deltacells/sporadik/node";
import { MemoryStore } from "@deltacells/storage";
import { mulberry32 } from "../../test-utils/prng.js";

const { values: args } = parseArgs({
  options: {
    cells: { type: "string", default: "20000" },
    genes: { type: "string", default: "20000" },
    "per-cell": { type: "string", default: "500" },
    reps: { type: "string", default: "41" },
  },
});
const cells = Number(args.cells);
const genes = Number(args.genes);
const perCell = Number(args["per-cell"]);
const reps = Number(args.reps);
const random = mulberry32(7);

// CSR with `perCell` distinct sorted genes per cell: a sparse gene mask per cell, then its set bits.
const nnz = cells * perCell;
const indptr = new Int32Array(cells + 1);
const indices = new Int32Array(nnz);
const data = new Int32Array(nnz);
const mask = new Uint8Array(genes);
for (let c = 0, at = 0; c < cells; c++) {
  mask.fill(0);
  for (let k = 0; k < perCell; ) {
    const g = Math.floor(random() * genes);
    if (mask[g] === 0) {
      mask[g] = 1;
      k++;
    }
  }
  for (let g = 0; g < genes; g++) if (mask[g] === 1) indices[at++] = g;
  indptr[c + 1] = at;
}
for (let k = 0; k < nnz; k++) data[k] = 1 + Math.floor(random() * 20);
const layout = layoutOver([cells, genes], 0, { data, indices, indptr });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

console.log(
  `${cells} cells x ${genes} genes, ${perCell} per cell (${nnz} nonzeros), ${reps} alternating reps per row, warm cache`,
);
console.log("| layout | cache | batch | check on (ms) | check off (ms) | on / off |");
console.log("|---|---|--:|--:|--:|--:|");
for (const byteAddressable of [false, true]) {
  const store = new MemoryStore();
  await writeStore(store, layout, { byteAddressable, maxima: false });
  const on = await openReader(store, { axis: 0 });
  const off = await openReader(store, { axis: 0, checkIndices: false });
  // Warm both readers on every chunk first (the cache's 64 MiB holds the whole layout).
  await on.slicesOver(0, cells);
  await off.slicesOver(0, cells);
  for (const cache of ["warm", "cold"] as const) {
    for (const size of [1, 100, 10_000]) {
      const times = { on: [] as number[], off: [] as number[] };
      for (let rep = 0; rep < reps; rep++) {
        const positions = Array.from({ length: size }, () => Math.floor(random() * cells));
        // Alternate which goes first, so neither always gets the other's warmed-up CPU caches.
        const order = rep % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
        for (const which of order) {
          const checkIndices = which === "on";
          // Enough repeats of a small batch that the clock resolves it.
          const inner = cache === "warm" ? Math.max(1, Math.floor(2000 / size)) : 1;
          // Cold: a fresh reader (and cache) per batch, opening excluded; chunks decoded again.
          const readers =
            cache === "warm"
              ? [checkIndices ? on : off]
              : [await openReader(store, { axis: 0, checkIndices })];
          const t0 = performance.now();
          for (let i = 0; i < inner; i++) await (readers[0] as typeof on).slicesAt(positions);
          times[which].push((performance.now() - t0) / inner);
        }
      }
      const a = median(times.on);
      const b = median(times.off);
      console.log(
        `| ${byteAddressable ? "byte-addressable" : "chunked"} | ${cache} | ${size} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(a / b).toFixed(3)} |`,
      );
    }
  }
}
await closeDecodeWorkers();
