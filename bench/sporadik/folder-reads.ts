/**
 * How a chunked sporadik batch depends on how the folder store reads and where chunks decode: the
 * same random batches through four readers, in random order per batch, in one process.
 *
 *   blocking / pool reads: `FolderStore` with `blockingReads` on (opt-in) or off (the default: libuv's pool)
 *   main / workers:        zstd on the main thread only (`nativeZstd`), or with the decode workers
 *                          of large waves (`pooledZstd`, what `@deltacells/sporadik/node` uses)
 *
 *   node --import tsx --conditions=source bench/sporadik/folder-reads.ts [--axis 0] [--size 100] [--reps 60]
 *
 * Reads the store `npm run bench:sporadik` writes (bench/out/sporadik/...).
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { closeDecodeWorkers, nativeZstd, openReader, pooledZstd } from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";

const { values: args } = parseArgs({
  options: {
    store: {
      type: "string",
      default: fileURLToPath(
        new URL("../out/sporadik/c100000-g20000-k1000-s0/chunked.zarr", import.meta.url),
      ),
    },
    axis: { type: "string", default: "0" },
    size: { type: "string", default: "100" },
    reps: { type: "string", default: "60" },
  },
});
const axis = Number(args.axis);

const variants = {
  "blocking reads, decode workers (the default)": [true, pooledZstd],
  "blocking reads, main thread only": [true, nativeZstd],
  "pool reads, decode workers": [false, pooledZstd],
  "pool reads, main thread only": [false, nativeZstd],
} as const;
const readers = await Promise.all(
  Object.entries(variants).map(async ([label, [blockingReads, zstd]]) => ({
    label,
    reader: await openReader(new FolderStore(args.store, { blockingReads }), {
      axis,
      decompressors: { zstd },
    }),
    times: [] as number[],
  })),
);

let seed = 12345;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const n = readers[0]!.reader.info.slices;
const warmup = Array.from({ length: 64 }, (_, k) => Math.floor((k * n) / 64));
for (const r of readers) await r.reader.slicesAt(warmup);
for (let rep = 0; rep < Number(args.reps); rep++) {
  const positions = Array.from({ length: Number(args.size) }, () => Math.floor(random() * n));
  for (const r of [...readers].sort(() => random() - 0.5)) {
    const t0 = performance.now();
    await r.reader.slicesAt(positions);
    r.times.push(performance.now() - t0);
  }
}
console.log(`chunked axis ${axis}, batches of ${args.size}, ${args.reps} batches each (median, p10 ms):`);
for (const r of readers) {
  const t = r.times.sort((a, b) => a - b);
  console.log(
    `  ${r.label.padEnd(46)} ${t[t.length >> 1]!.toFixed(1).padStart(6)} ${t[Math.floor(t.length / 10)]!.toFixed(1).padStart(6)}`,
  );
}
await closeDecodeWorkers();
