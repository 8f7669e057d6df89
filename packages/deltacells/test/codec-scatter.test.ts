/**
 * Scattering a tile's rows into other arrays (`scatterTileSync`, what the loader's slot path asks
 * a decoder for): rows land exactly where the slots say, with the native memcpy and with
 * `TypedArray#set`, on this thread and on a pool's workers, with exceptions (counts and gaps above
 * 65535) and renumbered columns (the kernel renumbering each row as it copies it, against the JS
 * renumbering, on random tiles and maps); a damaged tile is refused with the CRC named, and slots that do
 * not fit their targets are refused instead of writing out of bounds.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTilePool, decodeTile, encodeTile, isDeltacellsError } from "@deltacells/core";
import { copyRange } from "../src/codec/copy.js";
import { inspectTile } from "../src/codec/layout.js";
import { createLocalDecoder } from "../src/codec/local-decoder.js";
import { loadNativeKernel, nativeKernel, useNativeKernel } from "../src/codec/native.js";
import { type ScatterJob, scatterTileSync } from "../src/codec/scatter.js";
import { loadZstd } from "../src/codec/zstd/load.js";
import { prng, randomCsr } from "./codec-helpers.js";

const N_CELLS = 40;
const N_GENES = 70_000;

async function tile() {
  const rows = randomCsr(prng(5), {
    nCells: N_CELLS,
    nGenes: N_GENES,
    perCell: 60,
    bigValueRate: 0.01,
    bigGapRate: 0.01,
  });
  const bytes = await encodeTile(rows, { level: 3, nChunks: 3 });
  return { rows, bytes };
}

const shared = (n: number) => new Int32Array(new SharedArrayBuffer(4 * n));

/** Every row to two targets, in reverse order in the first and at odd rows only in the second. */
function slotsFor(indptr: Float64Array) {
  const len = (r: number) => indptr[r + 1]! - indptr[r]!;
  const nnz = indptr[N_CELLS]!;
  const triples: number[] = [];
  let at = 0;
  const start0: number[] = [];
  for (let r = N_CELLS - 1; r >= 0; r--) {
    start0[r] = at;
    at += len(r);
  }
  let at1 = 5; // an offset into the second target
  const start1: number[] = [];
  for (let r = 0; r < N_CELLS; r++) {
    triples.push(r, 0, start0[r]!);
    if (r % 2 === 1) {
      triples.push(r, 1, at1);
      start1[r] = at1;
      at1 += len(r);
    }
  }
  return { slots: Float64Array.from(triples), start0, start1, size0: nnz, size1: at1 };
}

test("rows land where their slots say (native memcpy, TypedArray#set, a pool; renumbered)", async () => {
  const { bytes } = await tile();
  const whole = await decodeTile(bytes);
  const map = Int32Array.from({ length: N_GENES }, (_, j) => N_GENES - 1 - j);
  const layout = inspectTile(bytes, { skipCrc: true });
  const { slots, start0, start1, size0, size1 } = slotsFor(layout.indptr);
  const pool = createTilePool({ threads: 2 });
  try {
    for (const how of ["native", "set", "pool"] as const) {
      for (const columns of [undefined, map]) {
        const targets = [
          { indices: shared(size0), data: shared(size0) },
          { indices: shared(size1), data: shared(size1) },
        ];
        const job: ScatterJob = { values: "int32", slots, targets, ...(columns && { columns }) };
        if (how === "pool") await pool.scatter(bytes, layout, job);
        else {
          // (useNativeKernel returns the new state: the previous one is read first.)
          const was = nativeKernel() !== undefined;
          useNativeKernel(how === "native");
          try {
            scatterTileSync(bytes, layout, await loadZstd(), job);
          } finally {
            useNativeKernel(was);
          }
        }
        for (let r = 0; r < N_CELLS; r++) {
          const a = whole.indptr[r]!;
          const b = whole.indptr[r + 1]!;
          const want = [...whole.indices.subarray(a, b)].map((j) => (columns ? columns[j]! : j));
          const got0 = targets[0]!.indices.subarray(start0[r]!, start0[r]! + b - a);
          assert.deepEqual([...got0], want, `${how} row ${r}`);
          assert.deepEqual(
            [...targets[0]!.data.subarray(start0[r]!, start0[r]! + b - a)],
            [...whole.data.subarray(a, b)],
          );
          if (r % 2 === 1)
            assert.deepEqual([...targets[1]!.indices.subarray(start1[r]!, start1[r]! + b - a)], want);
        }
        assert.deepEqual(
          [...targets[1]!.indices.subarray(0, 5)],
          [0, 0, 0, 0, 0],
          "nothing before the first slot",
        );
      }
    }
  } finally {
    await pool.close();
  }
});

test("dense targets get each row's counts at its columns", async () => {
  const { bytes } = await tile();
  const whole = await decodeTile(bytes);
  const layout = inspectTile(bytes, { skipCrc: true });
  const dense = new Float32Array(2 * N_GENES);
  const job: ScatterJob = {
    values: "float32",
    slots: Float64Array.of(3, 0, N_GENES, 7, 0, 0),
    targets: [{ dense, nCols: N_GENES }],
  };
  await createLocalDecoder().scatter(bytes, layout, job);
  for (const [row, r] of [
    [1, 3],
    [0, 7],
  ] as const) {
    const want = new Float32Array(N_GENES);
    for (let p = whole.indptr[r]!; p < whole.indptr[r + 1]!; p++) want[whole.indices[p]!] = whole.data[p]!;
    assert.deepEqual(dense.subarray(row * N_GENES, (row + 1) * N_GENES), want, `row ${row}`);
  }
});

test("refusals: a damaged tile (its CRC named) and slots outside their targets or the tile", async () => {
  const { bytes } = await tile();
  const layout = inspectTile(bytes, { skipCrc: true });
  const zstd = await loadZstd();
  const damaged = bytes.slice();
  damaged[damaged.length - 20]! ^= 0x10;
  const small = { indices: new Int32Array(4), data: new Int32Array(4) };
  const longest = Math.max(
    ...Array.from({ length: N_CELLS }, (_, r) => layout.indptr[r + 1]! - layout.indptr[r]!),
  );
  const row = [...Array(N_CELLS).keys()].find((r) => layout.indptr[r + 1]! - layout.indptr[r]! === longest)!;
  for (const [what, b, slots, tag, pattern] of [
    ["damaged bytes", damaged, Float64Array.of(0, 0, 0), "CorruptTile", /crc32/],
    ["a row longer than its target", bytes, Float64Array.of(row, 0, 0), "InternalError", /inconsistent/],
    ["a row beyond the tile", bytes, Float64Array.of(N_CELLS, 0, 0), "InternalError", /beyond the tile/],
    ["a missing target", bytes, Float64Array.of(0, 3, 0), "InternalError", /target 3 missing/],
  ] as const) {
    assert.throws(
      () => scatterTileSync(b, layout, zstd, { values: "int32", slots, targets: [small] }),
      (e) => isDeltacellsError(e, tag) && pattern.test(e.message),
      what,
    );
  }
  assert.deepEqual([...small.indices], [0, 0, 0, 0], "nothing written out of bounds");
  // The kernel's memcpy refuses ranges outside either array.
  assert.throws(() => copyRange(new Int32Array(2), 1, Int32Array.of(1, 2, 3), 0, 2), RangeError);
});

test("copyRange copies bytes, ints and floats into and out of shared memory, natively and with set alike, and refuses a range that does not fit", async () => {
  const kernel = await loadNativeKernel();
  const shared = <T extends Int32Array | Float32Array | Uint8Array>(
    make: (b: SharedArrayBuffer) => T,
    n: number,
    bytes: number,
  ) => make(new SharedArrayBuffer(n * bytes));
  const cases = [
    [Uint8Array.from({ length: 1001 }, (_, i) => (i * 7) % 251), shared((b) => new Uint8Array(b), 1003, 1)],
    [Int32Array.from({ length: 999 }, (_, i) => i * -3), shared((b) => new Int32Array(b), 1001, 4)],
    [Float32Array.from({ length: 998 }, (_, i) => i / 3), shared((b) => new Float32Array(b), 1000, 4)],
  ] as const;
  for (const native of kernel === undefined ? [false] : [true, false]) {
    useNativeKernel(native);
    try {
      for (const [src, dst] of cases) {
        dst.fill(0);
        copyRange(dst as Uint8Array, 2, src as Uint8Array, 5, src.length);
        assert.deepEqual(
          [...dst.subarray(2, 2 + src.length - 5)],
          [...src.subarray(5)],
          `${src.constructor.name} in`,
        );
        assert.deepEqual(
          [dst[0], dst[1], dst[2 + src.length - 5]],
          [0, 0, 0],
          "nothing written outside the range",
        );
        const back = new (src.constructor as Uint8ArrayConstructor)(src.length);
        copyRange(back, 0, dst as Uint8Array, 2, 2 + src.length - 5);
        assert.deepEqual(
          [...back.subarray(0, src.length - 5)],
          [...src.subarray(5)],
          `${src.constructor.name} out`,
        );
        assert.throws(
          () => copyRange(dst as Uint8Array, dst.length - 1, src as Uint8Array, 0, 2),
          RangeError,
        );
      }
    } finally {
      useNativeKernel(true);
    }
  }
});

test("the kernel's column map on the row copy gives the rows the JS renumbering gives (random tiles and maps)", async () => {
  const zstd = await loadZstd();
  const kernel = await loadNativeKernel();
  assert.ok(
    kernel?.copyMapped,
    "the native kernel has copyMapped (rebuild it: npm rebuild -w @deltacells/core)",
  );
  for (let seed = 1; seed <= 6; seed++) {
    const rnd = prng(100 + seed);
    const nGenes = 500 + Math.floor(rnd() * 40_000);
    const rows = randomCsr(rnd, {
      nCells: N_CELLS,
      nGenes,
      perCell: 80,
      bigValueRate: 0.01,
      bigGapRate: 0.01,
    });
    const bytes = await encodeTile(rows, { level: 3, nChunks: 1 + (seed % 4) });
    const layout = inspectTile(bytes, { skipCrc: true });
    // A random permutation (Fisher-Yates) of the tile's genes.
    const map = Int32Array.from({ length: nGenes }, (_, j) => j);
    for (let j = nGenes - 1; j > 0; j--) {
      const k = Math.floor(rnd() * (j + 1));
      [map[j], map[k]] = [map[k]!, map[j]!];
    }
    const { slots, size0, size1 } = slotsFor(layout.indptr);
    const run = (native: boolean) => {
      const targets = [
        { indices: shared(size0), data: shared(size0) },
        { indices: shared(size1), data: shared(size1) },
      ];
      const was = nativeKernel() !== undefined;
      assert.equal(useNativeKernel(native), native);
      try {
        scatterTileSync(bytes, layout, zstd, { values: "int32", slots, targets, columns: map });
      } finally {
        useNativeKernel(was);
      }
      return targets.map((t) => [[...t.indices], [...t.data]]);
    };
    assert.deepEqual(run(true), run(false), `seed ${seed}`);
  }
  // Its refusals: an index outside the map, overlapping ranges, ranges outside either array.
  const map = Int32Array.of(2, 0, 1);
  const dst = new Int32Array(4);
  assert.equal(kernel.copyMapped(dst, 1, Int32Array.of(0, 1, 2), 0, 3, map), true);
  assert.deepEqual([...dst], [0, 2, 0, 1]);
  assert.equal(kernel.copyMapped(dst, 0, Int32Array.of(0, 3), 0, 2, map), false, "index 3 outside the map");
  assert.equal(kernel.copyMapped(dst, 0, Int32Array.of(0), 0, 1, new Int32Array(0)), false, "empty map");
  assert.equal(kernel.copyMapped(dst, 1, dst, 0, 3, map), false, "overlapping");
  assert.equal(kernel.copyMapped(dst, 2, Int32Array.of(0, 1, 2), 0, 3, map), false, "past dst's end");
  assert.equal(kernel.copyMapped(dst, 0, Int32Array.of(0, 1, 2), 1, 4, map), false, "past src's end");
});

test("the kernel's scatterRows writes a chunk's rows and stops at the first slot it must leave to the caller's loop", async () => {
  const kernel = await loadNativeKernel();
  assert.ok(
    kernel?.scatterRows,
    "the native kernel has scatterRows (rebuild it: npm rebuild -w @deltacells/core)",
  );
  // A chunk of rows 10..13 at nonzero 100 of its tile: lengths 2, 0, 3, 1.
  const indptr = Float64Array.of(...new Array(10).fill(100), 100, 102, 102, 105, 106);
  const indices = Int32Array.of(0, 3, 1, 2, 3, 0);
  const data = Int32Array.of(10, 11, 12, 13, 14, 15);
  const map = Int32Array.of(7, 6, 5, 4);
  const run = (triples: number[], opts: { map?: Int32Array; cellLo?: number; float?: boolean } = {}) => {
    const t = [new Int32Array(8), new Int32Array(8)];
    const d = opts.float
      ? [new Float32Array(8), new Float32Array(8)]
      : [new Int32Array(8), new Int32Array(8)];
    const q = kernel.scatterRows!(
      indices,
      data,
      indptr,
      100,
      Float64Array.from(triples),
      0,
      opts.cellLo ?? 10,
      14,
      t,
      d,
      opts.map,
    );
    return { q, t: t.map((a) => [...a]), d: d.map((a) => [...a]) };
  };
  // Every row to its slot (row 12 twice), up to the first row of the next chunk (14).
  const all = run([10, 0, 0, 11, 1, 0, 12, 0, 2, 12, 1, 1, 13, 1, 7, 14, 0, 0]);
  assert.equal(all.q, 5);
  assert.deepEqual(all.t, [
    [0, 3, 1, 2, 3, 0, 0, 0],
    [0, 1, 2, 3, 0, 0, 0, 0],
  ]);
  assert.deepEqual(all.d[1], [0, 12, 13, 14, 0, 0, 0, 15]);
  assert.deepEqual(run([10, 0, 0, 13, 0, 2], { map }).t[0], [7, 4, 7, 0, 0, 0, 0, 0], "renumbered");
  // Stops (having written the slots before) at: a row before the chunk, a missing target, a row
  // past its target's end, an index outside the map, a fractional offset.
  assert.equal(run([10, 0, 0, 9, 0, 2]).q, 1);
  assert.equal(run([10, 0, 0, 12, 2, 0]).q, 1);
  assert.equal(run([10, 0, 0, 12, 0, 6]).q, 1);
  assert.equal(run([10, 0, 0, 12, 0, 2.5]).q, 1);
  const short = run([13, 0, 0, 12, 0, 2], { map: Int32Array.of(7, 6, 5) });
  assert.equal(short.q, 1, "index 3 outside a map of 3");
  assert.equal(short.t[0]![0], 7, "the slot before it is written");
  // Targets of another type than the chunk's counts: nothing written, every slot left to the loop.
  const other = run([10, 0, 0], { float: true });
  assert.equal(other.q, 0);
  assert.deepEqual(other.t[0], new Array(8).fill(0));
});
