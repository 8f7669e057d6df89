/**
 * Golden tiles: committed blobs with their expected decoded contents. The decoder must keep
 * reading them, and the encoder must keep writing them byte for byte (same input, zstd level
 * 19; the zstd version is pinned by zstd-napi). Regenerate deliberately with
 * `UPDATE_GOLDEN=1 node --import tsx --conditions=source --test packages/deltacells/test/codec-golden.test.ts`.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { decodeTile, encodeTile, type TileRows } from "@deltacells/core";
import { assertDecodedEquals, prng, randomCsr, type TileContents, tileContents } from "./codec-helpers.js";

const dir = new URL("./fixtures/tiles/", import.meta.url);

function readExpected(name: string): TileContents {
  return JSON.parse(readFileSync(new URL(`${name}.json`, dir), "utf8")) as TileContents;
}

function rowsOf(e: TileContents): TileRows {
  return {
    nGenes: e.n_genes,
    indptr: e.indptr,
    indices: Int32Array.from(e.indices),
    data: Int32Array.from(e.data),
  };
}

/** The inputs of the golden tiles (their expected contents are also stored, as JSON). */
const goldenCases: Record<string, { rows: TileRows; nChunks: number }> = {
  small: {
    rows: {
      nGenes: 20,
      indptr: [0, 3, 3, 6, 7],
      indices: Int32Array.from([0, 4, 19, 1, 2, 3, 7]),
      data: Int32Array.from([1, 1, 2, 5, 1, 65535, 300]),
    },
    nChunks: 2,
  },
  exceptions: {
    rows: {
      nGenes: 300_000,
      indptr: [0, 4, 4, 7, 9],
      indices: Int32Array.from([0, 65536, 200_000, 299_999, 65535, 131_071, 131_072, 5, 100_000]),
      data: Int32Array.from([65535, 65536, 2 ** 31 - 1, 1, 70_000, 3, 65535, 2, 1_000_000]),
    },
    nChunks: 2,
  },
  empty: {
    rows: { nGenes: 33_000, indptr: [0], indices: new Int32Array(0), data: new Int32Array(0) },
    nChunks: 8,
  },
  "one-cell": {
    rows: { nGenes: 5, indptr: [0, 2], indices: Int32Array.from([1, 3]), data: Int32Array.from([4, 9]) },
    nChunks: 8,
  },
  "empty-chunk": {
    rows: {
      nGenes: 10,
      indptr: [0, 0, 0, 0, 3],
      indices: Int32Array.from([0, 1, 9]),
      data: Int32Array.from([1, 2, 3]),
    },
    nChunks: 4,
  },
  // Real counts: the Seurat PBMC subset (80 cells x 230 genes), genes sorted by decreasing total;
  // its rows are the stored JSON itself (see fixtures/tiles/README.md).
  "pbmc-small": { rows: rowsOf(readExpected("pbmc-small")), nChunks: 4 },
  random: {
    rows: randomCsr(prng(42), {
      nCells: 120,
      nGenes: 150_000,
      bigValueRate: 0.005,
      bigGapRate: 0.01,
      emptyRate: 0.1,
    }),
    nChunks: 8,
  },
};

if (process.env.UPDATE_GOLDEN === "1") {
  for (const [name, c] of Object.entries(goldenCases)) {
    writeFileSync(new URL(`${name}.dct`, dir), await encodeTile(c.rows, { nChunks: c.nChunks, level: 19 }));
    writeFileSync(new URL(`${name}.json`, dir), `${JSON.stringify(tileContents(c.rows))}\n`);
  }
}

for (const [name, c] of Object.entries(goldenCases)) {
  test(`golden tile "${name}" decodes to its stored contents and is still encoded byte for byte`, async () => {
    const blob = new Uint8Array(readFileSync(new URL(`${name}.dct`, dir)));
    const expected = readExpected(name);
    const stored = rowsOf(expected);
    assert.deepEqual(expected, tileContents(c.rows), "the stored contents are the golden input");
    assertDecodedEquals(await decodeTile(blob), stored);
    assert.deepEqual(await encodeTile(c.rows, { nChunks: c.nChunks, level: 19 }), blob);
  });
}
