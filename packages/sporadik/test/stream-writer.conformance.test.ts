/**
 * Stores written by the streaming writer (file spill, native zstd on workers, several spill frames
 * and assembly passes) are read by the Python reference exactly as the in-memory writer's are, and
 * anndata's read_elem reads their layouts as the same scipy matrices.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import {
  closeDecodeWorkers,
  EncodePool,
  FileSpill,
  layoutFromCoords,
  nativeEncoder,
  withFileParts,
  writeStore,
  writeStoreFromRows,
} from "../src/node.js";
import { jsonFile, python, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
const pool = new EncodePool(2);
after(async () => {
  await pool.close();
  await closeDecodeWorkers();
  cleanup();
});

const CASES = [
  { name: "chunked, small chunks", shape: [70, 45], density: 0.3, byteAddressable: false, chunk: 64 },
  { name: "byte-addressable", shape: [40, 90], density: 0.2, byteAddressable: true },
  { name: "empty rows and columns", shape: [30, 25], density: 0.04, byteAddressable: false },
];

for (const [k, c] of CASES.entries()) {
  test(`a streamed store (${c.name}) reads in Python sporadik and anndata as the in-memory writer's`, async () => {
    const spec = randomCoords(c.shape, c.density, 900 + k, "float32");
    const values = new Float32Array(spec.values);
    const rows = layoutFromCoords(c.shape, spec.coords, values, 0);
    const reference = `${dir}/reference-${k}.zarr`;
    await writeStore(new FolderStore(reference), [rows, layoutFromCoords(c.shape, spec.coords, values, 1)], {
      byteAddressable: c.byteAddressable,
      ...(c.chunk ? { chunk: c.chunk } : {}),
    });
    const streamed = `${dir}/streamed-${k}.zarr`;
    const blocks = [];
    for (let r = 0; r < c.shape[0]!; r += 7) {
      const n = Math.min(7, c.shape[0]! - r);
      blocks.push({
        nRows: n,
        indptr: (rows.indptr as Int32Array).subarray(r, r + n + 1),
        indices: rows.indices as Int32Array,
        data: rows.data,
      });
    }
    await writeStoreFromRows(withFileParts(new FolderStore(streamed), streamed), blocks, {
      shape: [c.shape[0]!, c.shape[1]!],
      byteAddressable: c.byteAddressable,
      ...(c.chunk ? { chunk: c.chunk } : {}),
      spill: await FileSpill.create(`${dir}/tmp`),
      encoder: nativeEncoder(pool),
      spillFiles: 3,
      spillFrame: 50,
      assembly: 40,
    });
    assert.deepEqual(python("read", streamed), python("read", reference));
    const anndata = python<{ layouts: Record<string, Record<string, unknown>> }>(
      "anndata",
      streamed,
      jsonFile(dir, `spec-${k}.json`, spec),
    );
    for (const name of ["axis0", "axis1"]) {
      const layout = anndata.layouts[name] as {
        read_elem_equal: boolean;
        arrays: Record<string, { equal: boolean; anndata: string; ours: string }>;
      };
      assert.equal(layout.read_elem_equal, true, name);
      for (const [part, a] of Object.entries(layout.arrays)) {
        assert.ok(a.equal && a.anndata === a.ours, `${name}/${part}: ${JSON.stringify(a)}`);
      }
    }
  });
}
