/** One test per encoder refusal and per decoder check: each fails with a tagged error naming the field. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DeltacellsError, decodeTile, encodeTile, loadZstd, type TileRows } from "@deltacells/core";
import { crc32 } from "../src/codec/crc32.js";
import { assembleTile, compressChunk, type PreparedTile, prepareTile } from "../src/codec/encode.js";
import { assertLittleEndianHost } from "../src/codec/format.js";
import { prng, randomCsr } from "./codec-helpers.js";

function isTagged(tag: string, field: RegExp | string, message?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof DeltacellsError, `expected a DeltacellsError, got ${e}`);
    assert.equal(e._tag, tag, e.message);
    if (typeof field === "string") assert.equal(e.field, field, e.message);
    else assert.match(e.field ?? "", field, e.message);
    if (message) assert.match(e.message, message);
    assert.ok("expected" in e && "found" in e);
    return true;
  };
}

const base: TileRows = {
  nGenes: 100,
  indptr: [0, 3, 3, 5],
  indices: Int32Array.from([1, 5, 99, 0, 2]),
  data: Int32Array.from([1, 2, 3, 4, 5]),
};

function rows(patch: Partial<TileRows>): TileRows {
  return { ...base, ...patch };
}

// ---- encoder refusals ----

const refusals: [string, TileRows, string | RegExp, RegExp, object?][] = [
  ["nGenes of 0", rows({ nGenes: 0 }), "nGenes", /nGenes/],
  ["nGenes above 2^31", rows({ nGenes: 2 ** 31 + 1 }), "nGenes", /nGenes/],
  ["an empty indptr", rows({ indptr: [] }), "indptr", /empty/],
  ["a decreasing indptr", rows({ indptr: [0, 3, 2, 5] }), "indptr[2]", /non-decreasing/],
  ["a non-integer indptr", rows({ indptr: [0, 1.5, 3, 5] }), "indptr[1]", /integers/],
  ["indices shorter than indptr says", rows({ indices: Int32Array.from([1, 5]) }), "indices", /spans 5/],
  ["data shorter than indptr says", rows({ data: Int32Array.from([1]) }), "data", /spans 5/],
  [
    "a gene index >= nGenes",
    rows({ indices: Int32Array.from([1, 5, 100, 0, 2]) }),
    "indices",
    /cell 0, entry 2: gene 100 is >= nGenes/,
  ],
  [
    "a negative gene index",
    rows({ indices: Int32Array.from([1, 5, 9, -1, 2]) }),
    "indices",
    /cell 2, entry 0: gene -1 is negative/,
  ],
  [
    "unsorted gene indices",
    rows({ indices: Int32Array.from([1, 5, 99, 2, 0]) }),
    "indices",
    /cell 2, entry 1: gene 0 does not increase/,
  ],
  [
    "duplicate gene indices",
    rows({ indices: Int32Array.from([1, 5, 5, 0, 2]) }),
    "indices",
    /cell 0, entry 2: gene 5 does not increase/,
  ],
  [
    "a zero count",
    rows({ data: Int32Array.from([1, 0, 3, 4, 5]) }),
    "data",
    /cell 0, gene 5: count 0 is not a raw count/,
  ],
  ["a negative count", rows({ data: Int32Array.from([1, 2, 3, 4, -5]) }), "data", /cell 2, gene 2: count -5/],
  [
    "a non-integer count",
    rows({ data: Float32Array.from([1, 2, 3.5, 4, 5]) }),
    "data",
    /cell 0, gene 99: count 3.5/,
  ],
  [
    "a count above 2^31-1",
    rows({ data: Float64Array.from([1, 2, 2 ** 31, 4, 5]) }),
    "data",
    /count 2147483648/,
  ],
  ["a NaN count", rows({ data: Float64Array.from([1, Number.NaN, 3, 4, 5]) }), "data", /count NaN/],
  ["nChunks of 0", base, "nChunks", /nChunks/, { nChunks: 0 }],
  ["a zstd level of 30", base, "level", /level/, { level: 30 }],
];

for (const [what, input, field, message, opts] of refusals) {
  test(`the encoder refuses ${what}`, async () => {
    await assert.rejects(encodeTile(input, opts), isTagged("InvalidInput", field, message));
  });
}

test("the encoder refuses more than max(1024, nnz/200) counts above 65535, saying it is not raw counts", async () => {
  const n = 1100;
  const r = {
    nGenes: n,
    indptr: [0, n],
    indices: Int32Array.from({ length: n }, (_, i) => i),
    data: new Int32Array(n).fill(70_000),
  };
  await assert.rejects(
    encodeTile(r, { level: 1 }),
    isTagged("InvalidInput", "data", /more than 1024 counts above 65535.*not raw counts/),
  );
  // 1024 of them are still fine.
  r.data.fill(1, 1024);
  await encodeTile(r, { level: 1 });
});

test("the encoder refuses more than max(1024, nnz/200) gaps above 65535", async () => {
  const n = 1100;
  const r = {
    nGenes: 80_000 * n,
    indptr: [0, n],
    indices: Int32Array.from({ length: n }, (_, i) => i * 80_000),
    data: new Int32Array(n).fill(1),
  };
  await assert.rejects(
    encodeTile(r, { level: 1 }),
    isTagged("InvalidInput", "indices", /more than 1024 gene gaps above 65535/),
  );
});

// ---- decoder checks ----

let good: Uint8Array;
async function goodTile(): Promise<Uint8Array> {
  good ??= await encodeTile(randomCsr(prng(11), { nCells: 30, nGenes: 500, emptyRate: 0 }), {
    nChunks: 3,
    level: 1,
  });
  return good;
}

/** A copy of the tile with `edit` applied and the CRC fixed, so that the intended check is reached. */
function edited(tile: Uint8Array, edit: (b: Uint8Array, v: DataView) => void, fixCrc = true): Uint8Array {
  const b = tile.slice();
  const v = new DataView(b.buffer);
  edit(b, v);
  if (fixCrc && b.length >= 64) v.setUint32(56, crc32(b.subarray(64)), true);
  return b;
}
const CH = (k: number, field: number) => 64 + 96 * k + 8 * field;

const checks: [string, (t: Uint8Array) => Uint8Array, string, string | RegExp][] = [
  ["a blob shorter than the header", (t) => t.slice(0, 40), "CorruptTile", "size"],
  ["a wrong magic", (t) => edited(t, (b) => (b[0] = 0x58)), "CorruptTile", "magic"],
  [
    "an unknown version",
    (t) => edited(t, (_, v) => v.setUint32(8, 3, true)),
    "UnsupportedVersion",
    "version",
  ],
  ["unknown flags", (t) => edited(t, (_, v) => v.setUint32(12, 1, true)), "CorruptTile", "flags"],
  [
    "a non-zero reserved field",
    (t) => edited(t, (_, v) => v.setUint32(60, 7, true)),
    "CorruptTile",
    "reserved",
  ],
  ["n_genes of 0", (t) => edited(t, (_, v) => v.setUint32(32, 0, true)), "CorruptTile", "n_genes"],
  [
    "a uint64 beyond 2^53",
    (t) => edited(t, (_, v) => v.setUint32(20, 0xffffffff, true)),
    "CorruptTile",
    "n_cells",
  ],
  [
    "chunks in a zero-cell tile",
    (t) => edited(t, (_, v) => v.setUint32(16, 0, true)),
    "CorruptTile",
    "n_chunks",
  ],
  ["a truncated object", (t) => t.slice(0, t.length - 1), "CorruptTile", "total_size"],
  [
    "a padded object",
    (t) => {
      const b = new Uint8Array(t.length + 8);
      b.set(t);
      return b;
    },
    "CorruptTile",
    "total_size",
  ],
  ["a damaged byte (CRC)", (t) => edited(t, (b) => (b[b.length - 5]! ^= 1), false), "CorruptTile", "crc32"],
  [
    "a misaligned indptr_off",
    (t) => edited(t, (_, v) => v.setUint32(40, v.getUint32(40, true) + 4, true)),
    "CorruptTile",
    "indptr_off",
  ],
  [
    "an indptr_off inside the chunk table",
    (t) => edited(t, (_, v) => v.setUint32(40, 64, true)),
    "CorruptTile",
    "indptr_off",
  ],
  [
    "an indptr past total_size",
    (t) => edited(t, (_, v) => v.setUint32(40, t.length - 8, true)),
    "CorruptTile",
    "indptr_off",
  ],
  [
    "a decreasing indptr",
    (t) => edited(t, (_, v) => v.setUint32(v.getUint32(40, true) + 8 * 5, 0, true)),
    "CorruptTile",
    "indptr[5]",
  ],
  [
    "an indptr not starting at 0",
    (t) => edited(t, (_, v) => v.setUint32(v.getUint32(40, true), 1, true)),
    "CorruptTile",
    "indptr[0]",
  ],
  [
    "an indptr not ending at nnz",
    (t) => edited(t, (_, v) => v.setUint32(24, v.getUint32(24, true) + 1, true)),
    "CorruptTile",
    "indptr[30]",
  ],
  [
    "non-contiguous chunks (cells)",
    (t) => edited(t, (_, v) => v.setUint32(CH(1, 0), v.getUint32(CH(1, 0), true) + 1, true)),
    "CorruptTile",
    "chunk[1].cell_lo",
  ],
  [
    "non-contiguous chunks (nonzeros)",
    (t) => edited(t, (_, v) => v.setUint32(CH(1, 2), 1, true)),
    "CorruptTile",
    "chunk[1].nnz_lo",
  ],
  [
    "a chunk disagreeing with indptr",
    (t) => edited(t, (_, v) => v.setUint32(CH(0, 3), v.getUint32(CH(0, 3), true) - 1, true)),
    "CorruptTile",
    "chunk[0].nnz_hi",
  ],
  [
    "a chunk past n_cells",
    (t) => edited(t, (_, v) => v.setUint32(CH(2, 1), 31, true)),
    "CorruptTile",
    "chunk[2].cell_hi",
  ],
  [
    "chunks not reaching n_cells",
    (t) => edited(t, (_, v) => v.setUint32(36, 2, true)),
    "CorruptTile",
    "chunk table",
  ],
  [
    "a misaligned frame",
    (t) => edited(t, (_, v) => v.setUint32(CH(0, 4), v.getUint32(CH(0, 4), true) + 1, true)),
    "CorruptTile",
    "chunk[0].gaps_off",
  ],
  [
    "a frame before the indptr end",
    (t) => edited(t, (_, v) => v.setUint32(CH(0, 6), 64, true)),
    "CorruptTile",
    "chunk[0].vals_off",
  ],
  [
    "a frame past the end",
    (t) => edited(t, (_, v) => v.setUint32(CH(2, 7), 1 << 20, true)),
    "CorruptTile",
    "chunk[2].vals_len",
  ],
  [
    "a missing frame",
    (t) => edited(t, (_, v) => v.setUint32(CH(1, 5), 0, true)),
    "CorruptTile",
    "chunk[1].gaps_len",
  ],
  [
    "a frame too small for its content",
    (t) => edited(t, (_, v) => v.setUint32(CH(0, 5), 1, true)),
    "CorruptTile",
    /chunk\[0\]\.gaps/,
  ],
  [
    "a frame declaring the wrong content size",
    (t) => edited(t, (b, v) => (b[v.getUint32(CH(0, 4), true) + 6]! ^= 1)),
    "CorruptTile",
    "chunk[0].gaps frame content size",
  ],
  [
    "a frame that is not zstd",
    (t) => edited(t, (b, v) => (b[v.getUint32(CH(1, 6), true)]! ^= 1)),
    "CorruptTile",
    "chunk[1].vals frame content size",
  ],
];

for (const [what, make, tag, field] of checks) {
  test(`the decoder refuses ${what}`, async () => {
    await assert.rejects(decodeTile(make(await goodTile()), { object: "tiles/t.dct" }), isTagged(tag, field));
  });
}

test("the decoder refuses a frame whose compressed body is damaged", async () => {
  const t = await goodTile();
  const v = new DataView(t.buffer, t.byteOffset);
  const off = v.getUint32(CH(1, 6), true);
  const len = v.getUint32(CH(1, 7), true);
  const bad = edited(t, (b) => b.fill(0xff, off + 8, off + len));
  await assert.rejects(decodeTile(bad), isTagged("CorruptTile", /chunk\[1\]\.vals frame/));
});

/** Builds a tile whose raw streams were altered before compression (a buggy or hostile writer). */
async function craft(r: TileRows, alter: (p: PreparedTile) => void): Promise<Uint8Array> {
  const zstd = await loadZstd();
  const p = prepareTile(r, { nChunks: 1 });
  alter(p);
  return assembleTile(
    p,
    p.chunks.map((c) => compressChunk(c, zstd, 1)),
  );
}
const words = (...w: number[]) => new Uint8Array(Uint32Array.from(w).buffer);
const big: TileRows = {
  nGenes: 200_000,
  indptr: [0, 3],
  indices: Int32Array.from([0, 70_000, 70_001]),
  data: Int32Array.from([70_000, 1, 1]),
};

const crafted: [string, TileRows, (p: PreparedTile) => void, string | RegExp, RegExp?][] = [
  [
    "a gap of zero (a repeated gene)",
    base,
    (p) => (p.chunks[0]!.gaps[1] = 0),
    "chunk[0].gaps",
    /repeated gene/,
  ],
  ["a gene index >= n_genes", base, (p) => (p.chunks[0]!.gaps[2] = 200), "chunk[0].gaps", /gene 205/],
  ["a stored count of zero", base, (p) => (p.chunks[0]!.vals[3] = 0), "chunk[0].vals"],
  [
    "an exception frame whose size is not 8k",
    big,
    (p) => (p.chunks[0]!.vexc = new Uint8Array(12)),
    "chunk[0].vexc frame content size",
  ],
  [
    "more exceptions than nonzeros",
    big,
    (p) => (p.chunks[0]!.vexc = words(0, 1, 2, 3, 1, 1, 1, 1)),
    "chunk[0].vexc frame content size",
  ],
  [
    "exception positions that do not increase",
    big,
    (p) => (p.chunks[0]!.vexc = words(0, 0, 70000, 70000)),
    "chunk[0].vexc position[1]",
  ],
  [
    "an exception position past the chunk",
    big,
    (p) => (p.chunks[0]!.gexc = words(3, 5)),
    "chunk[0].gexc position[0]",
  ],
  [
    "a value exception below 65536",
    big,
    (p) => (p.chunks[0]!.vexc = words(0, 65535)),
    "chunk[0].vexc payload[0]",
  ],
  [
    "a value exception above 2^31-1",
    big,
    (p) => (p.chunks[0]!.vexc = words(0, 2 ** 31)),
    "chunk[0].vexc payload[0]",
  ],
  [
    "a value exception on a count not stored as 65535",
    big,
    (p) => (p.chunks[0]!.vexc = words(1, 70000)),
    "chunk[0].vexc position[0]",
  ],
  ["a gap exception of 0", big, (p) => (p.chunks[0]!.gexc = words(1, 0)), "chunk[0].gexc payload[0]"],
  [
    "a gap exception >= n_genes",
    big,
    (p) => (p.chunks[0]!.gexc = words(1, 200_000)),
    "chunk[0].gexc payload[0]",
  ],
  [
    "a gap exception pushing a gene past n_genes",
    big,
    (p) => (p.chunks[0]!.gexc = words(1, 199_000)),
    "chunk[0].gexc payload[0]",
    /gene/,
  ],
  [
    "a gap exception on a gap not stored as 65535",
    big,
    (p) => (p.chunks[0]!.gexc = words(2, 5)),
    "chunk[0].gexc position[0]",
  ],
];

for (const [what, r, alter, field, message] of crafted) {
  test(`the decoder refuses ${what}`, async () => {
    await assert.rejects(decodeTile(await craft(r, alter)), isTagged("CorruptTile", field, message));
  });
}

test("the crafted-tile helper itself produces decodable tiles when nothing is altered", async () => {
  const d = await decodeTile(await craft(big, () => {}));
  assert.deepEqual(Array.from(d.indices), [0, 70_000, 70_001]);
  assert.deepEqual(Array.from(d.data), [70_000, 1, 1]);
});

test("big-endian hosts are refused", () => {
  assert.throws(() => assertLittleEndianHost(false), isTagged("UnsupportedHost", "endianness"));
  assertLittleEndianHost(true);
});

test("bad decode options are refused: cell ranges outside the tile, too small or mistyped output buffers", async () => {
  const t = await goodTile();
  await assert.rejects(decodeTile(t, { cells: [5, 31] }), isTagged("InvalidInput", "cells"));
  await assert.rejects(decodeTile(t, { cells: [5, 4] }), isTagged("InvalidInput", "cells"));
  await assert.rejects(
    decodeTile(t, { out: { indices: new Int32Array(1) } }),
    isTagged("InvalidInput", "out.indices"),
  );
  await assert.rejects(
    decodeTile(t, { out: { data: new Int32Array(100_000) }, values: "float32" }),
    isTagged("InvalidInput", "out.data"),
  );
});
