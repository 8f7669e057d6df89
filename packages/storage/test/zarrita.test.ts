// The stores and wrappers are handed to zarrita unchanged: the shapes must match its interfaces.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FolderStore, withCoalescing, withRetries, withStats } from "@deltacells/storage/node";
import * as zarr from "zarrita";

test("zarrita writes and reads an array through a folder store wrapped in stats, coalescing and retries", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-zarrita-"));
  try {
    const store = withStats(withCoalescing(withRetries(new FolderStore(dir))));
    const arr = await zarr.create(zarr.root(store).resolve("counts"), {
      shape: [100],
      chunkShape: [10],
      dtype: "int32",
    });
    const data = new Int32Array(100).map((_, i) => i * i);
    await zarr.set(arr, null, { data, shape: [100], stride: [1] });
    const opened = await zarr.open(zarr.root(withStats(new FolderStore(dir))).resolve("counts"), {
      kind: "array",
    });
    const back = await zarr.get(opened, [zarr.slice(5, 25)]);
    assert.deepEqual(Array.from(back.data as Int32Array), Array.from(data.subarray(5, 25)));
    assert.ok(store.stats.requests.set >= 11, "metadata and ten chunks went through the wrapper");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
