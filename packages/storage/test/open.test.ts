import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import {
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_SECONDS,
  HttpStore,
  isStorageError,
  MemoryStore,
  openStore as openBrowser,
  RetryStore,
  S3Store,
} from "@deltacells/storage";
import { FolderStore, openStore } from "@deltacells/storage/node";

test("the browser-safe openStore opens http(s), s3 and memory URLs", () => {
  const none = { retries: 0, timeoutMs: 0 };
  assert.ok(openBrowser("https://example.org/data/set", none) instanceof HttpStore);
  assert.ok(openBrowser("http://127.0.0.1:1/x/", none) instanceof HttpStore);
  assert.ok(openBrowser("memory://scratch") instanceof MemoryStore);
  const s3 = openBrowser("s3://my-bucket/some/prefix/", {
    ...none,
    s3: { region: "eu-west-1", signRequests: false },
  });
  assert.ok(s3 instanceof S3Store);
  assert.equal(s3.bucket, "my-bucket");
  assert.equal(s3.prefix, "some/prefix");
  assert.equal(s3.objectKey("/a b.bin"), "some/prefix/a b.bin");
});

test("remote stores open with retries by default (DEFAULT_RETRIES), local and memory ones without", () => {
  for (const url of ["https://example.org/data/set", "s3://b/p"]) {
    const store = openBrowser(url, { s3: { signRequests: false } });
    assert.ok(store instanceof RetryStore, url);
    assert.equal(store.url, url);
    assert.equal((store as unknown as { attempts: number }).attempts, DEFAULT_RETRIES + 1);
    const five = openBrowser(url, { retries: 5, s3: { signRequests: false } });
    assert.equal((five as unknown as { attempts: number }).attempts, 6);
  }
  assert.equal(DEFAULT_RETRIES, 3);
  assert.equal(DEFAULT_TIMEOUT_SECONDS, 15);
  assert.ok(openBrowser("memory://m") instanceof MemoryStore);
  assert.throws(() => openBrowser("https://example.org/x", { retries: -1 }), /retries must be/);
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
