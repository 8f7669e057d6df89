/** The command over plain HTTP (a static server with Range support). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import { cli, tempDir } from "./cli-helpers.js";

let server: RunningServer | undefined;
let dir = "";

before(async () => {
  dir = tempDir();
  const r = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    join(dir, "ds"),
    "--tile-size",
    "16",
    "--level",
    "3",
  );
  assert.equal(r.code, 0, r.stderr);
  server = await startServe(dir);
});

after(async () => {
  await server?.stop();
});

test("validate --stats of a valid dataset over HTTP counts no error for the listing HTTP cannot do", async () => {
  const r = await cli("validate", `${server!.url}/ds`, "--json", "--stats");
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.valid, true);
  assert.equal(report.stats.errors, 0);
  assert.equal(report.stats.requests.list, 0);
  assert.equal(
    report.stats.requests.get,
    1 + 4 + 3 + 2,
    "the manifest, one GET per tile, the three gene files, obs/schema.json and the one obs shard",
  );
});
