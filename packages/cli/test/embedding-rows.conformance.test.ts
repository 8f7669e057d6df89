/**
 * `convert --sporadik` (with an embedding, by default; `--sporadik-rows` insists): the companion's
 * rows in embedding order are a valid sporadik store that Python sporadik, zarr-python and anndata
 * read, and its rows, put back in cell order through its `order.npy`, are the companion's exactly
 * (conformance/embedding_rows_check.py); the manifest names it with the digest of the order, which
 * the order computed again from the dataset's own embedding gives; refused without --sporadik.
 * The same of an atlas, and after `append --sporadik` (written again over the old cells' store),
 * where a write that fails leaves them unnamed, never named and stale.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
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
  await pythonCheck(out, [700, 765]);
  await assertDigestOfEmbedding(out);
  // validate checks the dataset and its companion; the rows' store is a sporadik store of its own.
  assert.equal((await cli("validate", out, "--quiet")).code, 0);
  assert.equal((await cli("validate", join(out, "sporadik-rows"), "--quiet")).code, 0);
});

/** The digest the manifest of `out` records is that of the order computed again from its embedding. */
async function assertDigestOfEmbedding(out: string): Promise<void> {
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
}

/** conformance/embedding_rows_check.py on `out`: the rows store against the companion, by three readers. */
async function pythonCheck(out: string, shape: [number, number]): Promise<void> {
  const py = await run(PYTHON, ["conformance/embedding_rows_check.py", out]);
  assert.equal(py.code, 0, py.stderr);
  const check = JSON.parse(py.stdout) as Record<string, unknown>;
  assert.deepEqual(check, {
    shape,
    layouts: [0],
    nnz: check.nnz,
    order_is_permutation: true,
    sporadik: true,
    zarr: true,
    anndata: true,
    differs_from_cell_order: true,
  });
}

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
  assert.match(
    plain.stderr,
    /--tmp-dir applies to --format sporadik and to --sporadik's rows in embedding order only/,
  );
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

test("--sporadik writes them by default when obs has an embedding, --no-sporadik-rows leaves them out, and without an embedding they are left out saying why", async () => {
  const plain = join(dir, "default");
  const r = await cli("convert", PBMC, plain, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /rows in embedding order \(X_umap_0\/X_umap_1\): .* at \S+sporadik-rows in/);
  await pythonCheck(plain, [700, 765]);
  await assertDigestOfEmbedding(plain);
  const without = join(dir, "opted-out");
  const no = await cli(
    "convert",
    PBMC,
    without,
    "--sporadik",
    "--no-sporadik-rows",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(no.code, 0, no.stderr);
  assert.equal(embeddingRowsOf(await openDataset(new FolderStore(without))), undefined);
  assert.ok(!readdirSync(without).includes("sporadik-rows"));
  const noEmbedding = join(dir, "no-embedding");
  const ne = await cli(
    "convert",
    PBMC,
    noEmbedding,
    "--sporadik",
    "--obsm",
    "none",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(ne.code, 0, ne.stderr);
  assert.match(ne.stdout, /no rows in embedding order: obs has no embedding/);
  assert.equal(embeddingRowsOf(await openDataset(new FolderStore(noEmbedding))), undefined);
  const both = await cli(
    "convert",
    PBMC,
    join(dir, "both"),
    "--sporadik",
    "--sporadik-rows",
    "--no-sporadik-rows",
  );
  assert.equal(both.code, 2, both.stderr);
  assert.match(both.stderr, /--sporadik-rows and --no-sporadik-rows contradict each other/);
});

/** A second input: the same cells under another name (its genes and X_umap the first's). */
function secondInput(): string {
  const path = join(dir, "pbmc-again.h5ad");
  copyFileSync(PBMC, path);
  return path;
}

test("an atlas with --sporadik gets its rows in embedding order too, over all its cells, through --tmp-dir", async () => {
  const out = join(dir, "atlas");
  const tmp = join(dir, "atlas-tmp");
  const r = await cli(
    "convert",
    PBMC,
    secondInput(),
    out,
    "--sporadik",
    "--tmp-dir",
    tmp,
    "--quiet",
    "--threads",
    "1",
    "--json",
  );
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { sporadik_rows: { embedding: string[] } };
  assert.deepEqual(summary.sporadik_rows.embedding, ["X_umap_0", "X_umap_1"]);
  await pythonCheck(out, [1400, 765]);
  await assertDigestOfEmbedding(out);
  assert.deepEqual(readdirSync(tmp), []);
  const opted = await cli(
    "convert",
    PBMC,
    secondInput(),
    join(dir, "atlas-no"),
    "--sporadik",
    "--no-sporadik-rows",
    "--quiet",
  );
  assert.equal(opted.code, 0, opted.stderr);
  assert.equal(embeddingRowsOf(await openDataset(new FolderStore(join(dir, "atlas-no")))), undefined);
  const noCompanion = await cli(
    "convert",
    PBMC,
    secondInput(),
    join(dir, "atlas-rows"),
    "--sporadik-rows",
    "--quiet",
  );
  assert.equal(noCompanion.code, 2, noCompanion.stderr);
  assert.match(noCompanion.stderr, /--sporadik-rows applies with --sporadik only/);
});

test("append --sporadik writes them again over all the cells; one whose rows cannot be written leaves them unnamed, the companion named", async () => {
  const out = join(dir, "grown");
  const first = await cli("convert", PBMC, out, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(first.code, 0, first.stderr);
  const before = embeddingRowsOf(await openDataset(new FolderStore(out)))!;
  const r = await cli("append", out, secondInput(), "--sporadik", "--quiet", "--threads", "1", "--json");
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { sporadik_rows: { embedding: string[] }; notes: string[] };
  assert.deepEqual(summary.sporadik_rows.embedding, ["X_umap_0", "X_umap_1"]);
  assert.ok(
    !summary.notes.some((n) => n.startsWith("the rows in embedding order")),
    summary.notes.join("; "),
  );
  const after = embeddingRowsOf(await openDataset(new FolderStore(out)))!;
  assert.notEqual(after.digest, before.digest);
  await pythonCheck(out, [1400, 765]);
  await assertDigestOfEmbedding(out);
  assert.equal((await cli("validate", join(out, "sporadik-rows"), "--quiet")).code, 0);

  // A fault at the rows' last object (order.npy, after the store's block): the folder in its
  // place makes the write fail once every chunk of the new rows is written over the old.
  const order = join(out, "sporadik-rows", "order.npy");
  rmSync(order);
  mkdirSync(order);
  writeFileSync(join(order, "in-the-way"), "");
  const failed = await cli(
    "append",
    out,
    secondInput(),
    "--sporadik",
    "--quiet",
    "--threads",
    "1",
    "--source-names",
    "third",
  );
  assert.equal(failed.code, 1, failed.stderr);
  const ds = await openDataset(new FolderStore(out));
  assert.equal(ds.nCells, 2100, "the cells are added");
  assert.equal(embeddingRowsOf(ds), undefined, "the rows, written over but not complete, are not named");
  assert.equal(ds.manifest.metadata.sporadik, "sporadik", "the companion was written again and is named");
  const valid = await cli("validate", out, "--quiet");
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
});
