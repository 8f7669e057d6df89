/**
 * The sporadik companion a manifest names (`metadata.sporadik`): recorded in the writer's own
 * serialisation, read back, and refused when its path could leave the dataset's prefix (the CLI's
 * validate and the viewer both open what this returns).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  COMPANION_PATH,
  companionOf,
  encodeTile,
  isDeltacellsError,
  nameCompanion,
  openDataset,
  writeDataset,
} from "@deltacells/core";
import { MemoryStore } from "@deltacells/storage";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

async function dataset(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await writeDataset(memorySource(randomMatrix(12, 5, 3)), store, {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 1 }) },
    compress: zstdCompressor(1),
    tileSize: 4,
  });
  return store;
}

test("nameCompanion records the companion in the manifest, which is otherwise unchanged", async () => {
  const store = await dataset();
  const before = await openDataset(store);
  assert.equal(companionOf(before), undefined);
  await nameCompanion(store);
  const bytes = new TextDecoder().decode((await store.get("manifest.json"))!);
  assert.match(bytes, /^\{.*\}\n$/s, "compact JSON on one line, as the writer stores it");
  assert.equal(bytes.split("\n").length, 2);
  const after = await openDataset(store);
  assert.equal(companionOf(after), COMPANION_PATH);
  assert.deepEqual({ ...after.manifest, metadata: {} }, { ...before.manifest, metadata: {} });
  assert.deepEqual(after.manifest.metadata, { ...before.manifest.metadata, sporadik: "sporadik" });
});

test("a companion path that could leave the dataset's prefix is refused, in the manifest and when named", async () => {
  const store = await dataset();
  const ds = await openDataset(store);
  for (const rel of ["../elsewhere", "/abs", "s3://bucket/x", ".hidden", "a//b", "a/../../b", 7]) {
    const named = { url: ds.url, manifest: { ...ds.manifest, metadata: { sporadik: rel } } };
    assert.throws(
      () => companionOf(named),
      (e: unknown) =>
        isDeltacellsError(e, "InconsistentManifest") &&
        e.field === "metadata.sporadik" &&
        e.object === `${ds.url}/manifest.json`,
      String(rel),
    );
    if (typeof rel === "string")
      await assert.rejects(nameCompanion(store, rel), (e: unknown) => isDeltacellsError(e, "InvalidInput"));
  }
  assert.equal(
    companionOf({ url: ds.url, manifest: { ...ds.manifest, metadata: { sporadik: "a/b_c.zarr" } } }),
    "a/b_c.zarr",
  );
  assert.equal(companionOf(await openDataset(store)), undefined, "a refused name is not written");
});

test("a manifest gone while the companion was written is a ConcurrentChange, and nothing is written", async () => {
  const store = await dataset();
  await store.delete("manifest.json");
  await assert.rejects(nameCompanion(store), (e: unknown) => isDeltacellsError(e, "ConcurrentChange"));
  assert.equal(await store.get("manifest.json"), undefined);
});
