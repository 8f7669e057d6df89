/**
 * `convert --sporadik --sporadik-rows`: the companion's rows in embedding order are a valid
 * sporadik store that Python sporadik, zarr-python and anndata read, and its rows, put back in
 * cell order through its `order.npy`, are the companion's exactly (conformance/embedding_rows_check.py);
 * the manifest names it with the digest of the order, which the order computed again from the
 * dataset's own embedding gives; refused without --sporadik.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { embeddingOrder, embeddingRowsOf, openDataset, orderDigest } from "@deltacells/core";
import { FolderStore } from "@deltacells/storage/node";
import { cli, PYTHON, run, tempDir } from "./cli-helpers.js";

const PBMC = "data/pbmc68k-counts/pbmc68k_counts.h5ad";
const dir = tempDir();

test("the rows in embedding order are read by Python sporadik, zarr and anndata as the companion's rows, reordered", async () => {
  const out = join(dir, "pbmc");
  const r = await cli(
    "convert",
    PBMC,
    out,
    "--sporadik",
    "--sporadik-rows",
    "--quiet",
    "--threads",
    "1",
    "--json",
  );
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { sporadik_rows: { embedding: string[]; bytes: number } };
  assert.deepEqual(summary.sporadik_rows.embedding, ["X_umap_0", "X_umap_1"]);
  assert.ok(summary.sporadik_rows.bytes > 0);
  const py = await run(PYTHON, ["conformance/embedding_rows_check.py", out]);
  assert.equal(py.code, 0, py.stderr);
  const check = JSON.parse(py.stdout) as Record<string, unknown>;
  assert.deepEqual(check, {
    shape: [700, 765],
    layouts: [0],
    nnz: check.nnz,
    order_is_permutation: true,
    sporadik: true,
    zarr: true,
    anndata: true,
    differs_from_cell_order: true,
  });
  // The digest the manifest records is that of the order computed again from the embedding.
  const ds = await openDataset(new FolderStore(out));
  const named = embeddingRowsOf(ds)!;
  const frame = await ds.obs(named.embedding);
  const [x, y] = named.embedding.map((name) => {
    const column = frame.columns.find((c) => c.name === name)!;
    const values = new Float32Array(ds.nCells);
    let at = 0;
    for (let t = 0; t < column.table.batches.length; t++) {
      const tile = column.tile(t).toArray() as Float32Array;
      values.set(tile, at);
      at += tile.length;
    }
    return values;
  }) as [Float32Array, Float32Array];
  assert.equal(orderDigest(embeddingOrder(x, y)), named.digest);
  // validate checks the dataset and its companion; the rows' store is a sporadik store of its own.
  assert.equal((await cli("validate", out, "--quiet")).code, 0);
  assert.equal((await cli("validate", join(out, "sporadik-rows"), "--quiet")).code, 0);
});

test("--sporadik-rows without --sporadik is refused, naming what it needs", async () => {
  const r = await cli("convert", PBMC, join(dir, "no"), "--sporadik-rows", "--quiet");
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--sporadik-rows applies with --sporadik only/);
});

test("--sporadik-rows sorts through --tmp-dir and leaves it empty", async () => {
  const tmp = join(dir, "tmp");
  const r = await cli(
    "convert",
    PBMC,
    join(dir, "tmp-dir"),
    "--sporadik",
    "--sporadik-rows",
    "--tmp-dir",
    tmp,
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(r.code, 0, r.stderr);
  // Made by the rows' writer (the dataset and its companion take no temporary folder of their own).
  assert.deepEqual(readdirSync(tmp), []);
  assert.equal((await cli("validate", join(dir, "tmp-dir", "sporadik-rows"), "--quiet")).code, 0);
  const plain = await cli("convert", PBMC, join(dir, "tmp-dir-plain"), "--tmp-dir", tmp, "--quiet");
  assert.equal(plain.code, 2, plain.stderr);
  assert.match(plain.stderr, /--tmp-dir applies to --format sporadik and --sporadik-rows only/);
});

test("a dataset without an embedding is refused by --sporadik-rows as NotFound, naming the columns it needs", async () => {
  const r = await cli(
    "convert",
    PBMC,
    join(dir, "no-obs"),
    "--sporadik",
    "--sporadik-rows",
    "--no-obs",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /error \[NotFound\]: \S+no-obs has no embedding in obs \(a KEY_0\/KEY_1 pair of numeric columns such as X_umap_0\/X_umap_1\) to order its rows by: convert with --obsm X_umap/,
  );
  // The dataset and its companion are complete; no rows in embedding order are named.
  assert.equal(embeddingRowsOf(await openDataset(new FolderStore(join(dir, "no-obs")))), undefined);
});
