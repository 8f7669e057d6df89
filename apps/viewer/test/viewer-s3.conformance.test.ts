/**
 * The viewer reading straight from a bucket: the pbmc68k demo uploaded to the local S3 server
 * (moto, public-read objects, a CORS rule as a real bucket needs for a page), the page opened on
 * `s3://bucket/prefix` with the server as endpoint, and the drawn gene compared with the tiles.
 * Drives Chromium too; named for moto, which it needs.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openDataset } from "@deltacells/core/node";
import { type RunningServer, startServer } from "../../../packages/cli/src/serve/http.js";
import type { RunningBrowser } from "../../../test-utils/browser/browser.js";
import { launchChromium } from "../../../test-utils/browser/index.js";
import { type RunningServer as Moto, startMoto } from "../../../test-utils/servers.js";
import { buildPbmc, buildViewer, publicBucket } from "./fixtures.js";

const BUCKET = "deltacells-viewer";
let root: string;
let pbmc: string;
let moto: Moto;
let server: RunningServer;
let chromium: RunningBrowser;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "deltacells-viewer-s3-"));
  const [m, dir] = await Promise.all([startMoto(), buildPbmc(root), buildViewer(join(root, "viewer-dist"))]);
  moto = m;
  pbmc = dir;
  await publicBucket(moto.url, BUCKET, [{ prefix: "pbmc68k", dir: pbmc }]);
  // The page is served from another origin; nothing but the viewer is served there.
  mkdirSync(join(root, "empty"));
  server = await startServer({ root: join(root, "empty"), viewerDir: join(root, "viewer-dist"), port: 0 });
  chromium = await launchChromium();
});

after(async () => {
  await chromium?.close();
  await server?.close();
  await moto?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

test("s3://bucket/prefix with an endpoint: the embedding and a gene, read from the bucket", async () => {
  const page = await chromium.browser.newPage({ viewport: { width: 1000, height: 700 } });
  // Every wait on the page only turns a hang into a failure: generous, as moto is slow under load.
  page.setDefaultTimeout(120_000);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const q = new URLSearchParams({ data: `s3://${BUCKET}/pbmc68k`, endpoint: moto.url });
  await page.goto(`${server.url}?${q}`);
  type V = {
    __viewer: {
      state: { ready: boolean; error?: string; busy: number };
      searchGene(n: string): Promise<void>;
      snapshot(): {
        error?: string;
        embedding?: string;
        gene?: { values: number[] };
        history: { action: string; waves: number }[];
      };
    };
  };
  await page.waitForFunction(
    () => (window as unknown as V).__viewer?.state.ready || (window as unknown as V).__viewer?.state.error,
  );
  await page.evaluate(() => (window as unknown as V).__viewer.searchGene("CD74"));
  const s = await page.evaluate(() => (window as unknown as V).__viewer.snapshot());
  assert.equal(s.error, undefined);
  assert.equal(s.embedding, "X_umap");
  const ds = await openDataset(pbmc);
  const j = (await ds.geneNames())!.indexOf("CD74");
  const rows = await ds.cells(0, ds.nCells);
  const expected = Array.from({ length: ds.nCells }, (_, c) => {
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      if (rows.indices[k] === j) return Number(rows.data[k]);
    return 0;
  });
  assert.deepEqual(s.gene!.values, expected);
  assert.equal(s.history.find((h) => h.action === "gene CD74")!.waves, 2);
  assert.deepEqual(errors, []);
  await page.close();
});
