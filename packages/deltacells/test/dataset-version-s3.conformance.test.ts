/**
 * An open dataset on S3 (moto_server) refuses a tile rewritten after its manifest was read, and so
 * does a training loader running over it (with and without threads).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { S3Store } from "@deltacells/storage";
import { AwsClient } from "aws4fetch";
import { type RunningServer, startMoto } from "../../../test-utils/servers.js";
import { encodeTile, isDeltacellsError, openDataset, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";
import { loaderAcrossRewrite, writeVersion } from "./loader-rewrite.js";

const creds = { accessKeyId: "testing", secretAccessKey: "testing", region: "us-east-1" };
const BUCKET = "deltacells-version";
let moto: RunningServer;

before(async () => {
  moto = await startMoto();
  const res = await new AwsClient({ ...creds, service: "s3", retries: 0 }).fetch(`${moto.url}/${BUCKET}`, {
    method: "PUT",
  });
  assert.equal(res.status, 200, await res.text());
});

after(async () => {
  await moto?.stop();
});

test("a tile rewritten on S3 after open (same bytes even) is DatasetChanged; a new handle reads", async () => {
  const store = new S3Store({ ...creds, endpoint: moto.url, bucket: BUCKET, prefix: "ds" });
  await writeDataset(memorySource(randomMatrix(45, 20, 5)), store, {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
    compress: zstdCompressor(3),
    tileSize: 10,
  });
  const ds = await openDataset(store);
  assert.ok(ds.openedAt !== undefined, "moto's Date was pinned");
  (await ds.tile(0)).release();
  await new Promise((r) => setTimeout(r, 1100)); // Last-Modified counts whole seconds
  const tile0 = (await store.get("tiles/tile_000000.dct"))!;
  await store.set("tiles/tile_000000.dct", tile0);
  await assert.rejects(ds.tile(0), (e: unknown) => {
    assert.ok(isDeltacellsError(e, "DatasetChanged"), String(e));
    assert.match(
      e.message,
      /s3:\/\/deltacells-version\/ds changed since it was opened: tiles\/tile_000000\.dct/,
    );
    return true;
  });
  (await ds.tile(1)).release();
  const fresh = await openDataset(store);
  assert.equal((await fresh.cells(0, 45)).nCells, 45);
});

for (const threads of [undefined, 2]) {
  test(`a training loader ${threads ? "with threads" : "without threads"} over S3 stops with DatasetChanged when the dataset is rewritten mid-epoch, having yielded only the first version's rows`, async () => {
    const store = new S3Store({
      ...creds,
      endpoint: moto.url,
      bucket: BUCKET,
      prefix: `loader-${threads ?? 0}`,
    });
    const first = await writeVersion(store, 31);
    const ds = await openDataset(store);
    assert.ok(ds.openedAt !== undefined, "moto's Date was pinned");
    await loaderAcrossRewrite(
      ds,
      first,
      async () => {
        await new Promise((r) => setTimeout(r, 1100)); // Last-Modified counts whole seconds
        await writeVersion(store, 32);
      },
      threads === undefined ? {} : { threads },
    );
  });
}
