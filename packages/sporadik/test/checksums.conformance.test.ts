/**
 * Stores written with `checksums` (zstd's content checksum on every chunk): the metadata is the
 * text zarr-python writes for `ZstdCodec(level=0, checksum=True)`, Python sporadik and zarr-python
 * read every value of them, and a chunk whose bytes changed is refused by all three.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import {
  coordsOfLayout,
  layoutFromCompressed,
  layoutFromCoords,
  openReader,
  type RowBlock,
  writeStore,
  writeStoreFromRowBlocks,
} from "../src/node.js";
import { plain, python, random, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);

const SHAPE = [300, 70] as const;

function matrix(seed: number) {
  const next = random(seed);
  const indptr = new Int32Array(SHAPE[0] + 1);
  const indices: number[] = [];
  const data: number[] = [];
  for (let r = 0; r < SHAPE[0]; r++) {
    for (let c = 0; c < SHAPE[1]; c++)
      if (next() < 0.15) {
        indices.push(c);
        data.push(1 + Math.floor(next() * 500));
      }
    indptr[r + 1] = indices.length;
  }
  return { indptr, indices: Int32Array.from(indices), data: Int32Array.from(data) };
}

function* blocksOf(m: ReturnType<typeof matrix>, rows: number): Generator<RowBlock> {
  for (let r = 0; r < SHAPE[0]; r += rows) {
    const n = Math.min(rows, SHAPE[0] - r);
    yield { nRows: n, indptr: m.indptr.subarray(r, r + n + 1), indices: m.indices, data: m.data };
  }
}

function files(root: string): string[] {
  return readdirSync(root).flatMap((name) => {
    const p = join(root, name);
    return statSync(p).isDirectory() ? files(p).map((f) => join(name, f)) : [name];
  });
}

/** Both layouts written with checksums: by the in-memory writer (WebAssembly zstd) or streamed (native). */
async function written(how: "writeStore" | "writeStoreFromRowBlocks", seed: number): Promise<string> {
  const m = matrix(seed);
  const path = join(dir, `${how}-${seed}.zarr`);
  if (how === "writeStore") {
    const rows = layoutFromCompressed({ format: "csr", shape: [...SHAPE], ...m });
    const { coords, values } = coordsOfLayout(rows);
    await writeStore(new FolderStore(path), [rows, layoutFromCoords([...SHAPE], coords, values, 1)], {
      chunk: 256,
      checksums: true,
    });
  } else {
    await writeStoreFromRowBlocks(new FolderStore(path), blocksOf(m, 64), {
      shape: SHAPE,
      chunk: 256,
      checksums: true,
      threads: 1,
    });
  }
  return path;
}

async function ourSlices(path: string) {
  const out: Record<string, { positions: number[]; values: number[] }[]> = {};
  for (const axis of [0, 1]) {
    const reader = await openReader(new FolderStore(path), { axis });
    const slices: { positions: number[]; values: number[] }[] = [];
    out[axis] = slices;
    for (let p = 0; p < (SHAPE[axis] as number); p++) {
      const { positions, values } = await reader.sliceAt(p);
      slices.push({ positions: plain(positions), values: plain(values) });
    }
  }
  return out;
}

for (const how of ["writeStore", "writeStoreFromRowBlocks"] as const) {
  test(`${how} with checksums declares zstd's checksum as zarr-python spells it, and Python sporadik and zarr-python read every value`, async () => {
    const path = await written(how, 5);
    for (const meta of files(path).filter((f) => /\/(data|indices|indptr|maxima)\/zarr\.json$/.test(f))) {
      const text = readFileSync(join(path, meta), "utf8");
      const json = JSON.parse(text);
      const theirs = python<{ text: string }>(
        "zarr-meta",
        json.data_type,
        String(json.shape[0]),
        String(json.chunk_grid.configuration.chunk_shape[0]),
      );
      assert.equal(text, theirs.text, meta);
    }
    for (const chunk of files(path).filter((f) => /\/c\/\d+$/.test(f))) {
      const bytes = readFileSync(join(path, chunk));
      assert.equal((bytes[4] as number) & 0x04, 0x04, `${chunk} announces a content checksum`);
    }
    const ours = await ourSlices(path);
    const theirs = python<{
      layouts: Record<
        string,
        { slices: { positions: { values: number[] }; values: { values: number[] } }[] }
      >;
    }>("read", path);
    for (const axis of ["0", "1"]) {
      assert.deepEqual(
        theirs.layouts[axis]?.slices.map((s) => ({ positions: s.positions.values, values: s.values.values })),
        ours[axis],
        `Python sporadik, axis ${axis}`,
      );
    }
    const arrays = python<{ raised: string; arrays: Record<string, { values: number[] }> }>(
      "zarr-read",
      path,
    );
    assert.equal(arrays.raised, "ok");
    for (const axis of [0, 1]) {
      const reader = await openReader(new FolderStore(path), { axis });
      const layout = await reader.readLayout();
      for (const name of ["data", "indices", "indptr"] as const)
        assert.deepEqual(arrays.arrays[`layouts/axis${axis}/${name}`]?.values, plain(layout[name]), name);
    }
  });
}

test("a checksummed chunk whose bytes changed is refused by us naming the chunk, and by Python sporadik and zarr-python", async () => {
  const path = await written("writeStoreFromRowBlocks", 6);
  const key = "layouts/axis0/data/c/1";
  const file = join(path, key);
  const bytes = readFileSync(file);
  // The stored checksum itself: every block still decodes, to the right values, and only the
  // checksum can tell.
  bytes[bytes.length - 2] = (bytes[bytes.length - 2] as number) ^ 0x10;
  writeFileSync(file, bytes);
  const reader = await openReader(new FolderStore(path), { axis: 0 });
  // Damage is per chunk: a slice inside chunk 0 still reads.
  assert.ok((await reader.boundsAt(0))[1] <= 256);
  await reader.sliceAt(0);
  await assert.rejects(reader.readLayout(), (err: Error & { _tag?: string; object?: string }) => {
    assert.equal(err._tag, "LayoutError");
    assert.equal(err.object, `/${key}`);
    assert.match(err.message, /fails its zstd content checksum/);
    return true;
  });
  const theirs = python<{ raised: string; message: string }>("zarr-read", path);
  assert.notEqual(theirs.raised, "ok", "zarr-python refuses it");
  assert.match(theirs.message, /checksum/i);
  assert.notEqual(python<{ raised: string }>("read-all", path).raised, "ok", "Python sporadik refuses it");
});
