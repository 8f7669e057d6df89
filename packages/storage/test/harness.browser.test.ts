/**
 * The real-browser harness itself (test-utils/browser), exercised with a page that misbehaves on
 * purpose: the other browser tests can only fail when the harness notices what goes wrong in the
 * page. It lives with the storage tests because storage is the base every other package builds on.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { get } from "node:http";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type BrowserSession,
  closeBrowserSessions,
  startBrowserSession,
} from "../../../test-utils/browser/index.js";

const selfTest = join(dirname(fileURLToPath(import.meta.url)), "../../../test-utils/browser/self-test");

let session: BrowserSession;

before(
  async () => {
    session = await startBrowserSession({
      entryPoints: { page: join(selfTest, "page.ts"), worker: join(selfTest, "worker.ts") },
    });
    writeFileSync(
      join(session.dir, "ten.bin"),
      Uint8Array.from({ length: 10 }, (_, i) => i),
    );
  },
  // Only turns a hang into a failure: Chromium's launch and the bundling, beside other test files
  // on CI's loaded machine, can take a minute or more.
  { timeout: 180_000 },
);

after(closeBrowserSessions);

test("a console error logged by a Web Worker of the page fails the call", async () => {
  const page = await session.open("page");
  await assert.rejects(page.call("workerLogsAnError"), (err: Error) => {
    assert.match(err.message, /reported errors during workerLogsAnError\(\)/);
    assert.match(
      err.message,
      /\[console\] \(worker http:\/\/127\.0\.0\.1:\d+\/worker\.js\) logged by the worker/,
    );
    return true;
  });
});

test("an uncaught exception in the page fails the call that was running", async () => {
  const page = await session.open("page");
  await assert.rejects(page.call("throwsLater"), /\[pageerror\] Error: thrown from a timer/);
  // Reported once: the next call is clean.
  assert.deepEqual(await page.call("echo", { a: [1, 2] }), { a: [1, 2] });
});

test("a call that never settles fails after its timeout instead of hanging", async () => {
  const page = await session.open("page", { callTimeoutMs: 300 });
  // The rejection is the proof: a call the harness let hang would never settle.
  await assert.rejects(page.call("hangs"), /hangs\(\) in the page did not finish within 300 ms/);
});

test("a page is cross-origin isolated only when asked for", async () => {
  const plain = await session.open("page");
  const isolated = await session.open("page", { crossOriginIsolated: true });
  assert.deepEqual(await plain.call("isolation"), { crossOriginIsolated: false, sharedArrayBuffer: false });
  assert.deepEqual(await isolated.call("isolation"), { crossOriginIsolated: true, sharedArrayBuffer: true });
});

test("the server answers ranges with 206, refuses unsatisfiable ones with 416 and types modules", async () => {
  const url = session.server.url;
  const part = await fetch(`${url}/ten.bin`, { headers: { range: "bytes=2-4" } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get("content-range"), "bytes 2-4/10");
  assert.deepEqual([...new Uint8Array(await part.arrayBuffer())], [2, 3, 4]);
  const suffix = await fetch(`${url}/ten.bin`, { headers: { range: "bytes=-3" } });
  assert.deepEqual([...new Uint8Array(await suffix.arrayBuffer())], [7, 8, 9]);
  const beyond = await fetch(`${url}/ten.bin`, { headers: { range: "bytes=10-" } });
  assert.equal(beyond.status, 416);
  assert.equal(beyond.headers.get("content-range"), "bytes */10");
  await beyond.body?.cancel();
  const module = await fetch(`${url}/page.js`);
  assert.equal(module.headers.get("content-type"), "text/javascript; charset=utf-8");
  await module.body?.cancel();
  // URL parsers resolve `..`; an encoded slash survives them and must not escape the directory.
  const escaped = await new Promise<number | undefined>((resolve, reject) =>
    get(`${url}/x`, { path: "/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fhostname" }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on("error", reject),
  );
  assert.equal(escaped, 404);
});

test("a session that fails to start closes what it started (Chromium, servers): its process exits", async () => {
  // Bundling fails at once (esbuild refuses an entry that is not a path before doing any work);
  // Chromium, started alongside, came up after the cleanup had run, so nothing closed it and the
  // process never exited (a hung test file).
  const harness = pathToFileURL(join(selfTest, "../index.ts")).href;
  const script = `import { startBrowserSession } from ${JSON.stringify(harness)};
    await startBrowserSession({ entryPoints: { page: 42 } }).then(
      () => console.log("started"),
      () => console.log("refused"),
    );`;
  const child = spawn(process.execPath, [...process.execArgv, "--input-type=module", "-e", script], {
    // Only to turn a hang into a failure; a start and its cleanup take seconds.
    timeout: 240_000,
  });
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((ok) =>
    child.on("exit", (c, s) => ok([c, s])),
  );
  assert.equal(out.trim(), "refused");
  assert.equal(signal, null, "the process did not exit by itself");
  assert.equal(code, 0);
});
