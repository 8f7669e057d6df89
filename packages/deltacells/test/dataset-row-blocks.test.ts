/** A dataset read back as row blocks (what the sporadik conversion feeds its writer). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { MANIFEST_KEY } from "../src/dataset/manifest.js";
import { datasetRowBlocks, decodeTile, encodeTile, openDataset, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { type DenseMatrix, denseToBlock, memorySource, randomMatrix } from "./dataset-fixtures.js";

const codec = { encode: encodeTile, decode: decodeTile };

async function written(m: DenseMatrix) {
  const store = new MemoryStore();
  await writeDataset(memorySource(m, { blockCells: 6 }), store, {
    encoder: codec,
    compress: zstdCompressor(3),
    tileSize: 8,
    nChunks: 2,
    level: 3,
  });
  return store;
}

/** Every block as plain arrays, checking they come in order and cover every cell once. */
async function collect(
  blocks: AsyncIterable<{
    rowStart: number;
    nRows: number;
    indptr: ArrayLike<number>;
    indices: Int32Array;
    data: Int32Array;
  }>,
) {
  const out: { rowStart: number; nRows: number; indptr: number[]; indices: number[]; data: number[] }[] = [];
  for await (const b of blocks) {
    out.push({
      rowStart: b.rowStart,
      nRows: b.nRows,
      indptr: Array.from(b.indptr),
      indices: [...b.indices],
      data: [...b.data],
    });
  }
  return out;
}

function expected(m: DenseMatrix, order?: Int32Array) {
  const out = [];
  for (let a = 0; a < m.nCells; a += 8) {
    const b = Math.min(m.nCells, a + 8);
    // In the dataset's own order, column j holds source column order[j].
    const columns = order ?? Int32Array.from({ length: m.nGenes }, (_, g) => g);
    const renamed: DenseMatrix = { ...m, values: new Int32Array(m.values.length) };
    for (let c = 0; c < m.nCells; c++)
      for (let j = 0; j < m.nGenes; j++)
        renamed.values[c * m.nGenes + j] = m.values[c * m.nGenes + columns[j]!]!;
    const block = denseToBlock(renamed, a, b);
    out.push({
      rowStart: a,
      nRows: b - a,
      indptr: Array.from(block.indptr),
      indices: [...block.indices],
      data: [...block.data],
    });
  }
  return out;
}

test("datasetRowBlocks gives back the source matrix, genes in the source's order, one block per tile", async () => {
  const m = randomMatrix(53, 31, 7);
  const ds = await openDataset(await written(m), { decoder: codec });
  const order = (await ds.geneOrder())!;
  assert.notDeepEqual(
    [...order],
    [...order].sort((a, b) => a - b),
    "the writer reordered the genes",
  );
  const { geneOrder, blocks } = await datasetRowBlocks(ds);
  assert.equal(geneOrder, "source");
  assert.deepEqual(await collect(blocks), expected(m));
});

test("datasetRowBlocks of a dataset without gene_order.npy keeps the dataset's order, and says so", async () => {
  const m = randomMatrix(53, 31, 7);
  const store = await written(m);
  const order = (await (await openDataset(store, { decoder: codec })).geneOrder())!;
  const manifest = JSON.parse(new TextDecoder().decode(await store.get(MANIFEST_KEY)));
  await store.set(
    MANIFEST_KEY,
    new TextEncoder().encode(JSON.stringify({ ...manifest, has_gene_order: false })),
  );
  const { geneOrder, blocks } = await datasetRowBlocks(await openDataset(store, { decoder: codec }));
  assert.equal(geneOrder, "dataset");
  assert.deepEqual(await collect(blocks), expected(m, order));
});
