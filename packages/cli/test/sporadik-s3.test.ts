/** sporadik stores written straight to S3 and sliced from there (against moto_server). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AwsClient } from "aws4fetch";
import { type RunningServer, startMoto } from "../../storage/test/helpers/servers.js";
import { run, tempDir } from "./cli-helpers.js";

const BUCKET = "deltacells-cli-sporadik";
const H5 = "data/10x-v3-chr21/filtered_feature_bc_matrix.h5";
const creds = { accessKeyId: "testing", secretAccessKey: "testing", region: "us-east-1" };
let moto: RunningServer;

before(async () => {
  moto = await startMoto();
  const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
  const res = await client.fetch(`${moto.url}/${BUCKET}`, { method: "PUT" });
  assert.equal(res.status, 200, await res.text());
});

after(async () => {
  await moto?.stop();
});

function deltacellsS3(...args: string[]) {
  return run(
    process.execPath,
    ["--import", "tsx", "--conditions=source", "packages/cli/src/main.ts", ...args],
    {
      AWS_ACCESS_KEY_ID: creds.accessKeyId,
      AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
      AWS_REGION: creds.region,
      AWS_ENDPOINT_URL: moto.url,
    },
  );
}

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
