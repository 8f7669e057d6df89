/**
 * The slot path (decoders write each row straight into its batch, loader/slots.ts) against the
 * Assembler path (whole tiles decoded, rows copied on the loader's thread), which a decoder
 * without `scatter` gets: for the same options every batch is identical, field by field, on this
 * thread and on a pool, for CSR and dense, source and dataset column orders, a permutation of
 * every gene, float32 values, obs columns, padding, drops and resumed epochs. Each run counts the
 * decoder's calls, so a loader that silently took the other path fails.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { TileLayout } from "../src/codec/layout.js";
import { createLocalDecoder } from "../src/codec/local-decoder.js";
import type { ScatterJob } from "../src/codec/scatter.js";
import type { TileDecoder } from "../src/dataset/tile-io.js";
import { type Batch, createLoader, type LoaderOptions, openDataset } from "../src/index.js";
import { checkBatchValues, loaderDataset, N_CELLS } from "./loader-fixtures.js";

/** A decoder on this thread that counts its calls; without `scatter` the loader copies rows. */
function countingDecoder(scatter: boolean) {
  const local = createLocalDecoder();
  const calls = { decode: 0, scatter: 0 };
  const decoder: TileDecoder = {
    renumbers: true,
    decode: (bytes, opts) => {
      calls.decode++;
      return local.decode(bytes, opts);
    },
    ...(scatter && {
      scatter: (bytes: Uint8Array, layout: TileLayout, job: ScatterJob) => {
        calls.scatter++;
        return local.scatter(bytes, layout, job);
      },
    }),
  };
  return { decoder, calls };
}

/** Everything a batch holds, as plain values. */
function snapshot(b: Batch): unknown {
  const common = {
    epoch: b.epoch,
    index: b.index,
    size: b.size,
    nGenes: b.nGenes,
    padded: b.padded,
    skipped: b.skipped,
    cells: [...b.cells],
    obs: JSON.parse(
      JSON.stringify(b.obs, (_, v) => (ArrayBuffer.isView(v) ? [...(v as unknown as number[])] : v)),
    ),
  };
  if (b.format === "dense") return { ...common, format: b.format, values: [...b.values] };
  return {
    ...common,
    format: b.format,
    sortedIndices: b.sortedIndices,
    indptr: [...b.indptr],
    indices: [...b.indices],
    data: [...b.data],
    dataType: b.data.constructor.name,
  };
}

async function batchesOf(ds: Awaited<ReturnType<typeof openDataset>>, opts: LoaderOptions) {
  const m = (await loaderDataset()).m;
  const loader = await createLoader(ds, opts);
  try {
    const out: unknown[] = [];
    for await (const b of loader) {
      checkBatchValues(m, b, loader.genes.sourceIndices);
      out.push(snapshot(b));
      b.release();
    }
    return out;
  } finally {
    await loader.close();
  }
}

const CASES: LoaderOptions[] = [
  { batchSize: 5, seed: 11, bufferTiles: 2 },
  { batchSize: 7, seed: 3, epoch: 2, worldSize: 3, rank: 2 },
  { batchSize: 7, seed: 3, epoch: 1, worldSize: 4, rank: 1, dropLast: true },
  { batchSize: 20, seed: 5, bufferTiles: 1, worldSize: 2, rank: 1 }, // batches wider than windows
  { batchSize: 6, seed: 8, startBatch: 4, worldSize: 2, rank: 0 }, // resumed mid-epoch
  { batchSize: 6, seed: 8, startBatch: 1, worldSize: 7, rank: 0 }, // resumed: a cell, then padding
  { batchSize: 7, seed: 8, startBatch: 1, worldSize: 7, rank: 0 }, // resumed: a batch of padding only
  { batchSize: 4, shuffle: false, columnOrder: "dataset" },
  { batchSize: 9, seed: 2, values: "float32" },
  { batchSize: 9, seed: 2, output: "dense" },
  { batchSize: 9, seed: 2, output: "dense", columnOrder: "dataset", values: "float32" },
  { batchSize: 8, seed: 6, obs: ["cell type/ü", "maybe", "n_counts", "flag", "donor"] },
];

test("the slot path yields exactly the Assembler's batches (CSR, dense, orders, padding, drops, resume, obs)", async () => {
  const { store } = await loaderDataset();
  const plain = countingDecoder(false);
  const slots = countingDecoder(true);
  const copyDs = await openDataset(store, { decoder: plain.decoder });
  const slotDs = await openDataset(store, { decoder: slots.decoder });
  const names = (await copyDs.geneNames())!;
  // A permutation of every gene (the decoder renumbers it) goes through the slot path too.
  const everyGeneReversed = [...names].reverse();
  for (const opts of [...CASES, { batchSize: 6, seed: 1, genes: everyGeneReversed }]) {
    const what = JSON.stringify(opts).slice(0, 120);
    const before = { ...plain.calls, ...{ scatter: slots.calls.scatter } };
    const expected = await batchesOf(copyDs, opts);
    const got = await batchesOf(slotDs, opts);
    assert.ok(expected.length > 0, what);
    assert.deepEqual(got, expected, what);
    assert.ok(plain.calls.decode > before.decode, `${what}: the reference decoded whole tiles`);
    assert.ok(slots.calls.scatter > before.scatter, `${what}: the slot path scattered`);
    assert.equal(slots.calls.decode, 0, `${what}: the slot path never decoded whole tiles`);
  }
});

test("on a pool (shared batch buffers written by the workers) the batches are the same", async () => {
  const { store } = await loaderDataset();
  const plain = countingDecoder(false);
  const copyDs = await openDataset(store, { decoder: plain.decoder });
  await using pooled = await openDataset(store, { threads: 2 });
  assert.deepEqual(pooled.scatters, { shared: true });
  for (const opts of [CASES[0]!, CASES[3]!, CASES[5]!, CASES[9]!, CASES[11]!]) {
    const what = JSON.stringify(opts);
    assert.deepEqual(await batchesOf(pooled, opts), await batchesOf(copyDs, opts), what);
    // A loader with its own pool too.
    assert.deepEqual(await batchesOf(copyDs, { ...opts, threads: 1 }), await batchesOf(copyDs, opts), what);
  }
});

test("selections that leave genes out, sorted rows and skipped tiles take the copying path", async () => {
  const { store } = await loaderDataset();
  const slots = countingDecoder(true);
  const ds = await openDataset(store, { decoder: slots.decoder });
  for (const opts of [
    { genes: [3, 1] },
    { sortIndices: true },
    { onUnreadableTile: "skip" },
  ] satisfies LoaderOptions[]) {
    const before = { ...slots.calls };
    const rows = (await batchesOf(ds, { batchSize: 10, seed: 1, ...opts })).reduce(
      (n: number, b) => n + (b as { size: number }).size,
      0,
    );
    assert.equal(rows, N_CELLS);
    assert.equal(slots.calls.scatter, before.scatter, JSON.stringify(opts));
    assert.ok(slots.calls.decode > before.decode, JSON.stringify(opts));
  }
});

test("a second epoch on the same loader (on the dataset's pool) reuses the first one's batch buffers", async () => {
  const { store } = await loaderDataset();
  // The dataset's pool (`openDataset(..., { threads })`): the loader starts none of its own.
  const ds = await openDataset(store, { threads: 2 });
  try {
    const loader = await createLoader(ds, { batchSize: 5, seed: 4, prefetch: 1 });
    const buffers = (epoch: number) => async () => {
      loader.setEpoch(epoch);
      const seen = new Set<ArrayBufferLike>();
      for await (const b of loader) {
        if (b.format === "csr") seen.add(b.indices.buffer);
        b.release();
      }
      return seen;
    };
    const first = await buffers(0)();
    const peak = loader.memory.peakBatchBytes;
    const second = await buffers(1)();
    assert.ok(first.size > 0);
    for (const buf of second) assert.ok(first.has(buf), "every buffer of epoch 1 was one of epoch 0's");
    assert.equal(loader.memory.peakBatchBytes, peak, "no batch buffer allocated in epoch 1");
    assert.ok(loader.memory.peakTileBytes > 0);
    assert.equal(loader.memory.tileBytes, 0, "every tile given back");
    await loader.close();
  } finally {
    await ds.close();
  }
});
