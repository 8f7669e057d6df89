/**
 * Stores whose arrays zarr-python compressed with each bytes-to-bytes codec zarrita ships (zarr v3
 * gzip, zstd, blosc, crc32c; numcodecs' zlib, lz4, gzip, zstd, blosc, shuffle) read back equal to
 * the store as written, and Python sporadik reads the same stores.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import { describe, layoutFromCoords, openReader, writeStore } from "../src/index.js";
import { plain, python, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);

const SHAPE = [40, 23];
const CODECS = [
  "gzip",
  "zstd",
  "blosc",
  "crc32c",
  "zstd+crc32c",
  "numcodecs.zlib",
  "numcodecs.lz4",
  "numcodecs.gzip",
  "numcodecs.zstd",
  "numcodecs.blosc",
  "numcodecs.shuffle",
];

async function slicesOf(path: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const axis of [0, 1]) {
    const reader = await openReader(new FolderStore(path), { axis });
    for (let p = 0; p < (SHAPE[axis] as number); p++) {
      const { positions, values } = await reader.sliceAt(p);
      out.push([axis, p, plain(positions), plain(values)]);
    }
  }
  return out;
}

for (const codec of CODECS) {
  test(`a store zarr-python compressed with ${codec} reads back as written`, async () => {
    const spec = randomCoords(SHAPE, 0.3, 11);
    const path = join(dir, `${codec}.zarr`);
    await writeStore(
      new FolderStore(path),
      SHAPE.map((_, axis) => layoutFromCoords(SHAPE, spec.coords, new Float32Array(spec.values), axis)),
      { chunk: 16 },
    );
    const before = await slicesOf(path);
    python("recompress", path, codec);
    assert.equal(python<{ raised: string }>("refusal", path).raised, "ok", "Python sporadik reads it");
    assert.deepEqual(await slicesOf(path), before);
  });
}

test("a damaged chunk under crc32c is refused naming the chunk, not read as other numbers", async () => {
  const spec = randomCoords(SHAPE, 0.3, 11);
  const path = join(dir, "crc32c-damaged.zarr");
  await writeStore(
    new FolderStore(path),
    SHAPE.map((_, axis) => layoutFromCoords(SHAPE, spec.coords, new Float32Array(spec.values), axis)),
    { chunk: 16 },
  );
  python("recompress", path, "crc32c");
  const info = await describe(new FolderStore(path));
  const data = `${info.layouts.get(0)?.path}/data/c/0`;
  const file = join(path, data);
  const bytes = readFileSync(file);
  bytes[0] = (bytes[0] as number) ^ 0x01; // the first value's lowest mantissa bit: still a float
  writeFileSync(file, bytes);
  const reader = await openReader(new FolderStore(path), { axis: 0 });
  await assert.rejects(reader.sliceAt(0), (err: Error & { _tag?: string; object?: string }) => {
    assert.equal(err._tag, "LayoutError");
    assert.equal(err.object, `/${data}`);
    assert.match(err.message, /crc32c/);
    return true;
  });
});
