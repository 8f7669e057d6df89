/**
 * An open dataset never mixes versions silently: an object rewritten after the manifest was read
 * is refused with DatasetChanged (folders: the file's ctime; HTTP: Last-Modified against the
 * manifest's Date). S3: dataset-version-s3.conformance.test.ts. And openDataset(url) gives up on a
 * stalled server by default.
 */
import assert from "node:assert/strict";
import { copyFile, mkdtemp, readdir, rename, rm, utimes } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DEFAULT_TIMEOUT_SECONDS, isStorageError } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import send from "send";
import { createLoader, encodeTile, isDeltacellsError, openDataset, writeDataset } from "../src/index.js";
import { openDataset as openDatasetNode, zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";
import { checkBatchValues } from "./loader-fixtures.js";
import { loaderAcrossRewrite, writeVersion } from "./loader-rewrite.js";
import { obsSource } from "./obs-fixtures.js";

let dir: string;
let server: Server;
let url: string;
const sockets = new Set<Socket>();
let stall = false;

async function write(to: string, seed: number) {
  await writeDataset(memorySource(randomMatrix(45, 20, seed)), new FolderStore(to), {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
    compress: zstdCompressor(3),
    tileSize: 10,
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "dc-version-"));
  // What `deltacells serve` and most static servers send: Last-Modified, ETag and Date.
  server = createServer((req, res) => {
    if (stall) return;
    send(req, decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname), {
      root: dir,
      lastModified: true,
      etag: true,
    }).pipe(res);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
  await rm(dir, { recursive: true, force: true });
});

/** Replaces `from`'s tile 0 by the same bytes through a rename, as `convert --overwrite` moves a staged tile in. */
async function replaceTile0(root: string) {
  const tile = join(root, "tiles/tile_000000.dct");
  await copyFile(tile, `${tile}.new`);
  // A staged file is dated when it was written, maybe before the reader opened: the rename still counts.
  const old = new Date("2020-01-01T00:00:00Z");
  await utimes(`${tile}.new`, old, old);
  await rename(`${tile}.new`, tile);
}

/** Replaces every tile of `root` by its own bytes through renames (a rewrite with nothing else changed). */
async function replaceTiles(root: string) {
  for (let t = 0; t < 20; t++) {
    const tile = join(root, `tiles/tile_${String(t).padStart(6, "0")}.dct`);
    await copyFile(tile, `${tile}.new`);
    await rename(`${tile}.new`, tile);
  }
}

test("a folder dataset rewritten under an open handle: the next tile read is DatasetChanged", async () => {
  const root = join(dir, "folder-ds");
  await write(root, 1);
  for (const threads of [undefined, 1]) {
    const ds = await openDatasetNode(root, threads === undefined ? {} : { threads });
    try {
      assert.ok(ds.openedAt !== undefined);
      (await ds.tile(0)).release();
      await new Promise((r) => setTimeout(r, 20));
      await replaceTile0(root);
      // Even identical bytes: the reader cannot know, and a real rewrite is not distinguishable.
      await assert.rejects(ds.tile(0), (e: unknown) => {
        assert.ok(isDeltacellsError(e, "DatasetChanged"), String(e));
        assert.match(e.message, /changed since it was opened: tiles\/tile_000000\.dct was rewritten/);
        assert.match(e.message, /open it again/);
        assert.equal(e.object, `${root}/tiles/tile_000000.dct`);
        return true;
      });
      (await ds.tile(1)).release(); // untouched objects still read
      await assert.rejects(ds.cells(0, 45), (e: unknown) => isDeltacellsError(e, "DatasetChanged"));
      const fresh = await openDatasetNode(root);
      assert.equal((await fresh.cells(0, 45)).nCells, 45);
    } finally {
      await ds.close();
    }
  }
});

test("a whole new version written over an open folder dataset is refused, not mixed in", async () => {
  const root = join(dir, "rewritten");
  await write(root, 2);
  const ds = await openDatasetNode(root);
  const before = await ds.cells(0, 10);
  await new Promise((r) => setTimeout(r, 20));
  await write(root, 3); // same shape, other counts: same-sized tiles are likely
  await assert.rejects(ds.cells(0, 10), (e: unknown) => isDeltacellsError(e, "DatasetChanged"));
  const again = await openDatasetNode(root);
  assert.notDeepEqual((await again.cells(0, 10)).data, before.data);
});

for (const [what, open] of [
  ["on the dataset's decoder", {}],
  ["on a dataset opened with threads", { threads: 2 }],
  ["on a pool of its own (threads)", { loaderThreads: 2 }],
] as const) {
  test(`a training loader ${what} stops with DatasetChanged when the folder is rewritten mid-epoch, having yielded only the first version's rows`, async () => {
    const root = join(dir, `loader-${what.replace(/\W+/g, "-")}`);
    const first = await writeVersion(new FolderStore(root), 21);
    const ds = await openDatasetNode(root, "threads" in open ? { threads: open.threads } : {});
    try {
      await loaderAcrossRewrite(
        ds,
        first,
        async () => {
          await new Promise((r) => setTimeout(r, 20));
          await writeVersion(new FolderStore(root), 22);
        },
        "loaderThreads" in open ? { threads: open.loaderThreads } : {},
      );
    } finally {
      await ds.close();
    }
    // Opened again, the dataset is the second version, read normally.
    const second = randomMatrix(200, 20, 22);
    const again = await openDatasetNode(root);
    const loader = await createLoader(again, { batchSize: 50, seed: 3 });
    for await (const batch of loader) {
      checkBatchValues(second, batch);
      batch.release();
    }
  });
}

test("a loader that skips unreadable tiles does not skip through a rewritten dataset: it stops with DatasetChanged", async () => {
  const root = join(dir, "loader-skip");
  for (const threads of [undefined, 2]) {
    const first = await writeVersion(new FolderStore(root), 23);
    const ds = await openDatasetNode(root);
    await loaderAcrossRewrite(
      ds,
      first,
      async () => {
        await new Promise((r) => setTimeout(r, 20));
        await replaceTiles(root);
      },
      { onUnreadableTile: "skip", ...(threads && { threads }) },
    );
  }
});

test("obs shards rewritten under an open folder dataset are DatasetChanged, never read into the obs cache", async () => {
  const root = join(dir, "obs-ds");
  const write = () =>
    writeDataset(obsSource(), new FolderStore(root), {
      encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
      compress: zstdCompressor(3),
      tileSize: 10,
      obs: { tilesPerFile: 3 },
    });
  await write();
  const cacheDir = join(dir, "obs-cache");
  const ds = await openDatasetNode(root);
  assert.equal((await ds.obsTile(0, ["score"])).score!.length, 10);
  await new Promise((r) => setTimeout(r, 20));
  await write(); // the same obs: a reader cannot tell, as with tiles
  const changed = (what: RegExp) => (e: unknown) => {
    assert.ok(isDeltacellsError(e, "DatasetChanged"), String(e));
    assert.match(e.message, new RegExp(`changed since it was opened: ${what.source} was rewritten`));
    return true;
  };
  const obsFile = /obs\/(schema\.json|obs_\d{4}\.parquet)/;
  await assert.rejects(ds.obsTile(3, ["score"]), changed(obsFile));
  await assert.rejects(ds.obs(["donor"], { cacheDir }), changed(obsFile));
  // The loader reads the gene order (rewritten too) and the obs (ds.obs, above) when created.
  await assert.rejects(createLoader(ds, { obs: ["flag"], obsCacheDir: cacheDir }), changed(/\S+/));
  // Nothing was cached from the new version under the old manifest's fingerprint.
  const cached = await readdir(cacheDir, { recursive: true }).catch(() => []);
  assert.deepEqual(
    cached.filter((f) => f.endsWith(".arrow")),
    [],
    `cached: ${cached.join(", ")}`,
  );
  const fresh = await openDatasetNode(root);
  assert.equal((await fresh.obs(["donor"], { cacheDir })).column("donor").table.numRows, 35);
});

test("over HTTP, a tile whose Last-Modified is after the manifest's Date is DatasetChanged", async () => {
  const root = join(dir, "http-ds");
  await write(root, 4);
  const ds = await openDataset(`${url}/http-ds`);
  assert.ok(ds.openedAt !== undefined, "the server's Date was pinned");
  (await ds.tile(0)).release();
  await new Promise((r) => setTimeout(r, 1100)); // HTTP dates count whole seconds
  await replaceTile0(root);
  await utimes(join(root, "tiles/tile_000000.dct"), new Date(), new Date()); // a server dates by mtime
  await assert.rejects(ds.tile(0), (e: unknown) => {
    assert.ok(isDeltacellsError(e, "DatasetChanged"), String(e));
    assert.match(e.message, /http:\/\/127\.0\.0\.1:\d+\/http-ds changed since it was opened/);
    return true;
  });
  (await ds.tile(1)).release();
});

test(`openDataset(url) gives up on a stalled server after the default ${DEFAULT_TIMEOUT_SECONDS} s stall timeout`, async () => {
  stall = true;
  try {
    const t0 = performance.now();
    const err = await openDataset(`${url}/http-ds`, { retries: 0 }).catch((e: unknown) => e);
    const seconds = (performance.now() - t0) / 1000;
    assert.ok(isStorageError(err, "Timeout"), String(err));
    assert.match(
      String(err),
      new RegExp(`/http-ds/manifest\\.json sent nothing for ${DEFAULT_TIMEOUT_SECONDS} s`),
    );
    // Not sooner than the default (a lower bound holds on any machine, however loaded).
    assert.ok(seconds >= DEFAULT_TIMEOUT_SECONDS - 1, `${seconds} s`);
    const quick = await openDataset(`${url}/http-ds`, { retries: 1, timeoutMs: 200 }).catch(
      (e: unknown) => e,
    );
    assert.ok(isStorageError(quick, "RetriesExhausted"), String(quick));
  } finally {
    stall = false;
    for (const s of sockets) s.destroy();
  }
});
