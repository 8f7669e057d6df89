import assert from "node:assert/strict";
import { test } from "node:test";
import { isStorageError, MemoryStore } from "@deltacells/storage";

test("a memory store returns what was set, and undefined for a missing key", async () => {
  const store = new MemoryStore();
  await store.set("a/b.bin", new Uint8Array([1, 2, 3, 4]));
  assert.deepEqual(await store.get("/a/b.bin"), new Uint8Array([1, 2, 3, 4]));
  assert.deepEqual(await store.getRange("a/b.bin", { offset: 1, length: 2 }), new Uint8Array([2, 3]));
  assert.deepEqual(await store.getRange("a/b.bin", { suffixLength: 1 }), new Uint8Array([4]));
  assert.equal(await store.get("a/missing"), undefined);
  assert.deepEqual(await store.list("a/"), ["a/b.bin"]);
});

test("a range past the end of an object is an error, not a shorter answer", async () => {
  const store = new MemoryStore();
  await store.set("x", new Uint8Array(4));
  await assert.rejects(store.getRange("x", { offset: 2, length: 3 }), (err) =>
    isStorageError(err, "RangeNotSatisfiable"),
  );
});
