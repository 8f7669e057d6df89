/**
 * Peak memory of the dataset writer: converts a synthetic matrix (bench/synthetic-source.ts) to a
 * temporary folder through the tile pool and reports time and peak RSS (the process's maxRSS,
 * which includes the worker threads). Memory must not grow with the number of cells: run it at two
 * sizes and compare.
 *
 *   node --import tsx --conditions=source bench/convert-rss.ts --cells 1000000 --genes-per-cell 50
 *
 * `--obs` gives the source a 10-column cell table and a 2-column UMAP (12 obs columns written):
 * the obs sidecar must add little to the peak (the bound: +100 MiB at 1,000,000 cells).
 * `--obs-skip` gives the source the same table but writes no obs: the difference between the two
 * is the writer's own cost, the rest is the cell table the source holds in memory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createTilePool, DEFAULT_LEVEL, nnzOf, writeDataset } from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { syntheticSource } from "./synthetic-source.js";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "100000" },
    genes: { type: "string", default: "33000" },
    "genes-per-cell": { type: "string", default: "50" },
    "tile-size": { type: "string", default: "auto" },
    level: { type: "string", default: "19" },
    threads: { type: "string", default: "2" },
    obs: { type: "boolean", default: false },
    // the source keeps its cell table but the writer skips obs: separates the table's own memory from the writer's
    "obs-skip": { type: "boolean", default: false },
    "obs-level": { type: "string", default: "9" },
  },
});
const nCells = Number(values.cells);
const threads = Number(values.threads);
const source = syntheticSource({
  nCells,
  nGenes: Number(values.genes),
  genesPerCell: Number(values["genes-per-cell"]),
  obs: values.obs || values["obs-skip"],
});
const dir = mkdtempSync(join(tmpdir(), "deltacells-bench-"));
const pool = createTilePool({ threads });
let peakHeap = 0;
const t0 = performance.now();
let lastLog = 0;
const { manifest, bytes } = await writeDataset(source, new FolderStore(dir), {
  encoder: pool,
  compress: zstdCompressor(DEFAULT_LEVEL),
  ...(values["tile-size"] === "auto" ? {} : { tileSize: Number(values["tile-size"]) }),
  level: Number(values.level),
  inFlight: threads + 2,
  obs: { skip: values["obs-skip"], compress: zstdCompressor(Number(values["obs-level"])) },
  onProgress: (p) => {
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    const now = performance.now();
    if (now - lastLog > 10_000) {
      lastLog = now;
      console.error(
        `${p.phase} ${p.cellsDone}/${p.nCells} cells, ${((now - t0) / 1000).toFixed(0)} s, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
      );
    }
  },
});
const seconds = (performance.now() - t0) / 1000;
await pool.close();
const nnz = nnzOf(manifest);
const result = {
  cells: nCells,
  genes: manifest.n_genes,
  nnz,
  tiles: manifest.tile_cells.length,
  obs_shards: manifest.obs_shard_bytes?.length ?? 0,
  obs_bytes: (manifest.obs_shard_bytes ?? []).reduce((a, b) => a + b, 0),
  tile_size: manifest.tile_size,
  zstd_level: manifest.zstd_level,
  threads,
  seconds: Number(seconds.toFixed(1)),
  bytes,
  bytes_per_nonzero: Number((bytes / nnz).toFixed(3)),
  peak_rss_mib: Number((process.resourceUsage().maxRSS / 1024).toFixed(0)),
  peak_heap_mib: Number((peakHeap / 2 ** 20).toFixed(0)),
};
console.log(JSON.stringify(result));
rmSync(dir, { recursive: true, force: true });
