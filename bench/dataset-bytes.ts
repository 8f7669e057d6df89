/**
 * Bytes of a converted dataset against its source and against the same counts stored by anndata
 * (.h5ad with gzip, .zarr with anndata's defaults), for each real input in ../shared/data (or
 * DELTACELLS_DATA). Default converter settings (zstd 19, 8 chunks, 4096 cells per tile).
 *
 *   node --import tsx --conditions=source bench/dataset-bytes.ts
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openInput } from "@deltacells/anndata/node";
import { createTilePool, DEFAULT_LEVEL, nnzOf, writeDataset } from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";

const repo = resolve(import.meta.dirname, "..");
const data = process.env.DELTACELLS_DATA ?? resolve(repo, "../shared/data");
const INPUTS: [kind: string, path: string][] = [
  ["10x-h5", "10x-v3-chr21/filtered_feature_bc_matrix.h5"],
  ["10x-mtx", "10x-v3-chr21/filtered_feature_bc_matrix"],
  ["10x-h5", "10x-v2/filtered_gene_bc_matrices_h5.h5"],
  ["10x-h5", "visium/raw_probe_bc_matrix.h5"],
  ["anndata-zarr", "mouse-10k-subset/10x-10k-subset.zarr"],
  ["mtx", "seurat-pbmc-small/pbmc_small_counts.mtx"],
];

const pool = createTilePool({ threads: 2 });
const rows: string[] = [
  "| input | cells x genes | nonzeros | source | .h5ad (gzip) | .zarr | deltacells (all files) | of which tiles | tile bytes/nonzero | vs source | vs h5ad gzip | vs zarr |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|",
];
for (const [kind, rel] of INPUTS) {
  const path = join(data, rel);
  if (!existsSync(path)) continue;
  const dir = mkdtempSync(join(tmpdir(), "deltacells-bytes-"));
  try {
    const source = await openInput(path);
    const { manifest, bytes } = await writeDataset(source, new FolderStore(join(dir, "ds")), {
      encoder: pool,
      compress: zstdCompressor(DEFAULT_LEVEL),
    });
    await source.close();
    const py = spawnSync(
      join(repo, "conformance/.venv/bin/python"),
      [join(repo, "conformance/dataset_sizes.py"), kind, path, dir],
      { encoding: "utf8" },
    );
    if (py.status !== 0) throw new Error(py.stderr);
    const s = JSON.parse(py.stdout.trim().split("\n").at(-1)!);
    const nnz = nnzOf(manifest);
    const tiles = manifest.tile_bytes.reduce((a, b) => a + b, 0);
    const r = (x: number) => `${(bytes / x).toFixed(2)}x`;
    rows.push(
      `| ${rel} | ${manifest.n_cells} x ${manifest.n_genes} | ${nnz} | ${s.input} | ${s.h5ad_gzip} | ${s.zarr} | ${bytes} | ${tiles} | ${(tiles / Math.max(1, nnz)).toFixed(2)} | ${r(s.input)} | ${r(s.h5ad_gzip)} | ${r(s.zarr)} |`,
    );
  } catch (err) {
    rows.push(`| ${rel} | failed: ${(err as Error).message.split("\n")[0]} |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
await pool.close();
console.log(rows.join("\n"));
