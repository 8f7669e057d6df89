import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { crc32 } from "../src/codec/crc32.js";
import { codecInfo } from "../src/codec/info.js";
import { NATIVE_KERNEL_VERSION } from "../src/codec/native/addon.js";
import { loadAddon } from "../src/codec/native/addon-node.js";
import { loadNativeKernel, type NativeKernel, useNativeKernel } from "../src/codec/native.js";
import { prng } from "./codec-helpers.js";

/** The native kernel, or undefined when the TypeScript loops are forced (nothing to compare). */
async function kernel(): Promise<NativeKernel | undefined> {
  if (process.env.DELTACELLS_NATIVE === "0") return undefined;
  const k = await loadNativeKernel();
  assert.ok(k, "build/Release/deltacells_kernel.node is missing: run `npm rebuild -w @deltacells/core`");
  return k;
}

/** Every instruction-set level this CPU supports, best first (e.g. [3, 2, 1, 0] on hosts with VPCLMULQDQ). */
function levels(k: NativeKernel): number[] {
  const best = k.isa(99);
  return Array.from({ length: best + 1 }, (_, i) => best - i);
}

/** Random gap planes for cells of mixed lengths (tails of every size, a few long cells), in a chunk at nnzLo. */
function randomChunk(rnd: () => number, nnzLo: number) {
  const nCells = 1 + Math.floor(rnd() * 60);
  const lens = Array.from({ length: nCells }, () => {
    const u = rnd();
    return u < 0.1 ? 0 : u < 0.8 ? Math.floor(rnd() * 40) : 40 + Math.floor(rnd() * 400);
  });
  const indptr = new Float64Array(nCells + 1);
  for (let c = 0; c < nCells; c++) indptr[c + 1] = indptr[c]! + lens[c]!;
  const n = indptr[nCells]!;
  for (let c = 0; c <= nCells; c++) indptr[c]! += nnzLo;
  const gaps = new Uint16Array(n);
  for (let j = 0; j < n; j++)
    gaps[j] = rnd() < 0.9 ? 1 + Math.floor(rnd() * 255) : 1 + Math.floor(rnd() * 65535);
  // Cells' first gaps (first genes) are often 0, which is legal.
  for (let c = 0; c < nCells; c++) if (lens[c]! > 0 && rnd() < 0.3) gaps[indptr[c]! - nnzLo] = 0;
  // Sometimes a zero gap inside a cell: refused.
  if (n > 0 && rnd() < 0.3) gaps[Math.floor(rnd() * n)] = 0;
  const planes = new Uint8Array(2 * n);
  for (let j = 0; j < n; j++) {
    planes[j] = gaps[j]! & 0xff;
    planes[n + j] = gaps[j]! >> 8;
  }
  return { nCells, indptr, n, gaps, planes };
}

/** The rule, written plainly: each cell's running sums, and the first cell breaking it. */
function reference(
  ch: ReturnType<typeof randomChunk>,
  nnzLo: number,
  ca: number,
  cb: number,
  nGenes: number,
) {
  const sums = new Int32Array(ch.n);
  for (let c = ca; c < cb; c++) {
    const s = ch.indptr[c]! - nnzLo;
    const e = ch.indptr[c + 1]! - nnzLo;
    let g = 0;
    for (let j = s; j < e; j++) {
      if (j > s && ch.gaps[j] === 0) return { bad: c, sums };
      g += ch.gaps[j]!;
      sums[j] = g;
    }
    if (e > s && g >= nGenes) return { bad: c, sums };
  }
  return { bad: -1, sums };
}

test("every instruction set of the native kernel (AVX2, SSE2, plain C) sums and checks gaps exactly as the rule says", async () => {
  const k = await kernel();
  if (!k) return;
  const rnd = prng(21);
  try {
    for (let trial = 0; trial < 300; trial++) {
      const nnzLo = Math.floor(rnd() * 1000);
      const ch = randomChunk(rnd, nnzLo);
      const ca = rnd() < 0.5 ? 0 : Math.floor(rnd() * ch.nCells);
      const cb = rnd() < 0.5 ? ch.nCells : ca + Math.floor(rnd() * (ch.nCells - ca + 1));
      // Large enough for most cells; small enough to catch some.
      const nGenes = rnd() < 0.7 ? 2 ** 31 : 1 + Math.floor(rnd() * 40_000);
      const want = reference(ch, nnzLo, ca, cb, nGenes);
      const shift = 7;
      const s0 = ch.indptr[ca]! - nnzLo;
      const end = want.bad === -1 ? ch.indptr[cb]! - nnzLo : ch.indptr[want.bad]! - nnzLo;
      for (const level of levels(k)) {
        k.isa(level);
        const out = new Int32Array(ch.n + shift + 3).fill(-5);
        const bad = k.gaps(ch.planes, ch.n, ch.indptr, nnzLo, ca, cb, out, shift, nGenes);
        assert.equal(bad, want.bad, `trial ${trial}, level ${level}`);
        // Cells before the first bad one are exact; nothing is written outside the range.
        assert.deepEqual(
          out.subarray(s0 + shift, end + shift),
          want.sums.subarray(s0, end),
          `trial ${trial}`,
        );
        assert.ok(
          out.subarray(0, s0 + shift).every((v) => v === -5),
          `trial ${trial}: wrote before the range`,
        );
        const rangeEnd = ch.indptr[cb]! - nnzLo;
        assert.ok(
          out.subarray(rangeEnd + shift).every((v) => v === -5),
          `trial ${trial}: wrote after the range`,
        );
      }
    }
  } finally {
    k.isa(99);
  }
});

test("every instruction set of the native kernel recombines count planes exactly and finds a zero count", async () => {
  const k = await kernel();
  if (!k) return;
  const rnd = prng(22);
  try {
    for (let trial = 0; trial < 200; trial++) {
      const n = Math.floor(rnd() * 300);
      const counts = Uint16Array.from({ length: n }, () =>
        rnd() < 0.95 ? 1 + Math.floor(rnd() * 20) : 1 + Math.floor(rnd() * 65535),
      );
      if (n > 0 && rnd() < 0.3) counts[Math.floor(rnd() * n)] = 0;
      const planes = new Uint8Array(2 * n);
      for (let j = 0; j < n; j++) {
        planes[j] = counts[j]! & 0xff;
        planes[n + j] = counts[j]! >> 8;
      }
      const s = Math.floor(rnd() * (n + 1));
      const e = s + Math.floor(rnd() * (n - s + 1));
      const hasZero = counts.subarray(s, e).includes(0);
      for (const level of levels(k)) {
        k.isa(level);
        for (const Out of [Int32Array, Float32Array]) {
          const out = new Out(n + 5).fill(-5);
          assert.equal(k.vals(planes, n, s, e, out, 2), !hasZero, `trial ${trial}, level ${level}`);
          assert.deepEqual(Array.from(out.subarray(s + 2, e + 2)), Array.from(counts.subarray(s, e)));
          assert.ok(out.subarray(0, s + 2).every((v) => v === -5));
          assert.ok(out.subarray(e + 2).every((v) => v === -5));
        }
      }
    }
  } finally {
    k.isa(99);
  }
});

test("every instruction set of the native kernel computes zlib's CRC-32 (any length, alignment and start)", async () => {
  const k = await kernel();
  if (!k) return;
  const rnd = prng(23);
  const big = Uint8Array.from({ length: 70_000 }, () => Math.floor(rnd() * 256));
  try {
    for (const level of levels(k)) {
      k.isa(level);
      assert.equal(k.crc32(new TextEncoder().encode("123456789"), 0), 0xcbf43926);
      for (const len of [0, 1, 15, 63, 64, 65, 255, 256, 257, 300, 383, 400, 1024, 2000, 4099, 69_990]) {
        for (const off of [0, 1, 5]) {
          const b = big.subarray(off, off + len);
          for (const start of [0, 0xdeadbeef]) {
            assert.equal(k.crc32(b, start), crc32(b, start), `level ${level}, length ${len}, offset ${off}`);
          }
        }
      }
    }
  } finally {
    k.isa(99);
  }
});

test("every instruction set of the native kernel renumbers a row as it copies it, and refuses an index outside the map wherever it is", async () => {
  const k = await kernel();
  if (!k?.copyMapped) return;
  const rnd = prng(24);
  const nGenes = 33_538;
  const map = Int32Array.from({ length: nGenes }, (_, j) => j);
  for (let j = nGenes - 1; j > 0; j--) {
    const i = Math.floor(rnd() * (j + 1));
    [map[j], map[i]] = [map[i]!, map[j]!];
  }
  const src = Int32Array.from({ length: 2_000 }, () => Math.floor(rnd() * nGenes));
  try {
    for (const level of levels(k)) {
      k.isa(level);
      // Lengths around the vector width, at offsets that leave rows unaligned.
      for (const n of [0, 1, 7, 8, 9, 15, 16, 17, 31, 1_600, 1_999]) {
        const s = n % 3;
        const dst = new Int32Array(n + 4).fill(-5);
        assert.equal(k.copyMapped(dst, 2, src, s, s + n, map), true, `level ${level}, ${n}`);
        const want = Array.from(src.subarray(s, s + n), (v) => map[v]!);
        assert.deepEqual([...dst.subarray(2, 2 + n)], want, `level ${level}, ${n}`);
        assert.deepEqual(
          [...dst.subarray(0, 2), ...dst.subarray(2 + n)],
          [-5, -5, -5, -5],
          "nothing outside",
        );
      }
      // One index past the map's end (or negative) at every place of a 40-long row: in a vector
      // step or in the tail.
      for (const badValue of [nGenes, -1, 2 ** 31 - 1]) {
        for (let at = 0; at < 40; at++) {
          const row = src.slice(0, 40);
          row[at] = badValue;
          const dst = new Int32Array(40);
          assert.equal(k.copyMapped(dst, 0, row, 0, 40, map), false, `level ${level}, ${badValue} at ${at}`);
        }
      }
    }
  } finally {
    k.isa(99);
  }
});

test("codecInfo names the kernel, its instruction set and zstd, and why the native kernel is not in use", async () => {
  const info = await codecInfo();
  const k = await kernel();
  if (k === undefined) {
    assert.equal(info.kernel, "typescript");
    assert.equal(info.kernelUnavailable, "disabled by DELTACELLS_NATIVE=0");
    return;
  }
  assert.equal(info.kernel, "native");
  assert.equal(info.isa, ["c", "sse2", "avx2+pclmulqdq", "avx2+vpclmulqdq"][k.isa()]);
  assert.equal(info.zstd, "zstd-napi");
  assert.equal(info.fused, true);
  assert.equal(info.kernelUnavailable, undefined);
  useNativeKernel(false);
  try {
    const off = await codecInfo();
    assert.deepEqual(
      [off.kernel, off.isa, off.fused, off.kernelUnavailable],
      ["typescript", undefined, false, "switched off (useNativeKernel(false))"],
    );
  } finally {
    useNativeKernel(true);
  }
});

test("an addon built from older sources (no or another version, a function missing) is refused with the reason, not called", async () => {
  const dir = await mkdtemp(join(tmpdir(), "deltacells-addon-"));
  try {
    // Stand-ins for stale builds: CommonJS modules load through the same require as a .node file.
    const stale = join(dir, "v1.cjs");
    await writeFile(stale, "module.exports = { gaps() {}, vals() {}, crc32() {}, isa() { return 0; } };");
    const other = join(dir, "v9.cjs");
    await writeFile(other, "module.exports = { version: 9 };");
    const v1 = loadAddon(pathToFileURL(stale));
    assert.equal(v1.kernel, undefined);
    assert.match(
      v1.unavailable!,
      /v1\.cjs is version 1 \(no version field\), these sources need version 4: rebuild/,
    );
    assert.equal(v1.warn, true, "a stale build is reported on stderr, from the main thread");
    const v9 = loadAddon(pathToFileURL(other));
    assert.equal(v9.kernel, undefined);
    assert.equal(v9.warn, true);
    assert.match(v9.unavailable!, /is version 9, these sources need version 4/);
    // The current version with functions missing (a build that was interrupted or hand-made).
    const early = join(dir, "v4-partial.cjs");
    const present = ["gaps", "vals", "chunks", "decompress", "crc32", "isa", "indptr"];
    await writeFile(early, `module.exports = { version: 4, ${present.map((f) => `${f}() {}`).join(", ")} };`);
    const v2 = loadAddon(pathToFileURL(early));
    assert.equal(v2.kernel, undefined);
    assert.match(
      v2.unavailable!,
      /v4-partial\.cjs has no renumber, chunksRenumbered, copy, copyMapped, scatterRows, reserveFile, mapFile, allocateMapped \(built from older sources\): rebuild/,
    );
    assert.match(
      loadAddon(pathToFileURL(join(dir, "absent.node"))).unavailable!,
      /absent\.node did not load/,
    );
    // The pool's workers load the addon too: only the main thread says so.
    const inWorker = await new Promise<unknown>((resolve, reject) => {
      // Node 20 applies no `--import tsx` to workers: the worker registers tsx itself.
      const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
      const addon = JSON.stringify(new URL("../src/codec/native/addon-node.ts", import.meta.url).href);
      const w = new Worker(
        `import(${tsx}).then((t) => { t.register(); return import(${addon}); }).then((m) => require("node:worker_threads").parentPort.postMessage(m.loadAddon(new URL(${JSON.stringify(pathToFileURL(stale).href)})).warn))`,
        { eval: true },
      );
      w.once("message", (v) => {
        resolve(v);
        void w.terminate();
      });
      w.once("error", reject);
    });
    assert.equal(inWorker, false);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (process.env.DELTACELLS_NATIVE === "0") return;
  const built = loadAddon();
  assert.equal(built.unavailable, undefined, "the addon in build/Release is current");
  assert.equal(built.kernel?.version, NATIVE_KERNEL_VERSION);
});
