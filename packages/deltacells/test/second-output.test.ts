/**
 * A build's second output (`secondOutput` of buildAtlas and writeDataset): fed the cells of the
 * tile pass, in step with it. It sees exactly the matrix the dataset holds, genes in its source
 * order (what `datasetRowBlocks` reads back from the tiles, which is how the companion was written
 * before), for one input and for an atlas whose inputs have other genes; every block before the
 * input is read again (a reader may reuse a block's memory); the manifest only once it has
 * finished; and a failure of either side fails both, the second output's rows never ending
 * cleanly after a stop.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import {
  buildAtlas,
  type CanonicalRowBlock,
  type DatasetSource,
  datasetRowBlocks,
  isDeltacellsError,
  openDataset,
  type SecondOutput,
  type SecondOutputMatrix,
  writeDataset,
} from "../src/index.js";
import { atlasInput, compress, encoder, genes, refs } from "./atlas-fixtures.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

/** Rows as `cell -> [gene, count][]`, checking they come in order, each row's genes ascending. */
async function collect(rows: AsyncIterable<CanonicalRowBlock>, slow = false): Promise<[number, number][][]> {
  const cells: [number, number][][] = [];
  for await (const block of rows) {
    if (slow) await tick();
    assert.equal(block.rowStart, cells.length, "the blocks follow one another");
    for (let r = 0; r < block.nRows; r++) {
      const row: [number, number][] = [];
      for (let k = block.indptr[r]!; k < block.indptr[r + 1]!; k++)
        row.push([block.indices[k]!, block.data[k]!]);
      for (let k = 1; k < row.length; k++) assert.ok(row[k]![0] > row[k - 1]![0], "genes ascending in a row");
      cells.push(row);
    }
    if (slow) await tick();
  }
  return cells;
}

/** A second output that collects what it is given, and what it was told of the matrix. */
function collector(slow = false) {
  const got: { rows?: [number, number][][]; matrix?: SecondOutputMatrix } = {};
  const write: SecondOutput = async (rows, matrix) => {
    got.matrix = matrix;
    got.rows = await collect(rows, slow);
  };
  return { got, write };
}

/** The dataset in `store` read back from its tiles, genes in the source order. */
async function readBack(store: MemoryStore) {
  const ds = await openDataset(store);
  const { geneOrder, blocks } = await datasetRowBlocks(ds);
  return { ds, geneOrder, rows: await collect(blocks) };
}

test("one input's second output is the matrix the dataset holds, genes in the source's order, told its shape and nonzeros", async () => {
  const store = new MemoryStore("memory://one");
  const second = collector(true);
  const source = atlasInput("one.h5ad", 23, genes(0, 11), 3);
  await writeDataset(source, store, { encoder, compress, tileSize: 4, secondOutput: second.write });
  const back = await readBack(store);
  assert.equal(back.geneOrder, "source");
  assert.deepEqual(second.got.rows, back.rows);
  const nnz = back.ds.manifest.tile_nnz.reduce((a, b) => a + b, 0);
  assert.deepEqual(second.got.matrix, { nCells: 23, nGenes: 11, nnz });
});

for (const join of ["outer", "inner"] as const) {
  test(`an atlas's second output (${join} join) holds its cells in the gene space of the dataset's source order, as read back from the tiles`, async () => {
    const store = new MemoryStore(`memory://${join}`);
    const second = collector();
    // Overlapping gene sets in other orders: genes are matched by key and re-sorted in each row.
    const inputs = [
      atlasInput("a.h5ad", 13, genes(0, 9), 1),
      atlasInput("b.h5ad", 10, [...genes(4, 8)].reverse(), 2),
      atlasInput("c.h5ad", 6, genes(2, 5), 3),
    ];
    await buildAtlas(refs(inputs), store, {
      encoder,
      compress,
      tileSize: 4,
      genes: { join },
      secondOutput: second.write,
    });
    const back = await readBack(store);
    assert.deepEqual(second.got.rows, back.rows);
    const nnz = back.ds.manifest.tile_nnz.reduce((a, b) => a + b, 0);
    assert.deepEqual(second.got.matrix, { nCells: 29, nGenes: back.ds.nGenes, nnz });
    assert.equal(back.ds.nGenes, join === "outer" ? 12 : 3);
  });
}

/**
 * A source of `blocks` blocks of 2 cells whose every block is the same arrays, refilled, as a
 * reader reusing its memory would hand them over. Cell c holds one count, c + 1, at gene c % 5.
 */
function reusingSource(blocks: number): DatasetSource & { closed: number } {
  const indptr = Float64Array.of(0, 1, 2);
  const indices = new Int32Array(2);
  const data = new Int32Array(2);
  const source = {
    format: "memory",
    location: "memory://reusing",
    matrixPath: "X",
    nCells: blocks * 2,
    nGenes: 5,
    closed: 0,
    var: async () => ({ indexName: null, index: ["a", "b", "c", "d", "e"], columns: [] }),
    rowBlocks() {
      return (async function* () {
        try {
          for (let b = 0; b < blocks; b++) {
            for (let r = 0; r < 2; r++) {
              const cell = b * 2 + r;
              indices[r] = cell % 5;
              data[r] = cell + 1;
            }
            yield { rowStart: b * 2, nRows: 2, indptr, indices, data };
          }
        } finally {
          source.closed++;
        }
      })();
    },
  };
  return source;
}

test("the second output has each block to itself until it asks for the next: a reader reusing its memory overwrites nothing it still reads", async () => {
  const store = new MemoryStore("memory://reusing");
  const second = collector(true);
  await writeDataset(reusingSource(6), store, { encoder, compress, tileSize: 4, secondOutput: second.write });
  const expected = Array.from({ length: 12 }, (_, c) => [[c % 5, c + 1]]);
  assert.deepEqual(second.got.rows, expected);
  assert.deepEqual((await readBack(store)).rows, expected);
});

test("the manifest is written only once the second output has finished", async () => {
  const store = new MemoryStore("memory://last");
  let manifestWhenDone: boolean | undefined;
  await writeDataset(atlasInput("late.h5ad", 9, genes(0, 4), 5), store, {
    encoder,
    compress,
    tileSize: 4,
    secondOutput: async (rows) => {
      await collect(rows);
      for (let i = 0; i < 5; i++) await tick();
      manifestWhenDone = store.objects.has("manifest.json");
    },
  });
  assert.equal(manifestWhenDone, false);
  assert.ok(store.objects.has("manifest.json"));
});

test("a failing second output fails the build with its error: the input is closed and no manifest written", async () => {
  const store = new MemoryStore("memory://fails");
  const source = reusingSource(6);
  await assert.rejects(
    writeDataset(source, store, {
      encoder,
      compress,
      tileSize: 4,
      secondOutput: async (rows) => {
        let n = 0;
        for await (const _ of rows) if (++n === 2) throw new Error("the companion's disk is full");
      },
    }),
    /the companion's disk is full/,
  );
  assert.equal(source.closed, 2, "both passes closed the input");
  assert.ok(!store.objects.has("manifest.json"));
});

test("a build that fails in its tile pass makes the second output's rows fail, never end cleanly", async () => {
  const store = new MemoryStore("memory://stops");
  const source = reusingSource(6);
  const rowBlocks = source.rowBlocks.bind(source);
  let pass = 0;
  // The tile pass yields a cell whose gene is past the gene count: the build refuses it.
  source.rowBlocks = (o) =>
    ++pass === 1
      ? rowBlocks(o)
      : (async function* () {
          for await (const block of rowBlocks(o)) {
            if (block.rowStart === 6) block.indices[0] = 99;
            yield block;
          }
        })();
  let ending: unknown = "not reached";
  await assert.rejects(
    writeDataset(source, store, {
      encoder,
      compress,
      tileSize: 4,
      secondOutput: async (rows) => {
        try {
          for await (const _ of rows) await tick();
          ending = "a clean end";
        } catch (err) {
          ending = err;
          throw err;
        }
      },
    }),
  );
  assert.ok(ending instanceof Error, `the second output's rows ended with ${String(ending)}`);
  assert.ok(!store.objects.has("manifest.json"));
});

test("a second output that stops reading before the end fails the build", async () => {
  const store = new MemoryStore("memory://early");
  await assert.rejects(
    writeDataset(reusingSource(6), store, {
      encoder,
      compress,
      tileSize: 4,
      secondOutput: async (rows) => {
        for await (const _ of rows) break;
      },
    }),
    (e: unknown) => isDeltacellsError(e, "InvalidState"),
  );
  assert.ok(!store.objects.has("manifest.json"));
});
