/**
 * Memory of a mapped file (codec/mapped.ts, the kernel's `mapFile`): what one thread writes, the
 * file holds (read back with pread) and a pool's worker writes through its own view of the same
 * mapping; refusals name the file and the sizes.
 */
import assert from "node:assert/strict";
import { closeSync, openSync, readSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { inspectTile } from "../src/codec/layout.js";
import { allocateMapped, describeMapped, mapFile, sizeMappedFile } from "../src/codec/mapped.js";
import { loadNativeKernel } from "../src/codec/native.js";
import { createTilePool, encodeTile } from "../src/index.js";

function newFile(): number {
  const path = join(tmpdir(), `deltacells-mapped-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const fd = openSync(path, "wx+");
  unlinkSync(path);
  return fd;
}

test("a mapped file holds what this thread writes, and a pool's workers scatter rows into it", async () => {
  await loadNativeKernel();
  const fd = newFile();
  const file = { id: `t-${Math.random()}`, fd, length: 1 << 20 };
  sizeMappedFile(fd, file.length);
  allocateMapped(file, 0, file.length);
  const indices = new Int32Array(mapFile(file), 0, 1000);
  const data = new Int32Array(mapFile(file), 1 << 19, 1000);
  assert.equal(mapFile(file), indices.buffer, "one mapping per thread and file");
  assert.deepEqual(describeMapped(data), { file, kind: "int32", byteOffset: 1 << 19, length: 1000 });
  // A tile of 3 rows, scattered by a worker into the file (row 2 first, then rows 0 and 1).
  const tile = await encodeTile({
    nGenes: 50,
    indptr: new Float64Array([0, 2, 3, 6]),
    indices: new Int32Array([1, 7, 4, 0, 9, 49]),
    data: new Int32Array([5, 6, 7, 8, 9, 10]),
  });
  const pool = createTilePool({ threads: 1 });
  try {
    const slots = new Float64Array([0, 0, 3, 1, 0, 5, 2, 0, 0]);
    await pool.scatter(tile, inspectTile(tile, { skipCrc: true }), {
      values: "int32",
      slots,
      targets: [{ indices, data }],
    });
  } finally {
    await pool.close();
  }
  assert.deepEqual([...indices.subarray(0, 6)], [0, 9, 49, 1, 7, 4]);
  const back = Buffer.alloc(24);
  readSync(fd, back, 0, 24, 1 << 19);
  assert.deepEqual([...new Int32Array(back.buffer, back.byteOffset, 6)], [8, 9, 10, 5, 6, 7]);
  closeSync(fd);
});

test("mapping past the end of a file, or a descriptor that is not open, is refused with the reason", async () => {
  await loadNativeKernel();
  const fd = newFile();
  sizeMappedFile(fd, 4096);
  assert.throws(
    () => mapFile({ id: `short-${Math.random()}`, fd, length: 8192 }),
    (err: Error & { _tag?: string }) =>
      err._tag === "UnsupportedHost" && /holds 4096 bytes, not the 8192 mapped/.test(err.message),
  );
  closeSync(fd);
  assert.throws(() => sizeMappedFile(fd, 4096), /cannot size the shared batch file.*fstat/);
});
