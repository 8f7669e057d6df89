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
