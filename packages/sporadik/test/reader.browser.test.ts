/**
 * The browser-safe sporadik reader in headless Chromium: stores written by the Node writer (chunked
 * with zstd, and byte-addressable) are served over HTTP and read in the page through the
 * browser-safe HttpStore of @deltacells/storage; every read equals what Node reads from the same
 * folder, and the layouts it was written from.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FolderStore } from "@deltacells/storage/node";
import {
  type BrowserSession,
  closeBrowserSessions,
  type ModulePage,
  startBrowserSession,
} from "../../../test-utils/browser/index.js";
import { type Layout, layoutFromCoords, openReader, writeStore } from "../src/index.js";
import type { LayoutReads } from "./browser-page.js";
import { plain, randomCoords } from "./helpers.js";

const here = dirname(fileURLToPath(import.meta.url));

interface Case {
  name: string;
  shape: number[];
  layouts: Layout[];
  byteAddressable: boolean;
}

/** Layouts along every axis of a random array, some values negative so maxima are of magnitudes. */
function layoutsOf(shape: number[], density: number, seed: number): Layout[] {
  const spec = randomCoords(shape, density, seed);
  const values = Float32Array.from(spec.values, (v, i) => (i % 3 === 0 ? -v : v));
  return shape.map((_, axis) => layoutFromCoords(shape, spec.coords, values, axis));
}

const matrix = layoutsOf([300, 40], 0.1, 81);
const cube = layoutsOf([30, 8, 12], 0.2, 5);
const CASES: Case[] = [
  { name: "matrix-chunked.zarr", shape: [300, 40], layouts: matrix, byteAddressable: false },
  { name: "matrix-ranged.zarr", shape: [300, 40], layouts: matrix, byteAddressable: true },
  { name: "cube-chunked.zarr", shape: [30, 8, 12], layouts: cube, byteAddressable: false },
  { name: "cube-ranged.zarr", shape: [30, 8, 12], layouts: cube, byteAddressable: true },
];

/** First, last, middle and an arbitrary position along an axis of `size`. */
function positionsFor(size: number): { one: number[]; batch: number[] } {
  return { one: [0, 7 % size, size >> 1, size - 1], batch: [3 % size, size - 1, 1, 3 % size, 0] };
}

/** What Node reads from the folder, in the page's spelling. */
async function nodeReads(path: string, axis: number, one: number[], batch: number[]): Promise<LayoutReads> {
  const reader = await openReader(new FolderStore(path), { axis });
  const slices = [];
  for (const p of one) {
    const s = await reader.sliceAt(p);
    slices.push({ positions: plain(s.positions), values: plain(s.values) });
  }
  const sel = await reader.slicesAt(batch);
  return {
    shape: [...reader.store.shape],
    indexedAxis: reader.axis,
    slices,
    batch: {
      positions: plain(sel.positions),
      indptr: plain(sel.indptr),
      indices: plain(sel.indices),
      data: plain(sel.data),
    },
    maxima: plain(await reader.maxima()),
  };
}

let session: BrowserSession;
let page: ModulePage;

before(
  async () => {
    session = await startBrowserSession({ entryPoints: { sporadik: join(here, "browser-page.ts") } });
    for (const c of CASES) {
      await writeStore(new FolderStore(join(session.dir, c.name)), c.layouts, {
        byteAddressable: c.byteAddressable,
        // Small chunks, so that reads span several zstd-compressed chunks.
        ...(c.byteAddressable ? {} : { chunk: 64 }),
      });
    }
    page = await session.open("sporadik");
  },
  // Only turns a hang into a failure: Chromium's launch and the bundling, beside other test files
  // on CI's loaded machine, can take a minute or more.
  { timeout: 180_000 },
);

after(closeBrowserSessions);

for (const c of CASES) {
  test(`a ${c.name.replace(".zarr", "").replace("-", " ")} store reads the same in the page as in Node, along every axis`, async () => {
    for (const layout of c.layouts) {
      const axis = layout.indexedAxis;
      const { one, batch } = positionsFor(c.shape[axis]!);
      const inPage = await page.call<LayoutReads>(
        "readLayout",
        `${session.server.url}/${c.name}`,
        axis,
        one,
        batch,
      );
      const inNode = await nodeReads(join(session.dir, c.name), axis, one, batch);
      assert.deepEqual(inPage, inNode, `axis ${axis}`);
      // And both are the layout that was written.
      const indptr = layout.indptr as Int32Array;
      one.forEach((p, i) => {
        assert.deepEqual(inPage.slices[i]!.values, plain(layout.data.subarray(indptr[p], indptr[p + 1])));
        assert.deepEqual(
          inPage.slices[i]!.positions,
          plain(layout.indices.subarray(indptr[p], indptr[p + 1])),
        );
      });
      assert.deepEqual(inPage.batch.positions, batch);
      assert.equal(inPage.maxima.length, c.shape[axis]);
    }
  });
}

test("in the page a byte-addressable store is read with Range requests, a chunked one by whole chunks", async () => {
  const start = session.server.requests.length;
  for (const name of ["matrix-ranged.zarr", "matrix-chunked.zarr"]) {
    await page.call("readLayout", `${session.server.url}/${name}`, 0, [5, 250], [1, 2]);
  }
  const seen = (prefix: string) =>
    session.server.requests.slice(start).filter((r) => r.path.startsWith(prefix));
  const ranged = seen("/matrix-ranged.zarr/").filter((r) => r.range !== undefined);
  assert.ok(ranged.length > 0, "no range request reached the byte-addressable store");
  assert.ok(
    ranged.every((r) => r.status === 206),
    JSON.stringify(ranged.filter((r) => r.status !== 206)),
  );
  const chunks = seen("/matrix-chunked.zarr/").filter((r) => /\/c\/\d+$/.test(r.path));
  assert.ok(chunks.length > 2, `only ${chunks.length} chunk reads`);
  assert.ok(
    chunks.every((r) => r.status === 200 && r.range === undefined),
    JSON.stringify(chunks.slice(0, 3)),
  );
});
