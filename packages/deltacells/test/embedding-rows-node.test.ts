/**
 * `writeEmbeddingRows` (the bounded writer of the rows in embedding order) against the rows sorted
 * in memory, as they were first written (the companion's whole row layout read back, permuted,
 * written by `writeStore`): every object of the store byte for byte, with buckets of a few rows
 * (a boundary inside every run of rows), empty cells and cells without coordinates; the temporary
 * folder gone afterwards; and the refusals of a dataset without a companion or an embedding.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, test } from "node:test";
import {
  createTilePool,
  EMBEDDING_ROWS_PATH,
  embeddingOrder,
  embeddingRowsOf,
  isDeltacellsError,
  nameCompanion,
  ORDER_KEY,
  openDataset,
  orderDigest,
  orderNpy,
  writeDataset,
} from "@deltacells/core";
import { layoutOver, writeStore } from "@deltacells/sporadik";
import { openReader } from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";
import { mulberry32 } from "../../../test-utils/prng.js";
import { writeEmbeddingRows, zstdCompressor } from "../src/node.js";
import { type DenseMatrix, denseToBlock, memorySource, randomMatrix } from "./dataset-fixtures.js";

const root = mkdtempSync(join(tmpdir(), "embedding-rows-node-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Two clusters; every 11th cell without coordinates. */
function umap(n: number): Float32Array {
  const rand = mulberry32(5);
  const values = new Float32Array(2 * n);
  for (let c = 0; c < n; c++) {
    const centre = c % 2 === 0 ? 4 : -4;
    values[2 * c] = c % 11 === 5 ? Number.NaN : centre + rand();
    values[2 * c + 1] = centre + rand();
  }
  return values;
}

/** A dataset of `m` at `dir` with `X_umap` in obs (unless `withEmbedding` is false) and a companion (unless `withCompanion` is false). */
async function dataset(
  dir: string,
  m: DenseMatrix,
  o: { withEmbedding?: boolean; withCompanion?: boolean } = {},
): Promise<void> {
  const source = {
    ...memorySource(m, { blockCells: 97 }),
    ...(o.withEmbedding === false
      ? {}
      : {
          obs: async () => ({
            indexName: "barcode",
            index: Array.from({ length: m.nCells }, (_, i) => `c${i}`),
            columns: [],
          }),
          obsmKeys: async () => ["X_umap"],
          obsm: async () => ({
            X_umap: { kind: "dense" as const, shape: [m.nCells, 2], values: umap(m.nCells) },
          }),
        }),
  };
  const pool = createTilePool({ threads: 1 });
  try {
    await writeDataset(source, new FolderStore(dir), {
      encoder: pool,
      compress: zstdCompressor(3),
      level: 3,
    });
  } finally {
    await pool.close();
  }
  if (o.withCompanion === false) return;
  // The companion: the same counts as one CSR row layout, checksummed as `convert --sporadik` writes it.
  const rows = denseToBlock(m, 0, m.nCells);
  const layout = layoutOver([m.nCells, m.nGenes], 0, {
    data: Int32Array.from(rows.data),
    indices: Int32Array.from(rows.indices),
    indptr: Int32Array.from(rows.indptr),
    indexOrder: [1],
  });
  await writeStore(new FolderStore(join(dir, "sporadik")), layout, { checksums: true });
  await nameCompanion(new FolderStore(dir), "sporadik");
}

/** The rows in embedding order as first written: the companion's layout read whole and permuted in memory. */
async function inMemory(dir: string, into: string): Promise<void> {
  const ds = await openDataset(new FolderStore(dir));
  const frame = await ds.obs(["X_umap_0", "X_umap_1"]);
  const [x, y] = ["X_umap_0", "X_umap_1"].map((name) => {
    const column = frame.columns.find((c) => c.name === name)!;
    const values = new Float32Array(ds.nCells);
    let at = 0;
    for (let t = 0; t < column.table.batches.length; t++) {
      const tile = column.tile(t);
      for (let i = 0; i < tile.length; i++)
        values[at + i] = tile.isValid(i) ? Number(tile.get(i)) : Number.NaN;
      at += tile.length;
    }
    return values;
  }) as [Float32Array, Float32Array];
  const order = embeddingOrder(x, y);
  const rows = await (await openReader(new FolderStore(join(dir, "sporadik")), { axis: 0 })).readLayout();
  const from = rows.indptr as Int32Array;
  const indptr = new Int32Array(ds.nCells + 1);
  const indices = new Int32Array(rows.indices.length);
  const data = new Int32Array(rows.data.length);
  let end = 0;
  for (let p = 0; p < ds.nCells; p++) {
    const c = order[p]!;
    indices.set((rows.indices as Int32Array).subarray(from[c]!, from[c + 1]!), end);
    data.set((rows.data as Int32Array).subarray(from[c]!, from[c + 1]!), end);
    end += from[c + 1]! - from[c]!;
    indptr[p + 1] = end;
  }
  const store = new FolderStore(into);
  await writeStore(store, layoutOver(rows.shape, 0, { data, indices, indptr, indexOrder: [1] }), {
    checksums: true,
  });
  await store.set(ORDER_KEY, orderNpy(order));
}

/** Every file under `dir`, by relative path. */
function objects(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(relative(dir, path), readFileSync(path));
  }
  return out;
}

const matrix = randomMatrix(3000, 60, 11);

test("the bounded writer's store is the in-memory sort's, object for object, whatever the bucket size", async () => {
  const expected = join(root, "expected");
  const source = join(root, "source");
  await dataset(source, matrix);
  await inMemory(source, expected);
  const want = objects(expected);
  // Several chunks per array, so the chunk boundaries are the writer's and not one object's end.
  assert.ok(
    [...want.keys()].some((k) => k.endsWith("/c/1")),
    [...want.keys()].join(" "),
  );
  for (const bucketBytes of [undefined, 8 * 40, 8, 8 * 4096]) {
    const dir = join(root, `bounded-${bucketBytes ?? "default"}`);
    await dataset(dir, matrix);
    const announced: { folder: string; bytes: number }[] = [];
    const result = await writeEmbeddingRows(dir, {
      openStore: (location) => new FolderStore(location),
      threads: 1,
      tmpDir: join(root, "tmp"),
      onTemporarySpace: (space) => announced.push(space),
      ...(bucketBytes !== undefined ? { bucketBytes } : {}),
    });
    const got = objects(join(dir, EMBEDDING_ROWS_PATH));
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `bucketBytes ${bucketBytes}`);
    for (const [key, bytes] of want)
      assert.ok(got.get(key)!.equals(bytes), `${key} differs, bucketBytes ${bucketBytes}`);
    // A bucket of 20 nonzeros holds one or two rows of ~17: buckets end inside runs of rows.
    if (bucketBytes === 8 * 40) assert.ok(result.buckets > 100, `${result.buckets} buckets`);
    if (bucketBytes === undefined) assert.equal(result.buckets, 1);
    assert.equal(announced.length, 1);
    assert.equal(announced[0]!.folder, join(root, "tmp"));
    assert.ok(result.bytesSpilled > 0 && result.bytesSpilled <= announced[0]!.bytes);
    assert.deepEqual(readdirSync(join(root, "tmp")), [], "the temporary folder is removed");
    const named = embeddingRowsOf(await openDataset(new FolderStore(dir)))!;
    assert.deepEqual(named, result.rows);
    assert.equal(named.digest, orderDigest(embeddingOrder(...xy(matrix.nCells))));
  }
});

/** The embedding's two columns as float32, as the writer reads them back from obs. */
function xy(n: number): [Float32Array, Float32Array] {
  const values = umap(n);
  return [
    Float32Array.from({ length: n }, (_, c) => values[2 * c]!),
    Float32Array.from({ length: n }, (_, c) => values[2 * c + 1]!),
  ];
}

test("a dataset without a companion or without an embedding is refused, naming what is missing", async () => {
  const small = randomMatrix(40, 8, 2);
  const noCompanion = join(root, "no-companion");
  await dataset(noCompanion, small, { withCompanion: false });
  await assert.rejects(
    writeEmbeddingRows(noCompanion, { openStore: (location) => new FolderStore(location) }),
    (err: unknown) =>
      isDeltacellsError(err, "NotFound") &&
      err.field === "metadata.sporadik" &&
      err.object === `${new FolderStore(noCompanion).url}/manifest.json` &&
      /names no sporadik companion .*convert with --sporadik/.test(err.message),
  );
  const noEmbedding = join(root, "no-embedding");
  await dataset(noEmbedding, small, { withEmbedding: false });
  await assert.rejects(
    writeEmbeddingRows(noEmbedding, { openStore: (location) => new FolderStore(location) }),
    (err: unknown) =>
      isDeltacellsError(err, "NotFound") &&
      err.expected === "a numeric KEY_0/KEY_1 pair (X_umap_0, X_umap_1)" &&
      err.found === "no obs" &&
      /has no embedding in obs .*--obsm X_umap/.test(err.message),
  );
});

/** A folder whose writes fail from the `failAt`-th on, as a full disk or a lost connection would. */
class FailingFolder extends FolderStore {
  writes = 0;
  constructor(
    location: string,
    private readonly failAt: number,
    private readonly onWrite: () => Promise<void>,
  ) {
    super(location);
  }
  override async set(
    key: string,
    value: Uint8Array,
    opts?: Parameters<FolderStore["set"]>[2],
  ): Promise<void> {
    await this.onWrite();
    if (++this.writes >= this.failAt) throw new Error(`disk full writing ${key}`);
    return super.set(key, value, opts);
  }
}

test("written again over the store the manifest names, a run cut anywhere leaves it unnamed, never named and torn; the next run names the complete store", async () => {
  const dir = join(root, "again");
  await dataset(dir, matrix);
  const expected = join(root, "again-expected");
  await inMemory(dir, expected);
  const first = await writeEmbeddingRows(dir, {
    openStore: (location) => new FolderStore(location),
    threads: 1,
  });
  const rowsDir = join(dir, EMBEDDING_ROWS_PATH);
  const stored = objects(rowsDir).size;
  // Cut at the first, a middle and the last object of the store (order.npy, after the block).
  for (const failAt of [1, Math.floor(stored / 2), stored]) {
    const namedWhileWriting: unknown[] = [];
    let rowsStore: FailingFolder | undefined;
    await assert.rejects(
      writeEmbeddingRows(dir, {
        threads: 1,
        tmpDir: join(root, "tmp"),
        openStore: (location) => {
          if (location !== rowsDir) return new FolderStore(location);
          rowsStore = new FailingFolder(location, failAt, async () => {
            namedWhileWriting.push(embeddingRowsOf(await openDataset(new FolderStore(dir))));
          });
          return rowsStore;
        },
      }),
      /disk full/,
    );
    assert.equal(rowsStore!.writes, failAt, "cut where asked");
    assert.deepEqual(
      namedWhileWriting,
      new Array(failAt).fill(undefined),
      `the manifest named no rows from the first object written over (cut at ${failAt})`,
    );
    assert.equal(embeddingRowsOf(await openDataset(new FolderStore(dir))), undefined);
    assert.deepEqual(readdirSync(join(root, "tmp")), [], "the temporary folder is removed");
  }
  const again = await writeEmbeddingRows(dir, {
    openStore: (location) => new FolderStore(location),
    threads: 1,
  });
  assert.deepEqual(again.rows, first.rows);
  assert.deepEqual(embeddingRowsOf(await openDataset(new FolderStore(dir))), first.rows);
  const want = objects(expected);
  const got = objects(rowsDir);
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
  for (const [key, bytes] of want) assert.ok(got.get(key)!.equals(bytes), `${key} differs`);
});
