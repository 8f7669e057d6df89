/**
 * Every failure the public API can be driven into raises a tagged storage error: the guard says
 * so, `_tag` names it, `object` says which key or store, and the family guard recognises it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { tempDir } from "../../../test-utils/temp.js";
import { thrownBy } from "../../../test-utils/thrown.js";
import { normalizeKey } from "../src/keys.js";
import {
  FolderStore,
  HttpStore,
  isDeltacellsFamilyError,
  isStorageError,
  MemoryStore,
  openStore,
  S3Store,
  type StorageErrorTag,
  withConcurrencyLimit,
  withRetries,
} from "../src/node.js";
import { parseS3Url } from "../src/s3.js";

const answer =
  (status: number, body = "") =>
  async () =>
    new Response(body, { status });
const folder = () => tempDir("storage-errors-");

interface Case {
  name: string;
  run: () => unknown;
  tag: StorageErrorTag;
  /** The `object` expected (a RegExp to match), or undefined when the failure concerns none. */
  object: RegExp | undefined;
}

const CASES: Case[] = [
  {
    name: "a range past the end of an object",
    run: async () => {
      const s = new MemoryStore("memory://m");
      await s.set("a", new Uint8Array(4));
      return s.getRange("a", { offset: 2, length: 9 });
    },
    tag: "RangeNotSatisfiable",
    object: /^memory:\/\/m\/a$/,
  },
  {
    name: "a key escaping the root",
    run: () => normalizeKey("../x", "/data"),
    tag: "InvalidKey",
    object: /x$/,
  },
  {
    name: "a folder key escaping the root",
    run: () => new FolderStore(folder()).get("a/../../etc"),
    tag: "InvalidKey",
    object: /storage-errors-/,
  },
  {
    name: "maxOpenFiles 0",
    run: () => new FolderStore(folder(), { maxOpenFiles: 0 }),
    tag: "InvalidArgument",
    object: /storage-errors-/,
  },
  {
    name: "a concurrency limit of 0",
    run: () => withConcurrencyLimit(new MemoryStore("memory://m"), 0),
    tag: "InvalidArgument",
    object: /^memory:\/\/m$/,
  },
  {
    name: "a write to an HTTP store",
    run: () => new HttpStore("https://h.example/d").set("k", new Uint8Array(1)),
    tag: "ReadOnly",
    object: /^https:\/\/h\.example\/d\/k$/,
  },
  {
    name: "an HTTP 500",
    run: () => new HttpStore("https://h.example/d", { fetch: answer(500) }).get("k"),
    tag: "HttpStatus",
    object: /^https:\/\/h\.example\/d\/k$/,
  },
  {
    name: "a failed connection",
    run: () =>
      new HttpStore("https://h.example/d", {
        fetch: async () => {
          throw new TypeError("fetch failed");
        },
      }).get("k"),
    tag: "Network",
    object: /^https:\/\/h\.example\/d\/k$/,
  },
  {
    name: "a server that ignores Range on a large object",
    run: () =>
      new HttpStore("https://h.example/d", {
        fetch: answer(200, "x".repeat(64)),
        maxIgnoredRangeBytes: 8,
      }).getRange("k", { offset: 0, length: 4 }),
    tag: "RangeUnsupported",
    object: /^https:\/\/h\.example\/d\/k$/,
  },
  {
    name: "every attempt of a retried read failing",
    run: () =>
      withRetries(new HttpStore("https://h.example/d", { fetch: answer(503) }), {
        attempts: 2,
        baseDelayMs: 0,
      }).get("k"),
    tag: "RetriesExhausted",
    object: /^https:\/\/h\.example\/d\/k$/,
  },
  {
    name: "an unknown URL scheme",
    run: () => openStore("ftp://x/y"),
    tag: "UnsupportedUrl",
    object: /^ftp:/,
  },
  { name: "a malformed S3 URL", run: () => parseS3Url("s3:/nope"), tag: "UnsupportedUrl", object: /^s3:/ },
  {
    name: "an S3 store without credentials",
    run: () => new S3Store({ bucket: "b", region: "us-east-1" }),
    tag: "NoCredentials",
    object: /^s3:\/\/b/,
  },
  {
    name: "an S3 part size below the minimum",
    run: () => new S3Store({ bucket: "b", region: "us-east-1", signRequests: false, partSize: 1024 }),
    tag: "InvalidArgument",
    object: /^s3:\/\/b/,
  },
];

for (const c of CASES) {
  test(`tagged: ${c.name} -> ${c.tag}`, async () => {
    const thrown = await thrownBy(c.run);
    assert.ok(isStorageError(thrown), `not a StorageError: ${String(thrown)}`);
    assert.ok(isDeltacellsFamilyError(thrown));
    assert.equal(thrown._tag, c.tag, thrown.message);
    if (c.object === undefined) assert.equal(thrown.object, undefined);
    else assert.match(thrown.object ?? "", c.object);
  });
}

test("the attempt timeout is a Timeout, the transient cause of RetriesExhausted", async () => {
  const store = withRetries(
    new HttpStore("https://h.example/d", {
      fetch: (_url, init) =>
        new Promise((_resolve, reject) =>
          init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
        ),
    }),
    { attempts: 1, timeoutMs: 5 },
  );
  await assert.rejects(store.get("k"), (err: unknown) => {
    assert.ok(isStorageError(err, "RetriesExhausted"));
    assert.ok(isStorageError(err.cause, "Timeout"));
    return true;
  });
});
