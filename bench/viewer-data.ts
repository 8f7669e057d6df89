/**
 * The synthetic dataset the viewer's benches open: `nCells` cells x 2,000 genes (~50 per cell,
 * `bench/synthetic-source.ts`), 12 Gaussian clusters as its `X_umap`, three categorical columns
 * (the cluster as `cluster`, `batch` of 8 and `phase` of 3) and a barcode index, written with its
 * sporadik companion, statistics and the companion's rows in embedding order (as `deltacells
 * convert --sporadik --sporadik-rows` does).
 */
import { join } from "node:path";
import { createTilePool, type DatasetSource, writeDataset } from "@deltacells/core";
import { writeDatasetStats, writeEmbeddingRows, zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { writeCompanion } from "../packages/cli/src/convert/companion.js";
import { Locations } from "../packages/cli/src/locations.js";
import { ProgressBar } from "../packages/cli/src/progress.js";
import { mulberry32 } from "../test-utils/prng.js";
import { syntheticSource } from "./synthetic-source.js";

/**
 * The dataset's embedding: `nCells` cells in 12 Gaussian clusters (the same cells for the same
 * `nCells`), as interleaved (x, y) pairs, with each cell's cluster and the clusters' centres.
 */
export function clusters(nCells: number): {
  umap: Float32Array;
  codes: Int32Array;
  centres: (readonly [number, number])[];
} {
  const rand = mulberry32(7);
  const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-300)) * Math.cos(2 * Math.PI * rand());
  const centres = Array.from({ length: 12 }, () => [gauss() * 8, gauss() * 8] as const);
  const umap = new Float32Array(nCells * 2);
  const codes = new Int32Array(nCells);
  for (let i = 0; i < nCells; i++) {
    const k = Math.floor(rand() * 12);
    codes[i] = k;
    umap[2 * i] = centres[k]![0] + gauss();
    umap[2 * i + 1] = centres[k]![1] + gauss();
  }
  return { umap, codes, centres };
}

/** Writes the dataset at `<root>/<name>` (default `synthetic`) and returns its path. */
export async function buildSynthetic(root: string, nCells: number, name = "synthetic"): Promise<string> {
  const dir = join(root, name);
  // Given to the writer as the source's obs and obsm, which it writes as the obs sidecar
  // (`cluster`, `X_umap_0`, `X_umap_1`).
  const { umap, codes, centres } = clusters(nCells);
  const source: DatasetSource = {
    ...syntheticSource({ nCells, nGenes: 2000, genesPerCell: 50 }),
    obs: async () => ({
      indexName: "barcode",
      index: Array.from({ length: nCells }, (_, i) => `cell${i}`),
      columns: [
        {
          name: "cluster",
          kind: "category",
          codes,
          categories: centres.map((_, k) => `c${k}`),
          ordered: false,
        },
        {
          name: "batch",
          kind: "category",
          codes: Int32Array.from({ length: nCells }, (_, i) => Math.imul(i, 0x9e3779b1) >>> 29),
          categories: Array.from({ length: 8 }, (_, k) => `batch ${k}`),
          ordered: false,
        },
        {
          name: "phase",
          kind: "category",
          codes: Int32Array.from({ length: nCells }, (_, i) => (Math.imul(i, 40503) >>> 0) % 3),
          categories: ["G1", "S", "G2M"],
          ordered: false,
        },
      ],
    }),
    obsmKeys: async () => ["X_umap"],
    obsm: async () => ({ X_umap: { kind: "dense", shape: [nCells, 2], values: umap } }),
  };
  const pool = createTilePool({ threads: 2 });
  try {
    await writeDataset(source, new FolderStore(dir), {
      encoder: pool,
      compress: zstdCompressor(3),
      level: 3,
      inFlight: 4,
    });
  } finally {
    await pool.close();
  }
  // As `convert --sporadik` writes it: with checksums, then the statistics.
  await writeCompanion(new Locations(), dir, {
    threads: 2,
    bar: new ProgressBar(process.stderr, false),
    checksums: true,
    breakLock: false,
    writer: "bench/viewer-data.ts",
  });
  await writeDatasetStats(new FolderStore(dir), { threads: 2 });
  // And the companion's rows in embedding order, as `--sporadik-rows` adds them.
  await writeEmbeddingRows(dir, { openStore: (location) => new FolderStore(location), threads: 2 });
  return dir;
}
