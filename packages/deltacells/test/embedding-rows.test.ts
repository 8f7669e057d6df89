/**
 * The order of the rows in embedding order (`embeddingOrder`), which the writer sorts rows by and
 * the viewer maps a selection with: a permutation of the cells, the same for the same float32
 * coordinates, cells without coordinates last, and a disk of nearby cells a few runs of rows
 * (what bounds a lasso's read by the selection); and `metadata.sporadik_rows`, recorded and read
 * back, refused when malformed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  EMBEDDING_ROWS_PATH,
  embeddingOrder,
  embeddingRowsOf,
  encodeTile,
  isDeltacellsError,
  nameEmbeddingRows,
  openDataset,
  orderDigest,
  orderNpy,
  rowsOf,
  writeDataset,
} from "@deltacells/core";
import { MemoryStore } from "@deltacells/storage";
import { mulberry32 } from "../../../test-utils/prng.js";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

/** `n` cells in 5 Gaussian clusters, as interleaved coordinates. */
function embedding(n: number, seed = 3): { x: Float32Array; y: Float32Array } {
  const rand = mulberry32(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-300)) * Math.cos(2 * Math.PI * rand());
  const centres = Array.from({ length: 5 }, () => [gauss() * 6, gauss() * 6]);
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let c = 0; c < n; c++) {
    const [cx, cy] = centres[Math.floor(rand() * 5)]!;
    x[c] = cx! + gauss();
    y[c] = cy! + gauss();
  }
  return { x, y };
}

test("the embedding order is a permutation of the cells, the same for the same coordinates", () => {
  const { x, y } = embedding(20_000);
  const order = embeddingOrder(x, y);
  assert.equal(order.length, 20_000);
  assert.deepEqual(
    [...order].sort((a, b) => a - b),
    Array.from({ length: 20_000 }, (_, c) => c),
  );
  assert.deepEqual(embeddingOrder(x.slice(), y.slice()), order);
  assert.equal(orderDigest(embeddingOrder(x, y)), orderDigest(order));
  const rows = rowsOf(order);
  for (let p = 0; p < order.length; p++) assert.equal(rows[order[p]!], p);
  // Another embedding (one cell moved across the plot) is another order, and another digest.
  const moved = x.slice();
  moved[17] = moved[17]! + 40;
  assert.notEqual(orderDigest(embeddingOrder(moved, y)), orderDigest(order));
});

test("cells without both coordinates come last, in cell order; one cell and no cells are orders too", () => {
  const { x, y } = embedding(1_000);
  x[10] = Number.NaN;
  y[500] = Number.POSITIVE_INFINITY;
  x[999] = Number.NaN;
  const order = embeddingOrder(x, y);
  assert.deepEqual([...order.subarray(997)], [10, 500, 999]);
  assert.deepEqual([...embeddingOrder(Float32Array.of(2), Float32Array.of(3))], [0]);
  assert.deepEqual([...embeddingOrder(new Float32Array(0), new Float32Array(0))], []);
  // Every cell at one spot: cell order.
  assert.deepEqual(
    [...embeddingOrder(new Float32Array(4).fill(1), new Float32Array(4).fill(1))],
    [0, 1, 2, 3],
  );
  assert.throws(
    () => embeddingOrder(new Float32Array(3), new Float32Array(2)),
    (e: unknown) => isDeltacellsError(e, "InvalidInput"),
  );
});

test("a lasso's cells (the nearest to a point) are a few runs of rows, where in cell order they are scattered", () => {
  const n = 200_000;
  const { x, y } = embedding(n);
  const rows = rowsOf(embeddingOrder(x, y));
  const distance = Array.from({ length: n }, (_, c) => Math.hypot(x[c]! - x[0]!, y[c]! - y[0]!));
  const lasso = Array.from({ length: n }, (_, c) => c)
    .sort((a, b) => distance[a]! - distance[b]!)
    .slice(0, 2_000);
  const runs = (positions: number[]) => {
    const sorted = [...positions].sort((a, b) => a - b);
    return sorted.filter((p, i) => i === 0 || p !== sorted[i - 1]! + 1).length;
  };
  const inRows = runs(lasso.map((c) => rows[c]!));
  const inCells = runs(lasso);
  assert.ok(inRows < 100, `${inRows} runs of rows`);
  assert.ok(inCells > 1_900, `${inCells} runs of cells`);
  // Rows of ~700 cells (a chunk of the companion's rows): a handful, against nearly every one.
  const chunks = (positions: number[]) => new Set(positions.map((p) => Math.floor(p / 700))).size;
  assert.ok(chunks(lasso.map((c) => rows[c]!)) <= 8, "chunks of rows in embedding order");
  assert.ok(chunks(lasso) > 250, "chunks of rows in cell order");
});

test("orderNpy is a .npy of the order that numpy reads as int32", () => {
  const bytes = orderNpy(Uint32Array.of(2, 0, 1));
  assert.deepEqual([...bytes.subarray(0, 6)], [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);
  assert.match(new TextDecoder().decode(bytes.subarray(10, 74)), /'descr': '<i4'.*'shape': \(3,\)/);
  assert.deepEqual([...new Int32Array(bytes.slice(bytes.length - 12).buffer)], [2, 0, 1]);
});

test("nameEmbeddingRows records the rows in embedding order, read back by embeddingRowsOf; a malformed entry is refused", async () => {
  const store = new MemoryStore();
  await writeDataset(memorySource(randomMatrix(12, 5, 3)), store, {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 1 }) },
    compress: zstdCompressor(1),
    tileSize: 4,
  });
  const before = await openDataset(store);
  assert.equal(embeddingRowsOf(before), undefined);
  const named = {
    path: EMBEDDING_ROWS_PATH,
    embedding: ["X_umap_0", "X_umap_1"] as [string, string],
    digest: "0123abcd",
  };
  await nameEmbeddingRows(store, named);
  const after = await openDataset(store);
  assert.deepEqual(embeddingRowsOf(after), named);
  assert.deepEqual({ ...after.manifest, metadata: {} }, { ...before.manifest, metadata: {} });
  for (const bad of [
    "sporadik-rows",
    { ...named, path: "../elsewhere" },
    { ...named, embedding: ["X_umap_0"] },
    { ...named, digest: "xyz" },
    null,
  ]) {
    const ds = { url: after.url, manifest: { ...after.manifest, metadata: { sporadik_rows: bad } } };
    assert.throws(
      () => embeddingRowsOf(ds),
      (e: unknown) => isDeltacellsError(e, "InconsistentManifest") && e.field === "metadata.sporadik_rows",
      JSON.stringify(bad),
    );
  }
});
