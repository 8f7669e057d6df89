import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import {
  HttpStore,
  isStorageError,
  MemoryStore,
  openStore as openBrowser,
  S3Store,
} from "@deltacells/storage";
import { FolderStore, openStore } from "@deltacells/storage/node";

test("the browser-safe openStore opens http(s), s3 and memory URLs", () => {
  assert.ok(openBrowser("https://example.org/data/set") instanceof HttpStore);
  assert.ok(openBrowser("http://127.0.0.1:1/x/") instanceof HttpStore);
  assert.ok(openBrowser("memory://scratch") instanceof MemoryStore);
  const s3 = openBrowser("s3://my-bucket/some/prefix/", { s3: { region: "eu-west-1", signRequests: false } });
  assert.ok(s3 instanceof S3Store);
  assert.equal(s3.bucket, "my-bucket");
  assert.equal(s3.prefix, "some/prefix");
  assert.equal(s3.objectKey("/a b.bin"), "some/prefix/a b.bin");
});

test("the browser-safe openStore refuses local paths and unknown schemes, pointing to the Node entry", () => {
  for (const url of ["/tmp/x", "file:///tmp/x", "ftp://host/x"]) {
    assert.throws(
      () => openBrowser(url),
      (e: unknown) => isStorageError(e, "UnsupportedUrl"),
    );
  }
  assert.throws(() => openBrowser("/tmp/x"), /@deltacells\/storage\/node/);
});

test("the Node openStore also opens local paths and file:// URLs as folder stores", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-open-"));
  try {
    const byPath = openStore(dir);
    assert.ok(byPath instanceof FolderStore);
    await byPath.set("k.bin", new Uint8Array([9]));
    const byUrl = openStore(pathToFileURL(dir).href);
    assert.ok(byUrl instanceof FolderStore);
    assert.deepEqual(await byUrl.get("k.bin"), new Uint8Array([9]));
    assert.ok(openStore("relative/dir") instanceof FolderStore);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("an S3 URL without a bucket is refused", () => {
  assert.throws(
    () => openStore("s3://", { env: {} }),
    (e: unknown) => isStorageError(e, "UnsupportedUrl"),
  );
});

test("S3 credentials must come in pairs", () => {
  assert.throws(() => openStore("s3://b/p", { env: { AWS_ACCESS_KEY_ID: "x" } }), /must be given together/);
});
