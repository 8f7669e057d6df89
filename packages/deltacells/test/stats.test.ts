/**
 * The dataset's statistics (`writeStats`, `openStats`): every number against the source matrix
 * computed here cell by cell (not from the tiles the writer read), the checks the reader makes
 * (another version of the dataset, a damaged or missing object, an unknown version), and the
 * order of writes (a second computation replaces the first, the manifest is named last).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { MANIFEST_KEY } from "../src/dataset/manifest.js";
import {
  createTilePool,
  type DatasetSource,
  encodeTile,
  isDeltacellsError,
  openDataset,
  openStats,
  TARGET_SUM,
  type TileEncoder,
  writeDataset,
  writeStats,
} from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { STATS_INDEX } from "../src/stats/format.js";
import { type DenseMatrix, memorySource, randomMatrix } from "./dataset-fixtures.js";

const compress = zstdCompressor(3);
const encoder: TileEncoder = { encode: (rows, opts) => encodeTile(rows, { ...opts, level: 3 }) };

/** Cell `c`'s category in the two columns the source has (-1: missing). */
const typeOf = (c: number) => (c % 11 === 5 ? -1 : c % 3);
const donorOf = (c: number) => (c * 7) % 4;

function source(m: DenseMatrix): DatasetSource {
  return {
    ...memorySource(m),
    obs: async () => ({
      indexName: null,
      index: Array.from({ length: m.nCells }, (_, i) => `c${i}`),
      columns: [
        {
          name: "cell type",
          kind: "category",
          codes: Int32Array.from({ length: m.nCells }, (_, c) => typeOf(c)),
          categories: ["B", "T", "NK"],
          ordered: false,
        },
        { name: "score", kind: "numeric", values: Float32Array.from({ length: m.nCells }, (_, c) => c / 3) },
        {
          name: "donor",
          kind: "category",
          codes: Int32Array.from({ length: m.nCells }, (_, c) => donorOf(c)),
          categories: ["d0", "d1", "d2", "d3"],
          ordered: false,
        },
      ],
    }),
  };
}

async function written(nCells = 61, nGenes = 23, tileSize = 8) {
  const m = randomMatrix(nCells, nGenes, 11);
  const store = new MemoryStore();
  await writeDataset(source(m), store, { encoder, compress, tileSize, nChunks: 2, level: 3 });
  return { m, store, ds: await openDataset(store) };
}

/** The expected sums over the cells `keep` selects, straight from the dense source matrix. */
function expected(m: DenseMatrix, keep: (c: number) => boolean) {
  const g = m.nGenes;
  const sum = new Float64Array(g);
  const sumSq = new Float64Array(g);
  const nnz = new Float64Array(g);
  const counts = new Float64Array(g);
  let n = 0;
  for (let c = 0; c < m.nCells; c++) {
    if (!keep(c)) continue;
    n++;
    const row = m.values.subarray(c * g, (c + 1) * g);
    const total = row.reduce((a, b) => a + b, 0);
    for (let j = 0; j < g; j++) {
      if (row[j] === 0) continue;
      const x = Math.log1p((row[j]! / total) * TARGET_SUM);
      sum[j]! += x;
      sumSq[j]! += x * x;
      nnz[j]!++;
      counts[j]! += row[j]!;
    }
  }
  return { n, sum, sumSq, nnz, counts };
}

function assertClose(actual: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.equal(actual.length, want.length, what);
  for (let i = 0; i < want.length; i++) {
    const tol = 1e-12 * Math.max(1, Math.abs(want[i]!));
    assert.ok(Math.abs(actual[i]! - want[i]!) <= tol, `${what}[${i}]: ${actual[i]} vs ${want[i]}`);
  }
}

test("the statistics of a dataset equal the source's sums per gene, per cell and per category, in the source's gene order", async () => {
  const { m, store, ds } = await written();
  const pool = createTilePool({ threads: 2 });
  try {
    const { index } = await writeStats(ds.withDecoder(pool), store, { compress });
    assert.equal(index.gene_order, "source");
    assert.deepEqual(
      index.columns.map((c) => [c.name, c.categories, c.missing]),
      [
        ["cell type", 3, Array.from({ length: m.nCells }, (_, c) => typeOf(c)).filter((k) => k < 0).length],
        ["donor", 4, 0],
      ],
    );
  } finally {
    await pool.close();
  }
  const again = await openDataset(store);
  assert.equal(again.manifest.metadata.stats, "stats");
  const stats = (await openStats(again))!;
  const genes = await stats.genes();
  const all = expected(m, () => true);
  assert.equal(genes.n, m.nCells);
  assertClose(genes.sum, all.sum, "sum");
  assertClose(genes.sumSq, all.sumSq, "sumSq");
  assert.deepEqual(Array.from(genes.nnz), Array.from(all.nnz));
  assert.deepEqual(Array.from(genes.counts), Array.from(all.counts));
  const totals = await stats.cellTotals();
  assert.equal(stats.index.cells.dtype, "float32");
  assert.deepEqual(
    Array.from(totals),
    Array.from({ length: m.nCells }, (_, c) =>
      m.values.subarray(c * m.nGenes, (c + 1) * m.nGenes).reduce((a, b) => a + b, 0),
    ),
  );
  for (const [name, of] of [
    ["cell type", typeOf],
    ["donor", donorOf],
  ] as const) {
    const col = (await stats.column(name))!;
    assert.deepEqual(col.categories, name === "donor" ? ["d0", "d1", "d2", "d3"] : ["B", "T", "NK"]);
    for (let k = 0; k < col.categories.length; k++) {
      const want = expected(m, (c) => of(c) === k);
      const got = col.moments(k);
      assert.equal(got.n, want.n, `${name} ${k} cells`);
      assertClose(got.sum, want.sum, `${name} ${k} sum`);
      assertClose(got.sumSq, want.sumSq, `${name} ${k} sumSq`);
      assert.deepEqual(Array.from(got.nnz), Array.from(want.nnz), `${name} ${k} nnz`);
    }
  }
  assert.equal(await stats.column("score"), undefined, "a numeric column has none");
});

test("a dataset without statistics has none; a second computation replaces the first and deletes its objects", async () => {
  const { store, ds } = await written(30, 9, 8);
  assert.equal(await openStats(ds), undefined);
  await writeStats(ds, store, { compress });
  const first = (await store.list("stats/")).sort();
  // The same dataset: the same objects (named by their CRC-32).
  await writeStats(await openDataset(store), store, { compress });
  assert.deepEqual((await store.list("stats/")).sort(), first);
  // A stray object of an earlier computation is deleted, the index kept.
  await store.set("stats/genes-00000000.bin", new Uint8Array(4));
  await writeStats(await openDataset(store), store, { compress });
  assert.deepEqual((await store.list("stats/")).sort(), first);
  assert.ok(first.includes(`stats/${STATS_INDEX}`));
});

test("statistics of another version of the dataset (cells appended, converted again) are refused as StaleStats", async () => {
  const { store, ds } = await written(30, 9, 8);
  await writeStats(ds, store, { compress });
  const named = (await store.get(MANIFEST_KEY))!;
  const stats = new Map<string, Uint8Array>();
  for (const key of await store.list("stats/")) stats.set(key, (await store.get(key))!);
  // The same store converted again from more cells, and the old statistics and manifest naming
  // them put back: what a writer that kept `metadata` would leave.
  const bigger = randomMatrix(38, 9, 11);
  for (const key of await store.list("")) await store.delete(key);
  await writeDataset(source(bigger), store, { encoder, compress, tileSize: 8, level: 3 });
  for (const [key, bytes] of stats) await store.set(key, bytes);
  const manifest = JSON.parse(new TextDecoder().decode((await store.get(MANIFEST_KEY))!));
  manifest.metadata = JSON.parse(new TextDecoder().decode(named)).metadata;
  await store.set(MANIFEST_KEY, new TextEncoder().encode(JSON.stringify(manifest)));
  await assert.rejects(openStats(await openDataset(store)), (e: unknown) => {
    assert.ok(isDeltacellsError(e, "StaleStats"), String(e));
    assert.equal((e as { field: string }).field, "dataset.n_cells");
    assert.match((e as Error).message, /deltacells stats DATASET/);
    return true;
  });
});

test("a damaged, missing or unknown-version statistics object is refused, named", async () => {
  const { store, ds } = await written(30, 9, 8);
  const { index } = await writeStats(ds, store, { compress });
  const key = `stats/${index.genes.key}`;
  const good = (await store.get(key))!;
  const flipped = good.slice();
  flipped[flipped.length >> 1]! ^= 0x10;
  await store.set(key, flipped);
  const stats = (await openStats(await openDataset(store)))!;
  await assert.rejects(stats.genes(), (e: unknown) => {
    assert.ok(isDeltacellsError(e, "FormatError"), String(e));
    assert.match(
      (e as Error).message,
      new RegExp(`${index.genes.key} has CRC-32 [0-9a-f]{8}, stats.json says`),
    );
    return true;
  });
  await store.delete(key);
  await assert.rejects((await openStats(await openDataset(store)))!.genes(), (e: unknown) =>
    isDeltacellsError(e, "NotFound"),
  );
  await store.set(key, good);
  // A reader of version 1 refuses version 2.
  const indexKey = `stats/${STATS_INDEX}`;
  const json = JSON.parse(new TextDecoder().decode((await store.get(indexKey))!));
  await store.set(indexKey, new TextEncoder().encode(JSON.stringify({ ...json, version: 2 })));
  await assert.rejects(openStats(await openDataset(store)), (e: unknown) =>
    isDeltacellsError(e, "UnsupportedVersion"),
  );
  // A declared size that disagrees with the shapes.
  await store.set(
    indexKey,
    new TextEncoder().encode(JSON.stringify({ ...json, genes: { ...json.genes, size: 8 } })),
  );
  await assert.rejects(openStats(await openDataset(store)), (e: unknown) =>
    isDeltacellsError(e, "FormatError"),
  );
  await store.delete(indexKey);
  await assert.rejects(openStats(await openDataset(store)), (e: unknown) => isDeltacellsError(e, "NotFound"));
});

test("the manifest is named last, and not at all when it changed while the statistics were computed", async () => {
  const { store, ds } = await written(30, 9, 8);
  const writes: string[] = [];
  const watched = Object.assign(Object.create(store), {
    url: store.url,
    async set(key: string, value: Uint8Array) {
      writes.push(key);
      // Another writer replaces the dataset while the statistics are written.
      if (key === `stats/${STATS_INDEX}`) {
        const other = JSON.parse(new TextDecoder().decode((await store.get(MANIFEST_KEY))!));
        other.tile_bytes = other.tile_bytes.map((b: number) => b + 1);
        await store.set(MANIFEST_KEY, new TextEncoder().encode(JSON.stringify(other)));
      }
      return store.set(key, value);
    },
  });
  await assert.rejects(writeStats(ds, watched, { compress }), (e: unknown) =>
    isDeltacellsError(e, "DatasetChanged"),
  );
  assert.equal(writes.at(-1), `stats/${STATS_INDEX}`, "the index is the last object written");
  assert.ok(
    writes.slice(0, -1).every((k) => /^stats\/[a-z0-9]+-[0-9a-f]{8}\.bin$/.test(k)),
    writes.join(" "),
  );
  const manifest = JSON.parse(new TextDecoder().decode((await store.get(MANIFEST_KEY))!));
  assert.equal(manifest.metadata.stats, undefined);
});
