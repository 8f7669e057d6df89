/**
 * The browser build of the codec in headless Chromium: the golden tiles decode to their stored
 * contents with zstddec's WASM and the TypeScript loops, damaged tiles are refused with tagged
 * errors, and the TilePool runs on Web Workers (bundled the way an application's esbuild would:
 * the pool's worker script as a second entry named `worker.js` next to the page bundle).
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  type BrowserSession,
  closeBrowserSessions,
  type ModulePage,
  startBrowserSession,
} from "../../../test-utils/browser/index.js";
import type { ErrorInfo } from "../../../test-utils/browser/page-helpers.js";
import type { Contents, PoolRun } from "./browser-page.js";

const here = dirname(fileURLToPath(import.meta.url));
const tilesDir = join(here, "fixtures", "tiles");
const GOLDEN = readdirSync(tilesDir)
  .filter((f) => f.endsWith(".dct"))
  .map((f) => f.slice(0, -4))
  .sort();

function expected(name: string): Contents {
  return JSON.parse(readFileSync(join(tilesDir, `${name}.json`), "utf8")) as Contents;
}

/** Rows `[c0, c1)` of a tile's contents, indptr rebased to 0. */
function rows(e: Contents, c0: number, c1: number): Contents {
  const lo = e.indptr[c0]!;
  const hi = e.indptr[c1]!;
  return {
    n_cells: c1 - c0,
    n_genes: e.n_genes,
    nnz: hi - lo,
    indptr: e.indptr.slice(c0, c1 + 1).map((p) => p - lo),
    indices: e.indices.slice(lo, hi),
    data: e.data.slice(lo, hi),
  };
}

function isError(r: Contents | ErrorInfo): r is ErrorInfo {
  return "message" in r;
}

let session: BrowserSession;
let page: ModulePage;
let tiles: string;

before(
  async () => {
    session = await startBrowserSession({
      entryPoints: {
        deltacells: join(here, "browser-page.ts"),
        // What an application using esbuild does: the pool's worker script as an entry named
        // `worker`, next to the bundle that creates the pool.
        worker: "@deltacells/core/worker",
      },
    });
    mkdirSync(join(session.dir, "tiles"));
    for (const name of GOLDEN)
      copyFileSync(join(tilesDir, `${name}.dct`), join(session.dir, "tiles", `${name}.dct`));
    tiles = `${session.server.url}/tiles`;
    page = await session.open("deltacells");
  },
  // Only turns a hang into a failure: Chromium's launch and the bundling, beside other test files
  // on CI's loaded machine, can take a minute or more.
  { timeout: 180_000 },
);

after(closeBrowserSessions);

test("in the page the codec decodes with zstddec's WASM build of zstd", async () => {
  assert.equal(await page.call("zstdName"), "zstddec");
});

test("every golden tile decodes in the page to its stored contents", async () => {
  assert.ok(GOLDEN.length >= 7, `golden tiles: ${GOLDEN.join(", ")}`);
  for (const name of GOLDEN) {
    assert.deepEqual(await page.call("decode", `${tiles}/${name}.dct`), expected(name), name);
  }
});

test("a tile whose first zstd frame is empty decodes as a fresh page's first decompression", async () => {
  // The WASM heap is allocated lazily: an empty output as the very first frame once left it null.
  const fresh = await session.open("deltacells");
  try {
    assert.deepEqual(await fresh.call("decode", `${tiles}/empty-chunk.dct`), expected("empty-chunk"));
  } finally {
    await fresh.close();
  }
});

test("a cell range decodes in the page to exactly those rows", async () => {
  for (const [name, c0, c1] of [
    ["random", 17, 93],
    ["random", 0, 1],
    ["pbmc-small", 10, 50],
    ["exceptions", 2, 4],
    ["small", 1, 1],
  ] as const) {
    assert.deepEqual(
      await page.call("decode", `${tiles}/${name}.dct`, { cells: [c0, c1] }),
      rows(expected(name), c0, c1),
      `${name} [${c0}, ${c1})`,
    );
  }
});

test("float32 values decode in the page to the counts rounded to float32", async () => {
  const e = expected("exceptions");
  assert.deepEqual(await page.call("decode", `${tiles}/exceptions.dct`, { values: "float32" }), {
    ...e,
    data: e.data.map(Math.fround),
  });
});

test("a tile with a flipped payload byte is refused with a CorruptTile error about its crc32", async () => {
  const err = await page.call<ErrorInfo>("decodeDamaged", `${tiles}/random.dct`, -1);
  assert.equal(err._tag, "CorruptTile");
  assert.equal(err.fields.field, "crc32");
  assert.equal(err.fields.object, "tiles/damaged.dct");
  assert.match(err.message, /^tile tiles\/damaged\.dct: crc32 is 0x[0-9a-f]{8}, expected 0x[0-9a-f]{8}/);
  assert.match(err.message, /re-fetch it or rewrite the dataset/);
});

test("a tile with a damaged magic number is refused with a CorruptTile error about its magic", async () => {
  const err = await page.call<ErrorInfo>("decodeDamaged", `${tiles}/small.dct`, 0);
  assert.equal(err._tag, "CorruptTile");
  assert.equal(err.fields.field, "magic");
  assert.match(err.message, /not a valid deltacells v2 tile/);
});

/** A pool decode in a fresh page, plain or cross-origin isolated. */
async function poolRun(isolated: boolean, ...args: unknown[]): Promise<PoolRun> {
  const p = isolated ? await session.open("deltacells", { crossOriginIsolated: true }) : page;
  try {
    return await p.call<PoolRun>("poolDecode", ...args);
  } finally {
    if (isolated) await p.close();
  }
}

for (const isolated of [false, true]) {
  const how = isolated
    ? "in a cross-origin isolated page, writing into shared memory"
    : "in a plain page, transferring each worker's part";
  test(`the tile pool decodes a multi-chunk tile on Web Workers ${how}`, async () => {
    const base = isolated ? (await session.isolatedServer()).url : session.server.url;
    const run = await poolRun(isolated, `${base}/tiles/random.dct`, 3);
    assert.equal(run.crossOriginIsolated, isolated);
    assert.equal(run.sharedOutput, isolated);
    assert.deepEqual(run.workers, Array(3).fill(`${base}/worker.js`));
    assert.ok(!isError(run.result), JSON.stringify(run.result));
    assert.deepEqual(run.result, expected("random"));
  });
}

test("the tile pool decodes a cell range spanning several chunks on Web Workers", async () => {
  const run = await poolRun(false, `${tiles}/random.dct`, 2, { cells: [20, 101] });
  assert.equal(run.workers.length, 2);
  assert.deepEqual(run.result, rows(expected("random"), 20, 101));
});

test("the tile pool refuses a damaged tile with a CorruptTile crc32 error, as decodeTile does", async () => {
  // The last byte is in chunk 7's gene exceptions: the worker decoding that chunk fails on it
  // before the CRC parts are combined, and the pool still names the CRC first.
  const run = await poolRun(false, `${tiles}/random.dct`, 2, { damageAt: -1 });
  assert.ok(isError(run.result), "a damaged tile decoded");
  assert.equal(run.result._tag, "CorruptTile");
  assert.equal(run.result.fields.object, "tiles/pooled.dct");
  assert.equal(run.result.fields.field, "crc32");
  assert.match(run.result.message, /^tile tiles\/pooled\.dct: .* re-fetch it or rewrite the dataset$/);
});
