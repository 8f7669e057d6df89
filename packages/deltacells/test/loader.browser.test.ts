/**
 * The loader in headless Chromium: over HTTP from the test server, decoding on Web Workers, an
 * epoch of a rank yields the same batches as the same loader in Node (the plan does not depend on
 * the platform), every row equals the source matrix, and a missing tile stops it with
 * `UnreadableTile` naming the tile.
 */
import assert from "node:assert/strict";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FolderStore } from "@deltacells/storage/node";
import {
  type BrowserSession,
  closeBrowserSessions,
  startBrowserSession,
} from "../../../test-utils/browser/index.js";
import type { ErrorInfo } from "../../../test-utils/browser/page-helpers.js";
import { tileKey } from "../src/dataset/manifest.js";
import { type Batch, createLoader, type LoaderOptions, openDataset } from "../src/index.js";
import type { PageBatch, PageEpoch } from "./loader-browser-page.js";
import { loaderDataset, sourceRow } from "./loader-fixtures.js";

const here = dirname(fileURLToPath(import.meta.url));
let session: BrowserSession;
let fixture: Awaited<ReturnType<typeof loaderDataset>>;

before(
  async () => {
    session = await startBrowserSession({
      entryPoints: { loader: join(here, "loader-browser-page.ts"), worker: "@deltacells/core/worker" },
    });
    fixture = await loaderDataset();
    // The memory dataset, copied object by object into the served directory.
    const folder = new FolderStore(join(session.dir, "ds"));
    for (const key of await fixture.store.list()) await folder.set(key, (await fixture.store.get(key))!);
    mkdirSync(join(session.dir, "broken"));
    cpSync(join(session.dir, "ds"), join(session.dir, "broken"), { recursive: true });
    rmSync(join(session.dir, "broken", tileKey(3)));
  },
  // Only turns a hang into a failure: Chromium's launch and the bundling, beside other test files
  // on CI's loaded machine, can take a minute or more.
  { timeout: 180_000 },
);

after(closeBrowserSessions);

/** A Node batch in the page's JSON form. */
function asPage(b: Batch): PageBatch {
  if (b.format !== "csr") throw new Error("csr expected");
  const ct = b.obs["cell type/ü"];
  return {
    index: b.index,
    cells: [...b.cells],
    padded: b.padded,
    indptr: [...b.indptr],
    indices: [...b.indices],
    data: [...b.data],
    codes: ct?.kind === "category" ? [...ct.codes] : [],
  };
}

const opts: LoaderOptions = {
  batchSize: 7,
  seed: 5,
  epoch: 2,
  rank: 1,
  worldSize: 3,
  bufferTiles: 2,
  obs: ["cell type/ü"],
};

for (const isolated of [false, true]) {
  test(`an epoch in the page over HTTP on 2 Web Workers equals the same loader in Node${isolated ? " (cross-origin isolated: shared memory)" : ""}`, async () => {
    const page = await session.open("loader", { crossOriginIsolated: isolated });
    const base = isolated ? (await session.isolatedServer()).url : session.server.url;
    const run = await page.call<PageEpoch>("loaderEpoch", `${base}/ds`, { ...opts, threads: 2 });
    assert.deepEqual(run.workers, [`${base}/worker.js`, `${base}/worker.js`]);
    const ds = await openDataset(fixture.store);
    const expected: PageBatch[] = [];
    for await (const b of await createLoader(ds, opts)) {
      expected.push(asPage(b));
      b.release();
    }
    assert.ok(expected.length >= 3);
    assert.deepEqual(run.batches, expected);
    // And each row is the source matrix's.
    for (const b of run.batches)
      b.cells.forEach((c, r) => {
        const row: [number, number][] = [];
        for (let j = b.indptr[r]!; j < b.indptr[r + 1]!; j++) row.push([b.indices[j]!, b.data[j]!]);
        assert.deepEqual(
          row.sort((x, y) => x[0] - y[0]),
          sourceRow(fixture.m, c),
        );
      });
    assert.equal((run.state as { epoch: number }).epoch, 3);
  });
}

test("in the page a missing tile stops the epoch with UnreadableTile naming it", async () => {
  const page = await session.open("loader", { ignoreConsole: [/404/] });
  const err = await page.call<ErrorInfo>("loaderError", `${session.server.url}/broken`, {
    batchSize: 5,
    shuffle: false,
  });
  assert.equal(err._tag, "UnreadableTile");
  assert.equal(err.fields.object, `${session.server.url}/broken/${tileKey(3)}`);
});
