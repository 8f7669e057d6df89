// Create-only writes (what writer locks are made of) and change detection on reads, for the
// folder and memory stores (HTTP: network-defaults.test.ts; S3: s3.conformance.test.ts).
import assert from "node:assert/strict";
import { mkdtemp, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isStorageError, MemoryStore, type ObjectInfo } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";

test("a create-only set succeeds once; the second is AlreadyExists and leaves the first intact", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-create-"));
  try {
    for (const store of [new FolderStore(dir), new MemoryStore()]) {
      await store.set("sub/lock", new Uint8Array([1]), { createOnly: true });
      await assert.rejects(store.set("sub/lock", new Uint8Array([2]), { createOnly: true }), (e: unknown) =>
        isStorageError(e, "AlreadyExists"),
      );
      assert.deepEqual(await store.get("sub/lock"), new Uint8Array([1]));
      await store.delete("sub/lock");
      await store.set("sub/lock", new Uint8Array([3]), { createOnly: true });
      assert.deepEqual(await store.get("sub/lock"), new Uint8Array([3]));
    }
    // Of many racing creators, exactly one wins.
    const store = new FolderStore(dir);
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => store.set("race", new Uint8Array([i]), { createOnly: true })),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

for (const blockingReads of [false, true])
  test(`a folder read reports the file's change time and refuses a file changed after unchangedSince (blockingReads: ${blockingReads})`, async () => {
    const dir = await mkdtemp(join(tmpdir(), "dc-change-"));
    try {
      const store = new FolderStore(dir, { blockingReads });
      await store.set("a.bin", new Uint8Array([1, 2, 3]));
      let info: ObjectInfo = {};
      await store.get("a.bin", { onInfo: (i) => (info = i) });
      const since = info.readAt!;
      assert.ok(info.changed! <= since);
      const reads = [
        () => store.get("a.bin", { unchangedSince: since }),
        () => store.getRange("a.bin", { offset: 1, length: 1 }, { unchangedSince: since }),
        () => store.getInto("a.bin", (n) => new Uint8Array(n), { unchangedSince: since }),
      ];
      for (const read of reads) assert.ok((await read()) !== undefined);
      await new Promise((r) => setTimeout(r, 20));
      // Replaced by a rename of a file written (and dated) long before: its ctime still moves.
      await writeFile(join(dir, "new.bin"), new Uint8Array([9, 9, 9]));
      const old = new Date("2020-01-01T00:00:00Z");
      await utimes(join(dir, "new.bin"), old, old);
      await rename(join(dir, "new.bin"), join(dir, "a.bin"));
      for (const read of reads) {
        await assert.rejects(
          read(),
          (e: unknown) => isStorageError(e, "Changed") && /a\.bin was modified/.test(String(e)),
        );
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
