/**
 * Each command reaches its locations with its own command line's settings (signing, retries,
 * timeout): commands run in one process (as these tests and a program calling `run` do), and a
 * second command line must not change how the first one, still running, opens its next store.
 */
import assert from "node:assert/strict";
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { run } from "../src/run.js";
import { cli, tempDir } from "./cli-helpers.js";

let root = "";
const served = { manifestAsked: () => {}, releaseManifest: () => {}, zarrJsonAnswers: 0 };
let manifestAsked = new Promise<void>((resolve) => (served.manifestAsked = resolve));
let manifestReleased = new Promise<void>((resolve) => (served.releaseManifest = resolve));

/**
 * A folder over HTTP with two faults: the store's manifest.json (which it lacks: it is a sporadik
 * store) is answered only once released, and its first zarr.json with a 503.
 */
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url!, "http://x").pathname);
  if (path === "/store/manifest.json") {
    served.manifestAsked();
    void manifestReleased.then(() => res.writeHead(404).end());
    return;
  }
  if (path === "/store/zarr.json" && served.zarrJsonAnswers++ === 0) {
    res.writeHead(503).end();
    return;
  }
  const file = join(root, path);
  const size = statSync(file, { throwIfNoEntry: false })?.size;
  if (size === undefined || !statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
  const start = range ? Number(range[1]) : 0;
  const end = range?.[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
  res.writeHead(range ? 206 : 200, {
    "Content-Length": end - start + 1,
    ...(range ? { "Content-Range": `bytes ${start}-${end}/${size}` } : {}),
  });
  if (req.method === "HEAD") res.end();
  else createReadStream(file, { start, end }).pipe(res);
});

before(async () => {
  root = tempDir();
  const r = await cli("convert", "data/anndata/csr.h5ad", join(root, "store"), "--format", "sporadik");
  assert.equal(r.code, 0, r.stderr);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const quiet = () => {
  const out = { text: "" };
  return {
    out,
    io: {
      stdout: { write: (t: string) => (out.text += t) },
      stderr: { write: (t: string) => (out.text += t) },
      debug: false,
    },
  };
};

test("a command's --retries stays its own while another command line is parsed in the same process", async () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/store`;
  manifestAsked = new Promise<void>((resolve) => (served.manifestAsked = resolve));
  manifestReleased = new Promise<void>((resolve) => (served.releaseManifest = resolve));
  served.zarrJsonAnswers = 0;
  const first = quiet();
  // inspect probes for a dataset (manifest.json), then opens the location again as a sporadik
  // store, whose first zarr.json fails with a 503 that its --retries 2 rides out.
  const inspecting = run(["inspect", url, "--retries", "2"], first.io);
  await manifestAsked;
  const second = quiet();
  assert.equal(await run(["inspect", "--help", "--retries", "0", "--no-sign-request"], second.io), 0);
  served.releaseManifest();
  assert.equal(await inspecting, 0, first.out.text);
  assert.match(first.out.text, /sporadik/);
  assert.equal(served.zarrJsonAnswers >= 2, true, "the 503 was retried");
});
