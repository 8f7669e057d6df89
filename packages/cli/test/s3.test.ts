/** The CLI writing a dataset straight to S3 and reading it back from there (against moto_server). */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { tempDir } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "deltacells-cli";
const deltacellsS3 = motoBucket(BUCKET);

test("a dataset converted straight to s3:// validates there and exports the same cells as a local one", async () => {
  const url = `s3://${BUCKET}/datasets/csr`;
  const conv = await deltacellsS3(
    "convert",
    "data/anndata/csr.h5ad",
    url,
    "--tile-size",
    "16",
    "--level",
    "3",
    "--json",
    "--stats",
  );
  assert.equal(conv.code, 0, conv.stderr);
  const summary = JSON.parse(conv.stdout);
  assert.equal(summary.stats.errors, 0);

  const val = await deltacellsS3("validate", url, "--json", "--stats");
  assert.equal(val.code, 0, val.stdout + val.stderr);
  const report = JSON.parse(val.stdout);
  assert.equal(report.tilesChecked, 4);
  // manifest + one GET per tile + the three gene files + obs/schema.json and the one obs shard, nothing more
  assert.equal(report.stats.requests.get, 1 + 4 + 3 + 2);
  assert.equal(report.stats.requests.getRange, 0);

  const dir = tempDir();
  const local = join(dir, "local");
  assert.equal(
    (await deltacellsS3("convert", "data/anndata/csr.h5ad", local, "--tile-size", "16", "--level", "3")).code,
    0,
  );
  for (const [src, out] of [
    [url, join(dir, "s3.mtx")],
    [local, join(dir, "local.mtx")],
  ] as const) {
    const r = await deltacellsS3("export", src, out, "--cells", "5:50", "--source-gene-order");
    assert.equal(r.code, 0, r.stderr);
  }
  const body = (p: string) => readFileSync(p, "utf8").split("\n").slice(2).join("\n");
  assert.equal(body(join(dir, "s3.mtx")), body(join(dir, "local.mtx")));
});
