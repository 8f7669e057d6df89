// What openStore gives a remote location by default (retries, a stall timeout) and the other
// network guarantees of the HTTP read path, against a real static server behind a
// fault-injecting proxy.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { HttpStore, isStorageError, openStore, type StorageError } from "@deltacells/storage";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import { FaultProxy } from "./helpers/fault-proxy.js";

const data = randomBytes(300_000);
let dir: string;
let serve: RunningServer;
let proxy: FaultProxy;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "dc-net-"));
  await writeFile(join(dir, "data.bin"), data);
  serve = await startServe(dir);
  proxy = await FaultProxy.start(serve.url);
});

after(async () => {
  await proxy?.stop();
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

test("openStore's defaults ride out 503s, 500s, 429s and resets with the exact bytes", async () => {
  const store = openStore(proxy.url);
  proxy.reset(["503", "500", "429"]);
  const got = await store.getRange("data.bin", { offset: 10, length: 1000 });
  assert.deepEqual(got, new Uint8Array(data.subarray(10, 1010)));
  assert.equal(proxy.seen.length, 4);
  proxy.reset(["reset", "truncate"]);
  assert.deepEqual(await store.get("data.bin"), new Uint8Array(data));
});

test("a server that never answers fails within the stall timeout, tagged, naming the URL", async () => {
  const store = openStore(proxy.url, { timeoutMs: 300, retries: 1 });
  proxy.reset([], "stall");
  const t0 = performance.now();
  const err = await store.get("data.bin").catch((e: StorageError) => e);
  const seconds = (performance.now() - t0) / 1000;
  assert.ok(isStorageError(err, "RetriesExhausted"), String(err));
  assert.ok(isStorageError((err as StorageError).cause, "Timeout"));
  assert.match(err.message, new RegExp(`${proxy.url}/data.bin sent nothing for 0.3 s`));
  // Each of the 2 attempts waited out the 0.3 s limit its message names. Only a lower bound: an
  // upper one would fail on a loaded machine.
  assert.equal(proxy.seen.length, 2);
  assert.ok(seconds >= 0.6, `took ${seconds} s`);
});

test("a body that stops half way times out too, and the retry heals it", async () => {
  const store = openStore(proxy.url, { timeoutMs: 300 });
  proxy.reset(["stall-body"]);
  assert.deepEqual(await store.get("data.bin"), new Uint8Array(data));
  // Healed by a later attempt; on a loaded machine a healthy 300 kB answer may pause 0.3 s too, so
  // which attempt healed it is not fixed (the first surely timed out: it never finishes).
  assert.deepEqual(
    proxy.seen.map((s) => s.fault),
    ["stall-body", ...proxy.seen.slice(1).map(() => "pass")],
  );
  assert.ok(proxy.seen.length >= 2);
  const once = openStore(proxy.url, { timeoutMs: 300, retries: 0 });
  proxy.reset(["stall-body"]);
  await assert.rejects(once.get("data.bin"), (e: unknown) => isStorageError(e, "Timeout"));
});

test("a slow but moving answer is not a stall", async () => {
  // The body takes longer than the stall timeout in all (32 parts, 0.1 s apart), but never stops
  // for long: each part restarts the clock. The gaps are a thirtieth of the limit, so a loaded
  // machine does not turn them into stalls (one 250 ms delay against a 400 ms limit did, and CI
  // can freeze a test process for a second or two).
  const store = openStore(proxy.url, { timeoutMs: 3000, retries: 0 });
  proxy.reset([{ parts: 32, everyMs: 100 }]);
  const started = performance.now();
  assert.deepEqual(await store.get("data.bin"), new Uint8Array(data));
  assert.ok(performance.now() - started >= 3000, "the whole answer took longer than the limit");
  assert.equal(proxy.seen.length, 1, "in one attempt");
});

test("an error body is shown as a short printable excerpt, binary escaped", async () => {
  const store = new HttpStore(proxy.url);
  const body = new Uint8Array(5000);
  for (let i = 0; i < body.length; i++) body[i] = (i * 37) % 256;
  proxy.reset([{ status: 400, body }]);
  const err = await store.get("data.bin").catch((e: Error) => e);
  assert.ok(isStorageError(err, "HttpStatus"));
  const detail = /\[(.*)\]$/s.exec(err.message)?.[1] ?? "";
  assert.ok(detail.length > 0 && detail.length < 400, `${detail.length} characters: ${detail}`);
  const unprintable = [...err.message].filter((c) => c.charCodeAt(0) < 0x20 || c === "\ufffd");
  assert.deepEqual(unprintable, []);
  assert.match(detail, /^\\x00%Jo\\ufffd/);
  assert.match(detail, /\.\.\.$/);
  proxy.reset([{ status: 400, body: new TextEncoder().encode("plain words\nand a line") }]);
  const plain = await store.get("data.bin").catch((e: Error) => e);
  assert.match(String(plain), /\[plain words and a line\]$/);
});

test("unchangedSince refuses an object whose Last-Modified is later, and onInfo reports it", async () => {
  const when = new Date("2024-01-02T03:04:05Z");
  const answer = {
    status: 200,
    body: new Uint8Array(data.subarray(0, 4)),
    headers: { "last-modified": when.toUTCString(), date: "Wed, 03 Jan 2024 00:00:00 GMT" },
  };
  const store = new HttpStore(proxy.url);
  let info: { changed?: number; readAt?: number } = {};
  proxy.reset([answer, answer, answer]);
  await store.get("data.bin", { onInfo: (i) => (info = i) });
  assert.deepEqual(info, { changed: when.getTime(), readAt: Date.parse("2024-01-03T00:00:00Z") });
  assert.deepEqual(
    await store.get("data.bin", { unchangedSince: when.getTime() }),
    new Uint8Array(data.subarray(0, 4)),
  );
  const err = await store.get("data.bin", { unchangedSince: when.getTime() - 1000 }).catch((e: Error) => e);
  assert.ok(isStorageError(err, "Changed"), String(err));
  assert.match(err.message, /data\.bin was modified at 2024-01-02T03:04:05\.000Z/);
});
