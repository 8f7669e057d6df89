/** sporadik stores written straight to S3 and sliced from there (against moto_server). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { tempDir } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "deltacells-cli-sporadik";
const H5 = "data/10x-v3-chr21/filtered_feature_bc_matrix.h5";
const deltacellsS3 = motoBucket(BUCKET);

test("a deltacells dataset on s3:// converts to a sporadik store on s3:// that slices like a local one", async () => {
  const dataset = `s3://${BUCKET}/datasets/chr21`;
  const conv = await deltacellsS3("convert", H5, dataset, "--tile-size", "200", "--level", "3");
  assert.equal(conv.code, 0, conv.stderr);
  const store = `s3://${BUCKET}/sporadik/chr21.zarr`;
  const sp = await deltacellsS3(
    "convert",
    dataset,
    store,
    "--format",
    "sporadik",
    "--byte-addressable",
    "--json",
    "--stats",
  );
  assert.equal(sp.code, 0, sp.stderr);
  const summary = JSON.parse(sp.stdout);
  assert.equal(summary.source_format, "deltacells");
  assert.equal(summary.gene_order, "source");
  assert.equal(summary.stats.errors, 0);

  const local = join(tempDir(), "chr21.zarr");
  assert.equal((await deltacellsS3("convert", H5, local, "--format", "sporadik")).code, 0);
  const positions = ["7", "1000", "7", "3:6"];
  const remote = await deltacellsS3("slice", store, "--axis", "0", ...positions, "--json", "--stats");
  assert.equal(remote.code, 0, remote.stderr);
  const near = await deltacellsS3("slice", local, "--axis", "0", ...positions.slice(0, 1), "--json");
  const r = JSON.parse(remote.stdout);
  assert.deepEqual(r.slices[0], JSON.parse(near.stdout).slices[0]);
  const all = await deltacellsS3("slice", local, "--axis", "0", ...positions.slice(2), "--json");
  assert.deepEqual(r.slices.slice(2), JSON.parse(all.stdout).slices);
  assert.equal(r.reads.slices.waves, 2);
  assert.equal(r.reads.slices.requests.get, 0, "byte-addressable: exact ranges only");
});
