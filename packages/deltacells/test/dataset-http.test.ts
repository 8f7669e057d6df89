/** Reading a dataset over plain HTTP (npm `serve`, correct Range handling): one GET per tile. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { HttpStore, withStats } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import { tempDir } from "../../../test-utils/temp.js";
import { encodeTile, isDeltacellsError, openDataset, validateDataset, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

let server: RunningServer;
const m = randomMatrix(45, 20, 11);

before(async () => {
  const dir = tempDir("deltacells-http-");
  await writeDataset(memorySource(m), new FolderStore(join(dir, "ds")), {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
    compress: zstdCompressor(3),
    tileSize: 10,
  });
  server = await startServe(dir);
});

after(async () => {
  await server?.stop();
});

test("a dataset opens from an http:// URL and each tile costs exactly one GET", async () => {
  const ds = await openDataset(`${server.url}/ds`);
  assert.equal(ds.nCells, 45);
  const counted = withStats(new HttpStore(`${server.url}/ds`));
  const viaStore = await openDataset(counted);
  counted.reset();
  const rows = await viaStore.cells(8, 31); // tiles 0, 1, 2, 3
  assert.equal(rows.nCells, 23);
  assert.deepEqual(counted.stats.requests, { get: 4, getRange: 0, set: 0, delete: 0, list: 0 });
  const report = await validateDataset(viaStore);
  assert.deepEqual(report.problems, []);
});

test("an http:// prefix without a manifest is an incomplete dataset", async () => {
  await assert.rejects(openDataset(`${server.url}/nothing-here`), (e) =>
    isDeltacellsError(e, "IncompleteDataset"),
  );
});
