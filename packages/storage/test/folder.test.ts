import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FolderStore, isStorageError } from "@deltacells/storage/node";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "dc-folder-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function freshStore(name: string): Promise<FolderStore> {
  const dir = join(root, name);
  await mkdir(dir);
  return new FolderStore(dir);
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => e.name);
}

describe("a folder store", () => {
  test("reads back what was written, whole and by ranges, and missing keys are undefined", async () => {
    const s = await freshStore("basic");
    const bytes = new Uint8Array(1000).map((_, i) => i % 256);
    await s.set("/a/b/c.bin", bytes);
    assert.deepEqual(await s.get("a/b/c.bin"), bytes);
    assert.deepEqual(await s.getRange("a/b/c.bin", { offset: 998, length: 2 }), bytes.slice(998));
    assert.deepEqual(await s.getRange("a/b/c.bin", { suffixLength: 3 }), bytes.slice(997));
    assert.equal(await s.get("a/b/missing.bin"), undefined);
    assert.equal(await s.get("a/b/c.bin/below"), undefined);
    assert.equal(await s.getRange("missing", { offset: 0, length: 1 }), undefined);
    await assert.rejects(s.getRange("a/b/c.bin", { offset: 999, length: 2 }), (e: unknown) =>
      isStorageError(e, "RangeNotSatisfiable"),
    );
  });

  test("list returns sorted keys under a prefix and never temporary files", async () => {
    const s = await freshStore("list");
    for (const k of ["x/2", "x/1", "y/1", "x2"]) await s.set(k, new Uint8Array([1]));
    await writeFile(join(s.root, "x", "3.dctmp-abcdef"), "partial");
    assert.deepEqual(await s.list(), ["x/1", "x/2", "x2", "y/1"]);
    assert.deepEqual(await s.list("x/"), ["x/1", "x/2"]);
    assert.deepEqual(await s.list("x"), ["x/1", "x/2", "x2"]);
    assert.deepEqual(await s.list("/y/"), ["y/1"]);
    await s.delete("x/1");
    await s.delete("x/never-there");
    assert.deepEqual(await s.list("x/"), ["x/2"]);
  });

  for (const key of [
    "../escape",
    "a/../../escape",
    "a/./b",
    "//etc/passwd",
    "a\\..\\b",
    "a//b",
    "",
    "nul\0byte",
  ]) {
    test(`the key ${JSON.stringify(key)} is refused for reads and writes`, async () => {
      const s = await freshStore(`refuse-${Buffer.from(key).toString("hex")}`);
      const isInvalid = (e: unknown) => isStorageError(e, "InvalidKey");
      await assert.rejects(s.get(key), isInvalid);
      await assert.rejects(s.set(key, new Uint8Array([1])), isInvalid);
      await assert.rejects(s.delete(key), isInvalid);
      assert.deepEqual(await filesUnder(root).then((f) => f.filter((n) => n === "escape")), []);
    });
  }

  test("a reader during repeated large writes sees only whole objects, old or new, never a mix", async () => {
    const s = await freshStore("atomic");
    const size = 4 * 1024 * 1024;
    const versions = [1, 2, 3].map((v) => new Uint8Array(size).fill(v));
    await s.set("obj", versions[0]!);
    let writing = true;
    const writer = (async () => {
      for (let i = 0; i < 12; i++) await s.set("obj", versions[i % 3]!);
      writing = false;
    })();
    let reads = 0;
    while (writing) {
      const got = await s.get("obj");
      assert.ok(got !== undefined, "the object vanished during a rewrite");
      assert.equal(got.length, size, "a reader saw a partial object");
      const first = got[0]!;
      assert.ok(
        got.every((b) => b === first),
        "a reader saw a mix of two versions",
      );
      reads++;
    }
    await writer;
    assert.ok(reads > 0);
  });

  test("a write that fails or is aborted leaves no visible object and no temporary file", async () => {
    const s = await freshStore("failed");
    const controller = new AbortController();
    const pending = s.set("obj", new Uint8Array(8 * 1024 * 1024), { signal: controller.signal });
    controller.abort();
    await assert.rejects(pending, { name: "AbortError" });
    assert.equal(await s.get("obj"), undefined);
    // A directory where the object should go makes the final rename fail.
    await mkdir(join(s.root, "dir", "child"), { recursive: true });
    await assert.rejects(s.set("dir", new Uint8Array([1, 2, 3])), (e: unknown) =>
      isStorageError(e, "StorageError"),
    );
    assert.deepEqual(await filesUnder(s.root), []);
    assert.deepEqual(await s.list(), []);
  });
});
