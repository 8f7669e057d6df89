/**
 * The obs sidecar against independent readers: every input kind converted with `deltacells
 * convert`, then pyarrow and pandas read the shards (one row group per tile, Arrow types as in
 * schema.json, zstd, no statistics, values equal to the source's obs and obsm read by anndata or
 * h5py) and recompute the fingerprint with json.dumps; the local Arrow cache files open in
 * pyarrow with one record batch per tile; `deltacells export` to .h5ad gives back the source's
 * obs in anndata (index, categoricals, nulls) and its embeddings in obsm (conformance/obs_check.py,
 * one batch).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { openDataset } from "@deltacells/core/node";
import { convert } from "../src/convert/command.js";
import { exportCommand } from "../src/export/command.js";
import { PYTHON, run, tempDir } from "./cli-helpers.js";

interface Case {
  kind: string;
  input: string;
  opts?: string[];
  label?: string;
  /** What the Python side must expect (mirrors opts). */
  check?: { obsm?: string[]; exclude?: string[]; max_categories?: number };
}

const CASES: Case[] = [
  { kind: "h5ad", input: "data/anndata/csr.h5ad", label: "anndata 0.12: every column encoding, obsm X_pca" },
  {
    kind: "h5ad",
    input: "data/anndata/obs-encodings.h5ad",
    opts: ["--tile-size", "16", "--obs-tiles-per-file", "2"],
    label:
      "every column encoding: numpy ints/floats/bool, nullable Int*/UInt*/boolean/string with and without missing values, 3 tiles",
  },
  {
    kind: "anndata-zarr",
    input: "data/anndata/obs-encodings.zarr",
    opts: ["--tile-size", "16"],
    label: "zarr v3, every column encoding",
  },
  { kind: "anndata-zarr", input: "data/anndata/csr-v2.zarr" },
  ...[2, 3].map((v) => ({
    kind: "anndata-zarr",
    input: `data/anndata/obs-datetime-v${v}.zarr`,
    opts: ["--obs-exclude", "gap", "--tile-size", "5"],
    check: { exclude: ["gap"] },
    label: `zarr v${v}: datetime64 columns kept as ISO-8601 text, a timedelta64 one excluded`,
  })),
  {
    kind: "anndata-zarr",
    input: "data/mouse-10k-subset/10x-10k-subset.zarr",
    opts: ["--tile-size", "4000"],
    label: "pre-0.7 zarr: obs and var as record arrays, 3 tiles",
  },
  { kind: "anndata-zarr", input: "data/anndata/csr-v3.zarr" },
  { kind: "h5ad", input: "data/anndata/obs-0.7.h5ad", label: "anndata 0.7 __categories" },
  {
    kind: "h5ad",
    input: "data/anndata/obs-compound.h5ad",
    label: "anndata < 0.7 compound obs, uns/*_categories",
  },
  {
    kind: "h5ad",
    input: "data/pbmc68k-counts/pbmc68k_counts.h5ad",
    opts: ["--tile-size", "64", "--obs-tiles-per-file", "4", "--obsm", "X_umap,X_pca"],
    check: { obsm: ["X_umap", "X_pca"] },
    label: "pbmc68k, 11 tiles in 3 shards, a 50-column X_pca asked for",
  },
  {
    kind: "h5ad",
    input: "data/anndata/csr.h5ad",
    opts: ["--max-categories", "3", "--obsm", "none"],
    check: { obsm: [], max_categories: 3 },
    label: "a categorical over --max-categories becomes a string column",
  },
  {
    kind: "h5ad",
    input: "data/anndata/obs-unsupported.h5ad",
    opts: ["--obs-exclude", "when,nested"],
    check: { exclude: ["when", "nested"] },
    label: "unsupported columns excluded",
  },
  { kind: "10x-h5", input: "data/10x-v3-chr21/filtered_feature_bc_matrix.h5", opts: ["--tile-size", "100"] },
  { kind: "10x-h5", input: "data/10x-v2/filtered_gene_bc_matrices_h5.h5" },
  { kind: "10x-mtx", input: "data/10x-v3-chr21/filtered_feature_bc_matrix", opts: ["--tile-size", "100"] },
];

const results = new Map<Case, { ok: boolean; problems: string[]; columns: string[] } | Error>();

before(async () => {
  const dir = tempDir();
  const batch: Record<string, unknown>[] = [];
  const ran: Case[] = [];
  for (const [i, c] of CASES.entries()) {
    const ds = join(dir, `ds${i}`);
    try {
      await convert([c.input, ds, "--level", "3", "--threads", "2", "--quiet", ...(c.opts ?? [])]);
      // every column through the local Arrow cache, which pyarrow then opens
      const cache = join(dir, `cache${i}`);
      await (await openDataset(ds)).obs(undefined, { cacheDir: cache });
      const exported = join(dir, `back${i}.h5ad`);
      await exportCommand([ds, exported, "--source-gene-order"]);
      batch.push({ kind: c.kind, input: c.input, dataset: ds, cache, export: exported, ...c.check });
      ran.push(c);
    } catch (err) {
      results.set(c, err as Error);
    }
  }
  const file = join(dir, "cases.json");
  writeFileSync(file, JSON.stringify(batch));
  const check = await run(PYTHON, ["conformance/obs_check.py", "--batch", file]);
  const lines = check.stdout.trim().split("\n");
  ran.forEach((c, i) => {
    results.set(
      c,
      lines[i] ? JSON.parse(lines[i]!) : new Error(`no result from obs_check.py: ${check.stderr}`),
    );
  });
});

for (const c of CASES) {
  test(`obs of ${c.kind} ${c.label ?? c.input} reads back in pyarrow/pandas equal to the source`, () => {
    const r = results.get(c);
    if (r instanceof Error) throw r;
    assert.ok(r, "the case ran");
    assert.deepEqual(r.problems, []);
    assert.ok(r.columns.length >= 1);
  });
}
