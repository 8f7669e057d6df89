/**
 * The `columns` decode option (renumbering genes while decoding): every decoder gives the same
 * tile as renumbering the source's indices by hand, a pool sends each map to each worker once,
 * and maps that are not permutations are refused.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTilePool, type DecodedTile, decodeTile, decodeTileSync, encodeTile } from "@deltacells/core";
import { loadNativeKernel, useNativeKernel } from "../src/codec/native.js";
import { openDataset } from "../src/dataset/open.js";
import { prng, randomCsr } from "./codec-helpers.js";
import { loaderDataset } from "./loader-fixtures.js";
import { watchWorkerPosts } from "./worker-posts.js";

const N_GENES = 3000;

function permutation(seed: number, n = N_GENES): Int32Array {
  const rnd = prng(seed);
  const p = Int32Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}

/** Asserts that `d` holds cells `[c0, c1)` of `rows` with every index j replaced by `map[j]`. */
function assertRenumbered(
  d: DecodedTile,
  rows: { indptr: number[]; indices: Int32Array; data: Int32Array },
  map: Int32Array,
  c0 = 0,
  c1 = rows.indptr.length - 1,
): void {
  const a = rows.indptr[c0]!;
  const b = rows.indptr[c1]!;
  assert.equal(d.nCells, c1 - c0);
  assert.deepEqual(
    [...d.indptr],
    rows.indptr.slice(c0, c1 + 1).map((x) => x - a),
  );
  assert.deepEqual(
    [...d.indices],
    [...rows.indices.subarray(a, b)].map((j) => map[j]!),
  );
  assert.deepEqual([...d.data], [...rows.data.subarray(a, b)]);
}

test("decodeTileSync, the TypeScript loops and a pool renumber columns through `columns`, whole tiles and cell ranges", async () => {
  await loadNativeKernel();
  const pool = createTilePool({ threads: 2 });
  try {
    for (const [rows, map] of [
      [randomCsr(prng(1), { nCells: 120, nGenes: N_GENES, perCell: 60, bigValueRate: 0.01 }), permutation(2)],
      // Counts and gaps above 65535 (exception streams: chunks the native kernel leaves to the TypeScript code).
      [
        randomCsr(prng(7), {
          nCells: 120,
          nGenes: 200_000,
          perCell: 30,
          bigValueRate: 0.02,
          bigGapRate: 0.02,
        }),
        permutation(8, 200_000),
      ],
    ] as const)
      await checkDecoders(rows, map, pool);
  } finally {
    await pool.close();
  }
});

async function checkDecoders(
  rows: { nGenes: number; indptr: number[]; indices: Int32Array; data: Int32Array },
  map: Int32Array,
  pool: ReturnType<typeof createTilePool>,
): Promise<void> {
  const tile = await encodeTile(rows, { nChunks: 5, level: 3 });
  {
    for (const native of [true, false]) {
      useNativeKernel(native);
      try {
        assertRenumbered(decodeTileSync(tile, { columns: map }), rows, map);
        assertRenumbered(await decodeTile(tile, { columns: map, cells: [13, 97] }), rows, map, 13, 97);
      } finally {
        useNativeKernel(true);
      }
    }
    for (const cells of [undefined, [0, 120], [41, 42], [5, 88]] as const) {
      const d = await pool.decode(tile, { columns: map, cells: cells && [cells[0], cells[1]] });
      assertRenumbered(d, rows, map, cells?.[0], cells?.[1]);
      d.release();
    }
    // Without the option the same pool decodes as before.
    const plain = await pool.decode(tile);
    assert.deepEqual(Array.from(plain.indices), Array.from(rows.indices));
    plain.release();
  }
}

test("a pool sends each column map to each worker once, and keeps decoding right after the workers evict old maps", async () => {
  const rows = randomCsr(prng(3), { nCells: 60, nGenes: N_GENES, perCell: 40 });
  const tile = await encodeTile(rows, { nChunks: 4, level: 3 });
  const maps = Array.from({ length: 7 }, (_, i) => permutation(10 + i));
  const sent: number[] = [];
  const unwatch = watchWorkerPosts((m) => {
    const columns = (m as { columns?: { id: number; map?: Int32Array } } | null)?.columns;
    if (columns?.map !== undefined) sent.push(columns.id);
  });
  const pool = createTilePool({ threads: 2 });
  try {
    // Many tiles with one map: the map travels at most once per worker.
    for (let r = 0; r < 12; r++) {
      const d = await pool.decode(tile, { columns: maps[0] });
      assertRenumbered(d, rows, maps[0]!);
      d.release();
    }
    assert.ok(sent.length >= 1 && sent.length <= 2, `the map was sent ${sent.length} times`);
    // More maps than a worker keeps, in turns, several tiles in flight: each decode is right,
    // so the pool and its workers agree on which maps a worker still holds.
    for (let round = 0; round < 3; round++)
      await Promise.all(
        maps.map(async (map) => {
          const d = await pool.decode(tile, { columns: map });
          assertRenumbered(d, rows, map);
          d.release();
        }),
      );
    assert.ok(sent.length < 2 + 3 * 7 * 2, `maps were sent ${sent.length} times`);
  } finally {
    unwatch();
    await pool.close();
  }
});

test("a columns map that is not a permutation of the tile's genes is refused by every decoder", async () => {
  const rows = randomCsr(prng(4), { nCells: 10, nGenes: 50 });
  const tile = await encodeTile(rows, { level: 3 });
  const good = permutation(5, 50);
  const repeated = good.slice();
  repeated[7] = repeated[8]!;
  const outside = good.slice();
  outside[3] = 50;
  const pool = createTilePool({ threads: 1 });
  try {
    for (const [what, columns] of [
      ["too short", good.subarray(0, 49)],
      ["a column twice", repeated],
      ["a column outside the genes", outside],
      ["negative", Int32Array.from(good, (x) => (x === 0 ? -1 : x))],
    ] as const) {
      const refused = (e: { _tag?: string; field?: string }) =>
        e._tag === "InvalidInput" && e.field === "columns";
      assert.throws(() => decodeTileSync(tile, { columns }), refused, what);
      await assert.rejects(pool.decode(tile, { columns }), refused, what);
    }
  } finally {
    await pool.close();
  }
});

test("Dataset.tile's columns: the reader's own decoder, a pool, and a caller's decoder that does not renumber agree", async () => {
  const { store } = await loaderDataset();
  const own = await openDataset(store);
  const pooled = await openDataset(store, { threads: 2 });
  const theirs = await openDataset(store, { decoder: { decode: (b, o) => decodeTile(b, o) } });
  try {
    const map = permutation(6, own.nGenes);
    for (let t = 0; t < own.nTiles; t++) {
      const plain = await own.tile(t);
      const expected = Array.from(plain.indices, (j) => map[j]!);
      const data = [...plain.data];
      plain.release();
      for (const ds of [own, pooled, theirs]) {
        const tile = await ds.tile(t, { columns: map });
        assert.deepEqual([...tile.indices], expected);
        assert.deepEqual([...tile.data], data);
        tile.release();
      }
    }
    await assert.rejects(
      theirs.tile(0, { columns: map.subarray(1) }),
      (e: { _tag?: string; field?: string }) => e._tag === "InvalidInput" && e.field === "columns",
    );
  } finally {
    await pooled.close();
  }
});

test("every instruction set of the native kernel renumbers what it decodes as the TypeScript loops do: tails of every length, wide gaps, a cell of more than 65,537 genes", async () => {
  const kernel = await loadNativeKernel();
  if (!kernel) return;
  const nGenes = 100_000;
  const rnd = prng(31);
  const indptr = [0];
  const indices: number[] = [];
  // Cells of 0..48 genes (every tail after blocks of 16), gaps of 1..3000 (both gap bytes in
  // use), then one cell of 70,000 genes (the kernel's 64-bit loop for long cells).
  for (let c = 0; c < 200; c++) {
    const len = c % 49;
    let g = Math.floor(rnd() * 5);
    for (let i = 0; i < len && g < nGenes; i++) {
      indices.push(g);
      g += 1 + (rnd() < 0.3 ? Math.floor(rnd() * 3000) : Math.floor(rnd() * 3));
    }
    indptr.push(indices.length);
  }
  for (let g = 3; g < 70_003; g++) indices.push(g);
  indptr.push(indices.length);
  const rows = {
    nGenes,
    indptr,
    indices: Int32Array.from(indices),
    data: Int32Array.from(indices, (_, i) => 1 + (i % 37)),
  };
  const map = permutation(32, nGenes);
  const tile = await encodeTile(rows, { nChunks: 3, level: 3 });
  try {
    for (let level = kernel.isa(99); level >= 0; level--) {
      kernel.isa(level);
      assertRenumbered(decodeTileSync(tile, { columns: map }), rows, map);
      assertRenumbered(decodeTileSync(tile, { columns: map, cells: [37, 150] }), rows, map, 37, 150);
    }
  } finally {
    kernel.isa(99);
  }
  useNativeKernel(false);
  try {
    assertRenumbered(decodeTileSync(tile, { columns: map }), rows, map);
  } finally {
    useNativeKernel(true);
  }
});
