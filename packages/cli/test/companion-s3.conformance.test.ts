/** `convert --sporadik` straight to S3 (moto_server): the companion under the prefix, validated there. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "deltacells-cli-companion";
const deltacellsS3 = motoBucket(BUCKET);

test("a dataset with its companion on s3:// is written, named and validated", async () => {
  const dataset = `s3://${BUCKET}/datasets/chr21`;
  const conv = await deltacellsS3(
    "convert",
    "data/10x-v3-chr21/filtered_feature_bc_matrix.h5",
    dataset,
    "--sporadik",
    "--level",
    "3",
    "--json",
  );
  assert.equal(conv.code, 0, conv.stderr);
  assert.equal(JSON.parse(conv.stdout).sporadik.path, "sporadik");
  const v = await deltacellsS3("validate", dataset);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  // Printed only when the manifest names the companion and it passed.
  assert.match(v.stdout, /sporadik companion valid/);
  const store = await deltacellsS3("validate", `${dataset}/sporadik`);
  assert.equal(store.code, 0, store.stdout + store.stderr);
});

test("an atlas built by tasks on s3:// gets its companion, statistics and rows from finalize --sporadik, validated there", async () => {
  const atlas = `s3://${BUCKET}/datasets/atlas`;
  const inputs = ["data/pbmc68k-counts/pbmc68k_counts.h5ad", "data/anndata/obs-encodings.h5ad"];
  const plan = await deltacellsS3("plan", ...inputs, atlas, "--tasks", "2", "--level", "3", "--obsm-fill");
  assert.equal(plan.code, 0, plan.stderr);
  for (const task of ["0", "1"]) {
    const r = await deltacellsS3("convert", "--plan", atlas, "--task", task);
    assert.equal(r.code, 0, r.stderr);
  }
  const f = await deltacellsS3("finalize", atlas, "--sporadik", "--threads", "1", "--json");
  assert.equal(f.code, 0, f.stderr);
  const done = JSON.parse(f.stdout);
  assert.equal(done.sporadik.path, "sporadik");
  assert.equal(done.statistics.path, "stats");
  assert.deepEqual(done.sporadik_rows.embedding, ["X_umap_0", "X_umap_1"]);
  const v = await deltacellsS3("validate", atlas);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /sporadik companion valid; statistics valid; rows in embedding order valid/);
  const again = await deltacellsS3("finalize", atlas, "--sporadik", "--json");
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(JSON.parse(again.stdout).kept, ["companion", "statistics", "rows"]);
});
