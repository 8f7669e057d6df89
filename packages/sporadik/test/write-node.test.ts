/**
 * writeStoreFromRowBlocks, the library part of `deltacells convert --format sporadik`: the
 * streaming writer on native zstd workers and a temporary folder on disk, which is gone afterwards
 * whether the write succeeded or not.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { FolderStore, MemoryStore } from "@deltacells/storage/node";
import {
  coordsOfLayout,
  layoutFromCompressed,
  layoutFromCoords,
  openReader,
  type RowBlock,
  temporaryBytesPerNonzero,
  writeStore,
  writeStoreFromRowBlocks,
} from "../src/node.js";
import { random, tempDir } from "./helpers.js";

function matrix(nRows: number, nCols: number, seed: number) {
  const next = random(seed);
  const indptr = new Int32Array(nRows + 1);
  const indices: number[] = [];
  const data: number[] = [];
  for (let r = 0; r < nRows; r++) {
    for (let c = 0; c < nCols; c++)
      if (next() < 0.1) {
        indices.push(c);
        data.push(1 + Math.floor(next() * 100));
      }
    indptr[r + 1] = indices.length;
  }
  return { indptr, indices: Int32Array.from(indices), data: Int32Array.from(data) };
}

/** Row blocks of `rows` rows each; indptr offsets stay absolute, as input readers hand them over. */
function* blocksOf(m: ReturnType<typeof matrix>, nRows: number, rows: number): Generator<RowBlock> {
  for (let r = 0; r < nRows; r += rows) {
    const n = Math.min(rows, nRows - r);
    yield { nRows: n, indptr: m.indptr.subarray(r, r + n + 1), indices: m.indices, data: m.data };
  }
}

test("writeStoreFromRowBlocks writes writeStore's bytes (both axes) and leaves no temporary folder", async () => {
  for (const checksums of [false, true]) await sameBytes(checksums);
});

/**
 * The native encoder on worker threads and the in-memory writer's WebAssembly zstd write the same
 * bytes, with or without zstd's content checksum (native zstd's own, and one added to the
 * WebAssembly frame).
 */
async function sameBytes(checksums: boolean) {
  const { dir, cleanup } = tempDir();
  try {
    const [nRows, nCols] = [400, 250];
    const m = matrix(nRows, nCols, 3);
    const rows = layoutFromCompressed({ format: "csr", shape: [nRows, nCols], ...m });
    const { coords, values } = coordsOfLayout(rows);
    const reference = new MemoryStore();
    await writeStore(reference, [rows, layoutFromCoords([nRows, nCols], coords, values, 1)], {
      chunk: 1000,
      checksums,
    });
    const streamed = new MemoryStore();
    const seen = new Set<string>();
    const result = await writeStoreFromRowBlocks(streamed, blocksOf(m, nRows, 64), {
      shape: [nRows, nCols],
      chunk: 1000,
      checksums,
      tmpDir: dir,
      threads: 2,
      onProgress: () => {
        for (const name of readdirSync(dir)) seen.add(name.replace(/spill-.*/, "spill-"));
      },
    });
    assert.deepEqual([...seen], [".sporadik-spill-"], "the temporary folder was under tmpDir");
    assert.equal(result.nnz, m.data.length);
    assert.ok(result.bytesSpilled > 0, "axis 1 went through the temporary folder");
    assert.equal(streamed.objects.size, reference.objects.size);
    for (const [key, bytes] of reference.objects)
      assert.ok(Buffer.from(bytes).equals(Buffer.from(streamed.objects.get(key) as Uint8Array)), key);
    assert.deepEqual(readdirSync(dir), []);
    const chunk = reference.objects.get("layouts/axis0/data/c/0") as Uint8Array;
    assert.equal(((chunk[4] as number) & 0x04) !== 0, checksums, "the frame announces a checksum");
  } finally {
    cleanup();
  }
}

test("a source failing midway leaves a store without a block and no temporary folder", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const m = matrix(200, 50, 4);
    async function* failing(): AsyncGenerator<RowBlock> {
      yield* blocksOf(m, 100, 50);
      throw new Error("the input broke");
    }
    const out = join(dir, "out.zarr");
    await assert.rejects(
      writeStoreFromRowBlocks(new FolderStore(out), failing(), {
        shape: [200, 50],
        tmpDir: join(dir, "tmp"),
      }),
      /the input broke/,
    );
    assert.deepEqual(readdirSync(join(dir, "tmp")), []);
    await assert.rejects(openReader(new FolderStore(out)), { _tag: "IncompleteError" });
  } finally {
    cleanup();
  }
});

test("temporaryBytesPerNonzero: a 4-byte code and the value for axis 1; spooled indices for axis 0 without nnz", () => {
  assert.equal(temporaryBytesPerNonzero({ axes: [1], dtype: "int32" }), 8);
  assert.equal(temporaryBytesPerNonzero({ axes: [1], dtype: "float64" }), 12);
  assert.equal(temporaryBytesPerNonzero({ axes: [0], dtype: "int32", nnz: 10 }), 0);
  assert.equal(temporaryBytesPerNonzero({ axes: [0], dtype: "int32" }), 4);
  assert.equal(temporaryBytesPerNonzero({ dtype: "int32" }), 12);
  assert.equal(temporaryBytesPerNonzero({ axes: [0], dtype: "int32", nnzAtMost: 10 }), 0);
  assert.equal(temporaryBytesPerNonzero({ axes: [0], dtype: "int32", nnzAtMost: 2 ** 31 }), 4);
});
