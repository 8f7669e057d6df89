/**
 * The native kernel's one-call chunk decode (`chunks`, zstd included): it must write exactly what
 * the per-stream path writes, hand back the chunks it does not take (exceptions, any failed
 * check), and leave every refusal to the path that names it, so errors are the same with and
 * without it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeTileSync, encodeTile, loadZstd } from "@deltacells/core";
import { crc32 } from "../src/codec/crc32.js";
import { inspectTile } from "../src/codec/layout.js";
import { loadNativeKernel, type NativeKernel, useNativeKernel } from "../src/codec/native.js";
import { assertDecodedEquals, prng, randomCsr } from "./codec-helpers.js";

const level = 3;

async function kernel(): Promise<NativeKernel | undefined> {
  await loadZstd();
  if (process.env.DELTACELLS_NATIVE === "0") return undefined;
  const k = await loadNativeKernel();
  assert.ok(k?.chunks, "the native kernel has no `chunks`: run `npm rebuild -w @deltacells/core`");
  return k;
}

/** The plan `chunks` reads for a whole tile (as decodeChunksInto builds it). */
function planOf(tile: Uint8Array, exceptionsToCaller = true): Float64Array {
  const layout = inspectTile(tile);
  const plan = new Float64Array(9 * layout.chunks.length);
  layout.chunks.forEach((ch, k) => {
    const n = ch.nnzHi - ch.nnzLo;
    plan.set(
      [
        ch.gapsOff,
        ch.gapsLen,
        ch.valsOff,
        ch.valsLen,
        ch.nnzLo,
        exceptionsToCaller && (ch.vexcLen > 0 || ch.gexcLen > 0) ? -1 : n,
        ch.cellLo,
        ch.cellHi,
        ch.nnzLo,
      ],
      9 * k,
    );
  });
  return plan;
}

/** `tile` with `at` flipped and the CRC recomputed, so that the damage reaches the streams. */
function damaged(tile: Uint8Array, at: number): Uint8Array {
  const bad = tile.slice();
  bad[at]! ^= 0x5a;
  new DataView(bad.buffer).setUint32(56, crc32(bad.subarray(64)), true);
  return bad;
}

test("one native call decodes a tile's chunks, zstd included, into exactly the CSR the per-stream path writes", async () => {
  const k = await kernel();
  if (!k) return;
  const rows = randomCsr(prng(31), { nCells: 300, nGenes: 20_000, perCell: 80, emptyRate: 0.2 });
  const tile = await encodeTile(rows, { nChunks: 8, level });
  const layout = inspectTile(tile);
  const nnz = layout.header.nnz;
  for (const Out of [Int32Array, Float32Array]) {
    const indices = new Int32Array(nnz).fill(-7);
    const data = new Out(nnz).fill(-7);
    assert.equal(
      k.chunks!(tile, planOf(tile), 0, layout.chunks.length, layout.indptr, indices, data, 20_000),
      -1,
    );
    assertDecodedEquals(
      { nCells: 300, nGenes: 20_000, nnz, indptr: Float64Array.from(layout.indptr), indices, data },
      rows,
    );
  }
});

test("decodeTileSync gives the same answers with the one-call path as without the native kernel", async () => {
  if (!(await kernel())) return;
  const rnd = prng(32);
  try {
    for (let i = 0; i < 10; i++) {
      const rows = randomCsr(rnd, {
        nCells: [0, 1, 7, 60, 250][i % 5]!,
        nGenes: i % 2 ? 200_000 : 3000,
        perCell: 1 + i * 15,
        emptyRate: i === 3 ? 0.9 : 0.1,
        bigValueRate: i % 3 === 0 ? 0.01 : 0,
        bigGapRate: i % 2 ? 0.01 : 0,
      });
      const nCells = rows.indptr.length - 1;
      const tile = await encodeTile(rows, { nChunks: 1 + (i % 8), level });
      const ranges: ([number, number] | undefined)[] = [undefined, [0, 0], [0, nCells]];
      if (nCells > 4) ranges.push([1, nCells - 2], [Math.floor(nCells / 2), Math.floor(nCells / 2) + 1]);
      for (const values of ["int32", "float32"] as const) {
        for (const cells of ranges) {
          const opts = cells ? { values, cells } : { values };
          useNativeKernel(true);
          const fused = decodeTileSync(tile, opts);
          useNativeKernel(false);
          assert.deepEqual(fused, decodeTileSync(tile, opts), `case ${i}, ${values}, ${cells}`);
        }
      }
    }
  } finally {
    useNativeKernel(true);
  }
});

test("the one-call path hands back the first chunk with exceptions and the first chunk whose streams fail a check", async () => {
  const k = await kernel();
  if (!k) return;
  const rows = randomCsr(prng(33), { nCells: 200, nGenes: 5000, perCell: 40 });
  // A count above 65535 in the last cell only: the last chunk has a value exception.
  rows.data[rows.data.length - 1] = 100_000;
  const tile = await encodeTile(rows, { nChunks: 4, level });
  const layout = inspectTile(tile);
  const out = () => [new Int32Array(layout.header.nnz), new Int32Array(layout.header.nnz)] as const;
  assert.ok(layout.chunks[3]!.vexcLen > 0 && layout.chunks.slice(0, 3).every((c) => c.vexcLen === 0));
  assert.equal(k.chunks!(tile, planOf(tile), 0, 4, layout.indptr, ...out(), 5000), 3);
  // Chunk 1's gap frame damaged (CRC fixed up): the kernel stops there, having decoded chunk 0.
  const bad = damaged(tile, layout.chunks[1]!.gapsOff + 10);
  assert.equal(k.chunks!(bad, planOf(bad), 0, 4, inspectTile(bad).indptr, ...out(), 5000), 1);
  // A plan pointing past the tile is refused the same way, never read.
  const plan = planOf(tile);
  plan[9 * 2 + 1] = tile.length;
  assert.equal(k.chunks!(tile, plan, 0, 4, layout.indptr, ...out(), 5000), 2);
});

test("a tile whose streams are damaged behind a valid CRC fails with the same tagged error with and without the native kernel", async () => {
  if (!(await kernel())) return;
  const rows = randomCsr(prng(34), { nCells: 120, nGenes: 70_000, perCell: 60, bigGapRate: 0.005 });
  const tile = await encodeTile(rows, { nChunks: 4, level });
  const layout = inspectTile(tile);
  const targets = layout.chunks.flatMap((c) => [c.gapsOff + 6, c.gapsOff + c.gapsLen - 2, c.valsOff + 9]);
  let refused = 0;
  try {
    for (const at of targets) {
      const bad = damaged(tile, at);
      const errorOf = (native: boolean) => {
        useNativeKernel(native);
        try {
          decodeTileSync(bad);
          return undefined;
        } catch (e) {
          return { tag: (e as { _tag?: string })._tag, message: (e as Error).message };
        }
      };
      const withKernel = errorOf(true);
      assert.deepEqual(withKernel, errorOf(false), `byte ${at}`);
      if (withKernel) {
        assert.equal(withKernel.tag, "CorruptTile");
        refused++;
      }
    }
    assert.ok(
      refused >= targets.length / 2,
      `only ${refused} of ${targets.length} damaged tiles were refused`,
    );
  } finally {
    useNativeKernel(true);
  }
});

test("the one-call path survives thousands of nonsensical plans without writing outside its arrays", async () => {
  const k = await kernel();
  if (!k) return;
  const rows = randomCsr(prng(35), { nCells: 90, nGenes: 3000, perCell: 30 });
  const tile = await encodeTile(rows, { nChunks: 4, level });
  const layout = inspectTile(tile);
  const nnz = layout.header.nnz;
  const rnd = prng(36);
  const wild = [
    Number.NaN,
    -1,
    -2,
    -0.5,
    0,
    1,
    7,
    2 ** 31,
    2 ** 53,
    Number.POSITIVE_INFINITY,
    tile.length,
    nnz,
  ];
  // Output with guard zones: the kernel is given the middle, and the guards must stay untouched.
  const guard = 64;
  const indicesAll = new Int32Array(nnz + 2 * guard).fill(-9);
  const dataAll = new Int32Array(nnz + 2 * guard).fill(-9);
  const indices = indicesAll.subarray(guard, guard + nnz);
  const data = dataAll.subarray(guard, guard + nnz);
  for (let trial = 0; trial < 3000; trial++) {
    const plan = planOf(tile, false);
    for (let m = 1 + Math.floor(rnd() * 3); m > 0; m--) {
      const at = Math.floor(rnd() * plan.length);
      plan[at] =
        rnd() < 0.5 ? wild[Math.floor(rnd() * wild.length)]! : plan[at]! + Math.floor(rnd() * 200) - 100;
    }
    const k0 = Math.floor(rnd() * 5);
    const k1 = Math.min(4, k0 + Math.floor(rnd() * 5));
    let got: number;
    try {
      got = k.chunks!(tile, plan, k0, k1, layout.indptr, indices, data, 3000);
    } catch (e) {
      // Only arguments the kernel cannot even read are refused by throwing (a k1 past the plan).
      assert.match(String(e), /bad arguments/);
      continue;
    }
    assert.ok(got === -1 || (got >= k0 && got < k1), `trial ${trial}: returned ${got}`);
  }
  for (const guarded of [indicesAll, dataAll]) {
    assert.ok(
      guarded.subarray(0, guard).every((v) => v === -9),
      "wrote before its arrays",
    );
    assert.ok(
      guarded.subarray(guard + nnz).every((v) => v === -9),
      "wrote after its arrays",
    );
  }
});
