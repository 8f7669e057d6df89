/**
 * The training loader against its contract: over epochs, ranks, world sizes that do not divide
 * the cell count (53 cells, tiles of 8 with a last one of 5) and decode paths, every cell is
 * yielded exactly once per epoch across ranks apart from exactly the reported padding or drops,
 * every rank yields the same number of batches, batches are deterministic, and every row equals
 * the source matrix's row (CSR and dense, all genes or a selection).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type Batch,
  createLoader,
  type Dataset,
  isDeltacellsError,
  type LoaderOptions,
  openDataset,
} from "../src/index.js";
import { checkBatchValues, loaderDataset, N_CELLS, wideDataset } from "./loader-fixtures.js";

interface Seen {
  index: number;
  cells: number[];
  padded: number;
  skipped: number;
}

/** Every batch of one epoch of a new loader, values checked against the source matrix. */
async function epochOf(
  ds: Dataset,
  m: Awaited<ReturnType<typeof loaderDataset>>["m"],
  opts: LoaderOptions,
): Promise<{ batches: Seen[]; padded: number[]; dropped: number[]; perEpoch: number }> {
  const loader = await createLoader(ds, opts);
  try {
    const summary = loader.epochSummary();
    const batches: Seen[] = [];
    for await (const b of loader) {
      checkBatchValues(m, b);
      batches.push({ index: b.index, cells: [...b.cells], padded: b.padded, skipped: b.skipped });
      b.release();
    }
    assert.equal(batches.length, summary.batches);
    return {
      batches,
      padded: [...summary.padded],
      dropped: [...summary.dropped],
      perEpoch: loader.batchesPerEpoch,
    };
  } finally {
    await loader.close();
  }
}

for (const threads of [undefined, 1, 2]) {
  test(`every cell exactly once per epoch across ranks, apart from the reported padding and drops (decoding ${threads ? `on ${threads} workers` : "on this thread"})`, async () => {
    const { store, m } = await loaderDataset();
    // One pool for every loader of the test (a pool per loader is tested below).
    await using ds = await openDataset(store, { threads });
    const quick = threads !== undefined;
    for (const worldSize of quick ? [3] : [1, 2, 3, 4, 7]) {
      for (const dropLast of [false, true]) {
        for (const epoch of quick ? [0, 1] : [0, 1, 2]) {
          for (const batchSize of quick ? [5] : [5, 8]) {
            const what = `worldSize ${worldSize}, dropLast ${dropLast}, epoch ${epoch}, batchSize ${batchSize}`;
            const counts = new Map<number, number>();
            const batchCounts: number[] = [];
            let padded: number[] = [];
            let dropped: number[] = [];
            for (let rank = 0; rank < worldSize; rank++) {
              const r = await epochOf(ds, m, {
                batchSize,
                worldSize,
                rank,
                dropLast,
                epoch,
                seed: 11,
                bufferTiles: 2,
              });
              batchCounts.push(r.batches.length);
              assert.equal(r.batches.length, r.perEpoch, what);
              r.batches.forEach((b, i) => {
                assert.equal(b.index, i);
                assert.equal(b.skipped, 0);
                // Full batches, but for the last one.
                if (i < r.batches.length - 1 || dropLast) assert.equal(b.cells.length, batchSize, what);
                // Padding is at the end of the last batch, and it is what the summary says.
                if (i < r.batches.length - 1) assert.equal(b.padded, 0);
                else assert.deepEqual(b.cells.slice(b.cells.length - b.padded), r.padded, what);
              });
              const all = r.batches.flatMap((b) => b.cells.slice(0, b.cells.length - b.padded));
              for (const c of all) counts.set(c, (counts.get(c) ?? 0) + 1);
              padded = padded.concat(r.padded);
              dropped = dropped.concat(r.dropped);
            }
            assert.ok(
              batchCounts.every((n) => n === batchCounts[0]),
              `${what}: batch counts ${batchCounts}`,
            );
            const expectedBatches = dropLast
              ? Math.floor(Math.floor(N_CELLS / worldSize) / batchSize)
              : Math.ceil(Math.ceil(N_CELLS / worldSize) / batchSize);
            assert.equal(batchCounts[0], expectedBatches, what);
            // Exactly once: each cell yielded once, or dropped (and then never yielded).
            for (let c = 0; c < N_CELLS; c++) {
              const n = counts.get(c) ?? 0;
              assert.equal(n + (dropped.includes(c) ? 1 : 0), 1, `${what}: cell ${c} yielded ${n} times`);
            }
            assert.equal(new Set(dropped).size, dropped.length, what);
            if (dropLast) {
              assert.equal(padded.length, 0);
              assert.equal(dropped.length, N_CELLS - worldSize * batchSize * batchCounts[0]!, what);
            } else {
              assert.equal(dropped.length, 0);
              assert.equal(padded.length, worldSize * Math.ceil(N_CELLS / worldSize) - N_CELLS, what);
            }
          }
        }
      }
    }
  });
}

test("a loader with its own pool (threads: 2) yields the same batches as one decoding on this thread", async () => {
  const { store, m } = await loaderDataset();
  const ds = await openDataset(store);
  const opts = { batchSize: 6, seed: 9, worldSize: 2, rank: 1 };
  const pooled = await epochOf(ds, m, { ...opts, threads: 2 });
  assert.deepEqual(pooled, await epochOf(ds, m, opts));
});

test("batches are a function of seed and epoch: repeated runs agree, other epochs and seeds differ", async () => {
  const { store, m } = await loaderDataset();
  const ds = await openDataset(store);
  const run = async (seed: number, epoch: number) =>
    (await epochOf(ds, m, { batchSize: 6, seed, epoch, bufferTiles: 3 })).batches.map((b) => b.cells);
  const a = await run(5, 0);
  assert.deepEqual(await run(5, 0), a);
  assert.notDeepEqual(await run(5, 1), a);
  assert.notDeepEqual(await run(6, 0), a);
  // Cells are mixed across the tiles of a window: the first batch spans more than one tile.
  assert.ok(new Set(a[0]!.map((c) => Math.floor(c / 8))).size > 1, `first batch ${a[0]}`);
  // Without shuffle the cells come in dataset order.
  const plain = await epochOf(ds, m, { batchSize: 6, shuffle: false });
  assert.deepEqual(
    plain.batches.flatMap((b) => b.cells),
    Array.from({ length: N_CELLS }, (_, i) => i),
  );
});

test("an iteration after a full epoch goes on with the next epoch; setEpoch goes back", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const loader = await createLoader(ds, { batchSize: 10, seed: 2 });
  const epoch = async () => {
    const out: number[][] = [];
    for await (const b of loader) {
      out.push([...b.cells]);
      b.release();
    }
    return out;
  };
  const e0 = await epoch();
  assert.deepEqual(loader.state().epoch, 1);
  assert.equal(loader.state().batchesYielded, 0);
  const e1 = await epoch();
  assert.notDeepEqual(e1, e0);
  loader.setEpoch(0);
  assert.deepEqual(await epoch(), e0);
});

test("dense rows and gene selections (names, source indices, dataset indices) equal the source matrix", async () => {
  const { store, m } = await loaderDataset();
  const ds = await openDataset(store);
  const order = (await ds.geneOrder())!;
  assert.notDeepEqual(
    [...order],
    [...order].sort((a, b) => a - b),
    "the fixture's genes are reordered",
  );
  const names = (await ds.geneNames())!;
  const pick = [7, 2, 11, 0]; // source indices, deliberately out of order
  const datasetColumns = pick.map((g) => order.indexOf(g));
  for (const output of ["csr", "dense"] as const) {
    for (const [what, genes, columnOrder] of [
      ["every gene", undefined, "source"],
      ["source indices", pick, "source"],
      ["dataset indices", datasetColumns, "dataset"],
      ["names", datasetColumns.map((j) => names[j]!), "source"],
    ] as const) {
      const loader = await createLoader(ds, { batchSize: 7, output, genes, columnOrder, seed: 4 });
      assert.deepEqual(
        [...loader.genes.sourceIndices],
        genes === undefined ? [...Array(12).keys()] : pick,
        what,
      );
      let rows = 0;
      for await (const b of loader) {
        assert.equal(b.format, output);
        assert.equal(b.nGenes, genes === undefined ? 12 : 4);
        checkBatchValues(m, b, genes === undefined ? undefined : pick);
        rows += b.size;
        b.release();
      }
      assert.equal(rows, N_CELLS, `${output}, ${what}`);
    }
  }
});

test("long rows (copied by memcpy) equal the source in every column order, CSR and dense", async () => {
  const { store, m } = await wideDataset();
  const ds = await openDataset(store);
  const pick = [299, 0, 150, 7, 42];
  for (const output of ["csr", "dense"] as const)
    for (const o of [
      { columnOrder: "dataset" },
      { columnOrder: "source" },
      { genes: pick },
      { columnOrder: "source", sortIndices: true },
    ] satisfies LoaderOptions[]) {
      const loader = await createLoader(ds, { batchSize: 9, output, ...o });
      let rows = 0;
      let longest = 0;
      for await (const b of loader) {
        checkBatchValues(m, b, loader.genes.sourceIndices);
        if (b.format === "csr")
          for (let r = 0; r < b.size; r++) longest = Math.max(longest, b.indptr[r + 1]! - b.indptr[r]!);
        rows += b.size;
        b.release();
      }
      assert.equal(rows, 40);
      if (output === "csr" && o.genes === undefined) assert.ok(longest >= 32, `longest row ${longest}`);
    }
});

test("CSR rows: sorted indices in the dataset's order or with sortIndices; float32 values", async () => {
  const { store, m } = await loaderDataset();
  const ds = await openDataset(store);
  const rowsSorted = (b: Batch) => {
    if (b.format !== "csr") return false;
    for (let r = 0; r < b.size; r++)
      for (let j = b.indptr[r]! + 1; j < b.indptr[r + 1]!; j++)
        if (b.indices[j]! <= b.indices[j - 1]!) return false;
    return true;
  };
  const check = async (opts: LoaderOptions, expectSorted: boolean) => {
    const loader = await createLoader(ds, { batchSize: 9, ...opts });
    let anyUnsorted = false;
    for await (const b of loader) {
      assert.equal(b.format === "csr" && b.sortedIndices, expectSorted);
      if (expectSorted) assert.ok(rowsSorted(b));
      anyUnsorted ||= !rowsSorted(b);
      if (opts.columnOrder !== "dataset") checkBatchValues(m, b);
      if (opts.values === "float32") assert.ok(b.format === "csr" && b.data instanceof Float32Array);
      b.release();
    }
    return anyUnsorted;
  };
  assert.equal(await check({}, false), true, "source order on a reordered dataset leaves rows unsorted");
  await check({ sortIndices: true }, true);
  await check({ columnOrder: "dataset" }, true);
  await check({ values: "float32", sortIndices: true }, true);
});

test("obs columns come with each batch: codes and vocabulary, labels, numbers, bools and strings", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const loader = await createLoader(ds, {
    batchSize: 10,
    obs: ["cell type/ü", "maybe", "n_counts", "score", "flag", "donor"],
    obsLabels: true,
  });
  let rows = 0;
  for await (const b of loader) {
    for (let r = 0; r < b.size; r++) {
      const i = b.cells[r]!;
      const ct = b.obs["cell type/ü"]!;
      assert.equal(ct.kind, "category");
      if (ct.kind !== "category") continue;
      assert.deepEqual(ct.categories, ["B", "T", "NK"]);
      assert.equal(ct.codes[r], i % 9 === 4 ? -1 : i % 3);
      assert.equal(ct.labels![r], i % 9 === 4 ? null : ["B", "T", "NK"][i % 3]);
      const maybe = b.obs.maybe!;
      assert.ok(maybe.kind === "numeric");
      if (i % 5 === 0) {
        assert.ok(Number.isNaN(maybe.values[r]!));
        assert.equal(maybe.valid![r], 0);
      } else {
        assert.equal(maybe.values[r], i * 10);
        if (maybe.valid) assert.equal(maybe.valid[r], 1);
      }
      const nCounts = b.obs.n_counts!;
      assert.ok(nCounts.kind === "numeric" && nCounts.arrowType === "int64");
      assert.equal(nCounts.values[r], i * 1000);
      const score = b.obs.score!;
      assert.ok(score.kind === "numeric");
      assert.equal(score.values[r], i / 4);
      const flag = b.obs.flag!;
      assert.ok(flag.kind === "bool");
      if (i === 7) assert.equal(flag.valid![r], 0);
      else assert.equal(flag.values[r], i % 2);
      const donor = b.obs.donor!;
      assert.ok(donor.kind === "string");
      assert.equal(donor.values[r], i === 3 ? null : `d${i % 4}`);
      rows++;
    }
    b.release();
  }
  assert.equal(rows, N_CELLS);
});

test("a released batch refuses to be read, and its buffers hold a later batch", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  // Windows of one tile (8 cells): a batch of 10 spans at most two windows, and the slot path
  // lays one window out ahead, so at most three batches are held at once.
  for (const onUnreadableTile of ["error", "skip"] as const) {
    const loader = await createLoader(ds, { batchSize: 10, prefetch: 0, bufferTiles: 1, onUnreadableTile });
    const buffers = new Set<ArrayBufferLike>();
    for await (const b of loader) {
      if (b.format === "csr") buffers.add(b.indices.buffer);
      b.release();
    }
    const firstEpoch = buffers.size;
    assert.ok(firstEpoch <= 3, `${firstEpoch} sets of buffers for one epoch`);
    let first: Batch | undefined;
    for await (const b of loader) {
      if (b.format === "csr") buffers.add(b.indices.buffer);
      b.release();
      first ??= b;
    }
    assert.equal(buffers.size, firstEpoch, "the next epoch reuses the same buffers");
    assert.throws(
      () => first!.cells,
      (e) => isDeltacellsError(e, "InvalidInput") && /was released/.test(e.message),
    );
  }
});

test("a loader holds the buffers of the batches one window fills, and reuses them", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  // One window of every tile (53 cells) fills all 6 batches of 10: laid out at once.
  const loader = await createLoader(ds, { batchSize: 10, prefetch: 0 });
  const buffers = new Set<ArrayBufferLike>();
  for (let epoch = 0; epoch < 2; epoch++) {
    for await (const b of loader) {
      if (b.format === "csr") buffers.add(b.indices.buffer);
      b.release();
    }
  }
  assert.equal(buffers.size, 6, "one set per batch of the window, reused in the next epoch");
});

test("refusals: bad options, a rank outside the world, a cap too small for one window", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const refuses = async (opts: LoaderOptions, field: string) =>
    assert.rejects(createLoader(ds, opts), (e) => isDeltacellsError(e, "InvalidInput") && e.field === field);
  await refuses({ batchSize: 0 }, "batchSize");
  await refuses({ rank: 2, worldSize: 2 }, "rank");
  await refuses({ worldSize: 60 }, "worldSize");
  await refuses({ output: "sparse" as "csr" }, "output");
  await refuses({ seed: -1 }, "seed");
  await refuses({ genes: ["GENE0", "nope"] }, "genes");
  await refuses({ genes: [3, 3] }, "genes");
  await refuses({ genes: [12] }, "genes");
  await refuses({ memoryCap: 1000 }, "memoryCap");
  await refuses({ output: "dense", values: "int32" }, "values");
  await refuses({ startBatch: 99, batchSize: 10 }, "startBatch");
});
