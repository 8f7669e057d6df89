/**
 * Fuzzing the decoder with thousands of seeded mutations of valid tiles. With the CRC left as is,
 * every mutant either decodes to exactly the original (up to an unchecked n_genes in the header,
 * which the CRC does not cover) or fails with a tagged `CorruptTile`. With
 * the CRC recomputed (a hostile or buggy writer), the deeper checks are reached: every mutant
 * either fails with a tagged error or decodes to a structurally valid CSR. Never a crash, a
 * hang, or a huge allocation.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type DecodedTile, DeltacellsError, decodeTileSync, encodeTile, loadZstd } from "@deltacells/core";
import { crc32 } from "../src/codec/crc32.js";
import { useNativeKernel } from "../src/codec/native.js";
import { assertDecodedEquals, prng, randomCsr } from "./codec-helpers.js";

type Mutation = (b: Uint8Array, rnd: () => number) => Uint8Array;

const flip: Mutation = (b, rnd) => {
  const out = b.slice();
  const n = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < n; i++) out[Math.floor(rnd() * out.length)]! ^= 1 << Math.floor(rnd() * 8);
  return out;
};
const truncate: Mutation = (b, rnd) => b.slice(0, Math.floor(rnd() * b.length));
const extend: Mutation = (b, rnd) => {
  const out = new Uint8Array(b.length + 1 + Math.floor(rnd() * 16));
  out.set(b);
  return out;
};
/** Overwrites a header or chunk-table word with a random or boundary value. */
const field: Mutation = (b, rnd) => {
  const out = b.slice();
  const v = new DataView(out.buffer);
  const tableEnd = Math.min(out.length - 4, 64 + 96 * v.getUint32(36, true));
  const at = 4 * Math.floor((rnd() * tableEnd) / 4);
  const choices = [
    0,
    1,
    7,
    8,
    0xffffffff,
    0x7fffffff,
    out.length,
    Math.floor(rnd() * 2 ** 32),
    v.getUint32(at, true) + 8,
  ];
  v.setUint32(at, choices[Math.floor(rnd() * choices.length)]! >>> 0, true);
  return out;
};
const mutations = [flip, flip, truncate, extend, field, field];

function fixCrc(b: Uint8Array): Uint8Array {
  if (b.length >= 64) new DataView(b.buffer, b.byteOffset).setUint32(56, crc32(b.subarray(64)), true);
  return b;
}

function assertValidCsr(d: DecodedTile): void {
  assert.equal(d.indptr[0], 0);
  assert.equal(d.indptr[d.nCells], d.nnz);
  for (let c = 0; c < d.nCells; c++) {
    for (let j = d.indptr[c]!; j < d.indptr[c + 1]!; j++) {
      assert.ok(d.indices[j]! >= 0 && d.indices[j]! < d.nGenes);
      if (j > d.indptr[c]!) assert.ok(d.indices[j]! > d.indices[j - 1]!);
      assert.ok(d.data[j]! >= 1);
    }
  }
}

test("thousands of mutated, truncated and extended tiles decode exactly or fail with a tagged error, quickly", async () => {
  await loadZstd();
  const rnd = prng(2024);
  const originals = [
    randomCsr(rnd, { nCells: 60, nGenes: 200_000, bigValueRate: 0.02, bigGapRate: 0.03, emptyRate: 0.2 }),
    randomCsr(rnd, { nCells: 25, nGenes: 800, perCell: 40 }),
    randomCsr(rnd, { nCells: 3, nGenes: 70_000, bigGapRate: 0.05 }),
  ];
  const tiles = await Promise.all(
    originals.map((r, i) => encodeTile(r, { nChunks: [5, 3, 2][i], level: 3 })),
  );
  // CPU time of this process, not wall time: what the decoder does, whatever else the machine runs
  // (a pathological input, a loop or a huge allocation, still shows).
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const started = cpuMs();
  const seen = { exact: 0, refused: 0, validOther: 0 };
  for (let i = 0; i < 4000; i++) {
    const which = i % tiles.length;
    const mutate = mutations[Math.floor(rnd() * mutations.length)]!;
    const withCrc = i % 2 === 0;
    let bytes = mutate(tiles[which]!, rnd);
    if (withCrc) bytes = fixCrc(bytes);
    const t0 = cpuMs();
    let decoded: DecodedTile | undefined;
    // Half the cases through the TypeScript loops (the browser path), half through the native ones.
    useNativeKernel(i % 4 < 2);
    try {
      decoded = decodeTileSync(bytes);
    } catch (e) {
      assert.ok(e instanceof DeltacellsError, `case ${i}: not a tagged error: ${e}`);
      assert.ok(["CorruptTile", "UnsupportedVersion"].includes(e._tag), `case ${i}: ${e._tag} ${e.message}`);
      seen.refused++;
    }
    const spent = cpuMs() - t0;
    assert.ok(spent < 500, `case ${i} took ${spent} ms of CPU time`);
    if (decoded === undefined) continue;
    if (!withCrc) {
      // The CRC covers bytes [64, total_size): of the header, only n_genes can change undetected
      // (any value above the largest index is plausible; the dataset manifest pins it).
      assertValidCsr(decoded);
      assertDecodedEquals(decoded, { ...originals[which]!, nGenes: decoded.nGenes });
      seen.exact++;
    } else {
      assertValidCsr(decoded);
      seen.validOther++;
    }
  }
  useNativeKernel(true);
  const elapsed = cpuMs() - started;
  assert.ok(elapsed < 15_000, `4000 mutants took ${elapsed} ms of CPU time`);
  assert.ok(seen.refused > 2000, JSON.stringify(seen));
});
