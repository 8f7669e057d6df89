/** The same stores over HTTP (a static server with Range support) and S3 (moto), as in a browser. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { HttpStore, S3Store } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { AwsClient } from "aws4fetch";
import { FetchStore } from "zarrita";
import { type RunningServer, startMoto, startServe } from "../../../test-utils/servers.js";
import { layoutFromCoords, openReader, type ReadableStore, writeStore } from "../src/index.js";
import { counting, plain, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
const SHAPE = [300, 40];
const SPEC = randomCoords(SHAPE, 0.1, 81);
const LAYOUTS = [0, 1].map((axis) =>
  layoutFromCoords(SHAPE, SPEC.coords, new Float32Array(SPEC.values), axis),
);
let serve: RunningServer;
let moto: RunningServer;

before(async () => {
  await writeStore(new FolderStore(join(dir, "chunked.zarr")), LAYOUTS, { chunk: 100 });
  await writeStore(new FolderStore(join(dir, "ranged.zarr")), LAYOUTS, { byteAddressable: true });
  [serve, moto] = await Promise.all([startServe(dir), startMoto()]);
});

after(async () => {
  await Promise.all([serve?.stop(), moto?.stop()]);
  cleanup();
});

/** Every slice along both axes equals the layout it was written from. */
async function assertReadsBack(store: ReadableStore): Promise<void> {
  for (const layout of LAYOUTS) {
    const reader = await openReader(store, { axis: layout.indexedAxis });
    const indptr = layout.indptr as Int32Array;
    for (const position of [0, 7, (indptr.length - 2) >> 1, indptr.length - 2]) {
      const { positions, values } = await reader.sliceAt(position);
      assert.deepEqual(
        plain(positions),
        plain(layout.indices.subarray(indptr[position], indptr[position + 1])),
      );
      assert.deepEqual(plain(values), plain(layout.data.subarray(indptr[position], indptr[position + 1])));
    }
    const batch = await reader.slicesAt([3, 1, 3]);
    assert.equal(batch.length, 3);
  }
}

for (const kind of ["chunked", "ranged"]) {
  test(`a ${kind} store reads back over HTTP through the storage layer's HttpStore`, async () => {
    await assertReadsBack(new HttpStore(`${serve.url}/${kind}.zarr`));
  });

  test(`a ${kind} store reads back over HTTP through zarrita's FetchStore, nothing but fetch`, async () => {
    await assertReadsBack(new FetchStore(`${serve.url}/${kind}.zarr`) as unknown as ReadableStore);
  });
}

test("over HTTP a byte-addressable slice is three range requests of exactly its bytes", async () => {
  const http = counting(
    new HttpStore(`${serve.url}/ranged.zarr`) as unknown as Parameters<typeof counting>[0],
  );
  const reader = await openReader(http, { axis: 1 });
  http.reset();
  const { values } = await reader.sliceAt(5);
  assert.deepEqual(
    http.requests.map((r) => [r.kind, r.bytes]),
    [
      ["getRange", 8],
      ["getRange", 4 * values.length],
      ["getRange", 4 * values.length],
    ],
  );
});

test("a store written straight into S3 is complete and reads back", async () => {
  const creds = { accessKeyId: "testing", secretAccessKey: "testing", region: "us-east-1" };
  const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
  const made = await client.fetch(`${moto.url}/sporadik-test`, { method: "PUT" });
  assert.equal(made.status, 200, await made.text());
  const s3 = new S3Store({
    ...creds,
    endpoint: moto.url,
    bucket: "sporadik-test",
    prefix: "stores/one.zarr",
  });
  await writeStore(s3, LAYOUTS, { chunk: 64 });
  await assertReadsBack(s3);
});
