/**
 * One loader configuration's mixing, as bench/loader/mixing.ts and bench/loader/run.ts report it:
 * every rank's batches of some epochs through one mixing meter (`mixingMeter`), and the tile
 * objects the ranks read per epoch, against the dataset's tiles (1.00: each tile read once).
 */
import {
  createLoader,
  type Dataset,
  type LoaderOptions,
  type MixingReport,
  mixingMeter,
  openDataset,
} from "@deltacells/core";
import type { RangeQuery } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";

/** A folder store counting the tile objects read. */
function counting(path: string) {
  const inner = new FolderStore(path);
  let n = 0;
  const store = {
    url: inner.url,
    get: (k: string, o?: object) => {
      if (k.startsWith("tiles/")) n++;
      return inner.get(k, o);
    },
    getRange: (k: string, r: RangeQuery, o?: object) => inner.getRange(k, r, o),
  };
  return { store, reads: () => n };
}

export interface Mixing {
  report: MixingReport;
  /** Tile objects read per epoch by all ranks together, over the dataset's tiles. */
  readsPerTile: number;
  /** The batches' cells, in an order that does not depend on the world size in the elastic order. */
  batches: string;
  /** The most bytes a rank's loader held at once (`loader.memory.peakBytes`, the largest over the ranks). */
  peakBytes: number;
}

/** Every rank of a world of `worldSize` over `epochs` epochs of `options`, on the dataset at `path`. */
export async function measureMixing(
  path: string,
  ds: Dataset,
  column: string,
  options: LoaderOptions,
  worldSize: number,
  epochs: number,
): Promise<Mixing> {
  const meter = await mixingMeter(ds, column);
  let reads = 0;
  let peakBytes = 0;
  const cells: number[][] = [];
  for (let rank = 0; rank < worldSize; rank++) {
    const c = counting(path);
    const on = await openDataset(c.store);
    const loader = await createLoader(on, { ...options, rank, worldSize });
    for (let epoch = 0; epoch < epochs; epoch++) {
      loader.setEpoch(epoch);
      for await (const b of loader) {
        meter.add(b.cells, b.size);
        cells.push([epoch, b.globalIndex ?? -1, ...b.cells]);
        b.release();
      }
    }
    reads += c.reads();
    peakBytes = Math.max(peakBytes, loader.memory.peakBytes);
    await loader.close();
    await on.close();
  }
  cells.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  return {
    report: meter.report(),
    readsPerTile: reads / epochs / ds.nTiles,
    batches: JSON.stringify(cells),
    peakBytes,
  };
}

/** A table row's figures: entropy (mean, range), ratios, labels, tiles, reads. */
export function mixingCells(m: Mixing): string[] {
  const r = m.report;
  const f2 = (x: number) => x.toFixed(2);
  const range = (s: MixingReport["tilesPerBatch"]) => `${s.mean.toFixed(1)} (${s.min}-${s.max})`;
  return [
    String(r.batches),
    `${f2(r.batchEntropy.mean)}, ${f2(r.batchEntropy.min)}-${f2(r.batchEntropy.max)}`,
    f2(r.entropyRatio),
    `${f2(r.randomRatio)} (${f2(r.randomBatchEntropy)})`,
    range(r.labelsPerBatch),
    range(r.tilesPerBatch),
    f2(m.readsPerTile),
    (m.peakBytes / 2 ** 20).toFixed(1),
  ];
}

export const MIXING_HEADER = [
  "| order | world size | batches | entropy per batch (bits): mean, min-max | / dataset's | / random batch's | labels per batch | tiles per batch | tile reads per epoch / tiles | peak memory of a rank (MiB) |",
  "|---|---|---|---|---|---|---|---|---|---|",
];
