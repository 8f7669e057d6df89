/**
 * The browser-safe entry of @deltacells/storage in a real browser: bundled by esbuild for the
 * browser platform and run in headless Chromium against a local HTTP server (test-utils/browser).
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  BrowserBundleError,
  type BrowserSession,
  bundleForBrowser,
  closeBrowserSessions,
  type ModulePage,
  startBrowserSession,
} from "../../../test-utils/browser/index.js";
import type { ErrorInfo } from "../../../test-utils/browser/page-helpers.js";
import { mulberry32 } from "../../../test-utils/prng.js";

const here = dirname(fileURLToPath(import.meta.url));
const rnd = mulberry32(7);
const blob = Uint8Array.from({ length: 4096 }, () => Math.floor(rnd() * 256));
const ODD_KEY = "dïr ü/odd name +1.bin";
const odd = blob.subarray(1000, 1300);

let session: BrowserSession;
let page: ModulePage;
let base: string;

before(
  async () => {
    session = await startBrowserSession({
      entryPoints: { storage: join(here, "browser-page.ts") },
      route: (_req, res, path) => {
        // Never answers: only an abort ends these requests.
        if (path.startsWith("/slow/")) return true;
        if (path.startsWith("/fail/")) {
          res.writeHead(500, { "Content-Type": "text/plain" }).end("boom");
          return true;
        }
        return false;
      },
    });
    mkdirSync(join(session.dir, "data", "dïr ü"), { recursive: true });
    writeFileSync(join(session.dir, "data", "blob.bin"), blob);
    writeFileSync(join(session.dir, "data", ODD_KEY), odd);
    base = `${session.server.url}/data`;
    // The deliberate 404 and 500 below make Chromium log "Failed to load resource".
    page = await session.open("storage", { ignoreConsole: [/status of (404|500)/] });
  },
  // Only turns a hang into a failure: Chromium's launch and the bundling, beside other test files
  // on CI's loaded machine, can take a minute or more.
  { timeout: 180_000 },
);

after(closeBrowserSessions);

const requestsFor = (path: string) => session.server.requests.filter((r) => r.path === path);

// The limit only turns a hang into a failure (a bundling on a loaded machine can take a minute).
test("a bundle that reaches node: modules is refused, naming them", { timeout: 120_000 }, async () => {
  const err = await bundleForBrowser({
    entryPoints: { node: join(here, "../src/node.ts") },
    outdir: join(session.dir, "refused"),
  }).then(
    () => assert.fail("bundling @deltacells/storage/node for the browser succeeded"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof BrowserBundleError, String(err));
  assert.equal(err._tag, "BrowserBundleError");
  assert.ok(
    err.nodeImports.some((i) => i.includes('"node:fs"')),
    err.nodeImports.join("\n"),
  );
});

test("get in the page returns an object's bytes, for plain, leading-slash and non-ASCII keys", async () => {
  assert.deepEqual(await page.call("get", base, "blob.bin"), Array.from(blob));
  assert.deepEqual(await page.call("get", base, "/blob.bin"), Array.from(blob));
  assert.deepEqual(await page.call("get", base, ODD_KEY), Array.from(odd));
});

test("getRange with an offset and a length is one 206 answer of exactly those bytes", async () => {
  const before = requestsFor("/data/blob.bin").length;
  assert.deepEqual(
    await page.call("getRange", base, "blob.bin", { offset: 100, length: 200 }),
    Array.from(blob.subarray(100, 300)),
  );
  const sent = requestsFor("/data/blob.bin").slice(before);
  assert.deepEqual(
    sent.map((r) => [r.range, r.status]),
    [["bytes=100-299", 206]],
  );
});

test("a suffix range returns the object's last bytes", async () => {
  const before = requestsFor("/data/blob.bin").length;
  assert.deepEqual(
    await page.call("getRange", base, "blob.bin", { suffixLength: 50 }),
    Array.from(blob.subarray(-50)),
  );
  assert.deepEqual(
    requestsFor("/data/blob.bin")
      .slice(before)
      .map((r) => [r.range, r.status]),
    [["bytes=-50", 206]],
  );
});

test("a missing key is undefined, for get and getRange alike", async () => {
  assert.equal(await page.call("get", base, "nope.bin"), null);
  assert.equal(await page.call("getRange", base, "nope.bin", { offset: 0, length: 10 }), null);
  assert.deepEqual(
    requestsFor("/data/nope.bin").map((r) => r.status),
    [404, 404],
  );
});

test("a server error rejects with a tagged HttpStatus error naming the status", async () => {
  const err = await page.call<ErrorInfo>("getError", `${session.server.url}/fail`, "x.bin");
  assert.equal(err._tag, "HttpStatus");
  assert.equal(err.fields.status, 500);
  assert.match(err.message, /500/);
});

test("an abort via AbortSignal rejects with the signal's reason and cancels the request", async () => {
  const hang = () => requestsFor("/slow/hang.bin");
  await page.call("startRead", `${session.server.url}/slow`, "hang.bin");
  // Aborted once the server has the request, which it never answers: only the abort can end the
  // read (an abort on a timer could come before the request left, on a loaded machine).
  for (let i = 0; i < 600 && hang().length === 0; i++) await new Promise((res) => setTimeout(res, 50));
  assert.equal(hang().length, 1, "the server has the request");
  const r = await page.call<{ error: ErrorInfo | null; sameReason: boolean }>("abortRead");
  assert.ok(r.error, "the read of an object that never arrives resolved");
  assert.equal(r.error.name, "AbortError");
  assert.ok(r.sameReason, "the rejection is the signal's reason");
  // The browser really cancelled the fetch: the server sees the connection go away.
  for (let i = 0; i < 600 && !hang()[0]?.aborted; i++) await new Promise((res) => setTimeout(res, 50));
  assert.deepEqual(
    hang().map((q) => q.aborted),
    [true],
  );
});

test("a signal aborted before the call rejects with its reason and sends nothing", async () => {
  const err = await page.call<ErrorInfo>("preAbortedRange", `${session.server.url}/data`, "never.bin");
  assert.equal(err.message, "stopped by the page");
  assert.deepEqual(requestsFor("/data/never.bin"), []);
});

test('openStore("http://…") in the page opens an HttpStore that reads whole objects and ranges', async () => {
  const r = await page.call<{ isHttpStore: boolean; whole: number[] | null; part: number[] | null }>(
    "openAndRead",
    `${base}/`,
    "blob.bin",
    { offset: 4000, length: 96 },
  );
  assert.equal(r.isHttpStore, true);
  assert.deepEqual(r.whole, Array.from(blob));
  assert.deepEqual(r.part, Array.from(blob.subarray(4000)));
});

test("openStore in the page refuses a file:// URL, pointing to the Node entry", async () => {
  const err = await page.call<ErrorInfo>("openStoreError", "file:///tmp/x");
  assert.equal(err._tag, "UnsupportedUrl");
  assert.match(err.message, /@deltacells\/storage\/node/);
});
