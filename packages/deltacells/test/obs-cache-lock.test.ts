/**
 * The local cache under concurrency: several real processes localizing the same columns fetch
 * each column chunk once (GETs counted at an HTTP server), and stale locks (dead owner, or not
 * refreshed) do not block, while a live lock is waited for.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import { tempDir } from "../../../test-utils/temp.js";
import { encodeTile, openDataset, writeDataset } from "../src/index.js";
import { cacheLocalizer, zstdCompressor } from "../src/node.js";
import { obsCachePath } from "../src/obs/cache-node.js";
import { obsSource } from "./obs-fixtures.js";

const dir = tempDir("deltacells-obs-lock-");
const requests: { key: string; range: string | undefined }[] = [];
let server: Server;
let url: string;

before(async () => {
  await writeDataset(obsSource(), new FolderStore(join(dir, "ds")), {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
    compress: zstdCompressor(3),
    tileSize: 10,
    obs: { tilesPerFile: 3 },
  });
  // A static server with Range support that records every request.
  server = createServer((req, res) => {
    const key = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname.slice(1));
    requests.push({ key, range: req.headers.range });
    let data: Buffer;
    try {
      data = readFileSync(join(dir, key));
    } catch {
      res.writeHead(404).end();
      return;
    }
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    if (m) {
      const a = Number(m[1]);
      const b = m[2] ? Number(m[2]) : data.length - 1;
      res.writeHead(206, { "content-range": `bytes ${a}-${b}/${data.length}`, "content-length": b - a + 1 });
      res.end(req.method === "HEAD" ? undefined : data.subarray(a, b + 1));
    } else {
      res.writeHead(200, { "content-length": data.length });
      res.end(req.method === "HEAD" ? undefined : data);
    }
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds`;
});

after(() => new Promise<void>((ok) => server.close(() => ok())));

function child(cacheDir: string, columns: string): Promise<string> {
  const script = join(import.meta.dirname, "obs-cache-child.ts");
  return new Promise((ok, fail) => {
    const p = spawn(process.execPath, [
      "--import",
      "tsx",
      "--conditions=source",
      script,
      url,
      cacheDir,
      columns,
    ]);
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => {
      out += d;
    });
    p.stderr.on("data", (d) => {
      err += d;
    });
    p.on("close", (code) => (code === 0 ? ok(out) : fail(new Error(`child exited ${code}: ${err}`))));
  });
}

test("four processes localizing the same two columns fetch each column chunk once", async () => {
  const cacheDir = tempDir("deltacells-obs-shared-");
  requests.length = 0;
  const outs = await Promise.all([1, 2, 3, 4].map(() => child(cacheDir, "cell type/ü,maybe")));
  for (const out of outs) {
    const cols = JSON.parse(out) as { name: string; batches: number; rows: number }[];
    assert.deepEqual(
      cols.map((c) => [c.name, c.batches, c.rows]),
      [
        ["cell type/ü", 4, 35],
        ["maybe", 4, 35],
      ],
    );
  }
  const sizes = new Map(
    [0, 1].map((s) => [
      `ds/obs/obs_000${s}.parquet`,
      readFileSync(join(dir, `ds/obs/obs_000${s}.parquet`)).length,
    ]),
  );
  const shardReads = requests.filter((r) => sizes.has(r.key));
  // A footer is read as its 8-byte tail (length, PAR1), then the metadata that ends just before it.
  const isFooter = (r: { key: string; range: string | undefined }) => {
    const end = Number(/-(\d+)$/.exec(r.range ?? "")?.[1]);
    return end === sizes.get(r.key)! - 1 || end === sizes.get(r.key)! - 9;
  };
  const chunkReads = shardReads.filter((r) => !isFooter(r));
  // 2 columns x 4 tiles: each column chunk once across all processes
  assert.equal(chunkReads.length, 8, JSON.stringify(shardReads));
  assert.ok(
    shardReads.every((r) => r.range !== undefined),
    "shards are only read by ranges",
  );
});

async function deadPid(): Promise<number> {
  const p = spawn(process.execPath, ["-e", "0"]);
  await new Promise((ok) => p.on("close", ok));
  return p.pid!;
}

test("a lock left by a killed process on this host does not block", async () => {
  const cacheDir = tempDir("deltacells-obs-stale-");
  const ds = await openDataset(url, { obsLocalizer: cacheLocalizer({ staleMs: 600_000 }) });
  const path = obsCachePath(cacheDir, ds.manifest.obs_fingerprint!, "score");
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(`${path}.lock`, JSON.stringify({ pid: await deadPid(), host: hostname() }));
  const frame = await ds.obs(["score"], { cacheDir });
  assert.equal(frame.column("score").table.batches.length, 4);
});

test("a lock not refreshed for staleMs is broken; a live one is waited for", async () => {
  const cacheDir = tempDir("deltacells-obs-old-");
  // A live lock is never judged stale here (its holder need not refresh it to be waited for), so
  // what is waited for and what is broken does not depend on how fast this machine runs.
  const ds = await openDataset(url, { obsLocalizer: cacheLocalizer({ staleMs: 600_000, pollMs: 5 }) });
  const path = obsCachePath(cacheDir, ds.manifest.obs_fingerprint!, "score");
  mkdirSync(join(path, ".."), { recursive: true });
  // another host's lock, last refreshed long ago
  writeFileSync(`${path}.lock`, JSON.stringify({ pid: 1, host: "elsewhere" }));
  utimesSync(`${path}.lock`, new Date(0), new Date(0));
  await ds.obs(["score"], { cacheDir });

  // a fresh lock of a live holder: obs() waits until it is released
  const other = obsCachePath(cacheDir, ds.manifest.obs_fingerprint!, "flag");
  writeFileSync(`${other}.lock`, JSON.stringify({ pid: process.pid, host: hostname() }));
  let released = false;
  const waiting = holderChecks(2);
  const loading = ds.obs(["flag"], { cacheDir });
  await waiting;
  released = true;
  unlinkSync(`${other}.lock`);
  const frame = await loading;
  assert.ok(released, "waited for the holder");
  assert.equal(frame.column("flag").table.batches.length, 4);
});

/**
 * Resolves once a waiter has found a lock of this process held `n` times: each time it finds the
 * lock taken, it checks that the holder (this process) is alive, with `process.kill(pid, 0)`.
 * Waiting on what the waiter did, not on a clock.
 */
function holderChecks(n: number): Promise<void> {
  const kill = process.kill;
  return new Promise((resolve) => {
    let seen = 0;
    process.kill = ((pid: number, signal?: string | number) => {
      const alive = kill.call(process, pid, signal);
      if (pid === process.pid && signal === 0 && ++seen === n) {
        process.kill = kill;
        resolve();
      }
      return alive;
    }) as typeof process.kill;
  });
}

test("an abort ends the wait for another process's lock at once, with the signal's reason", async () => {
  const cacheDir = tempDir("deltacells-obs-abort-");
  const ds = await openDataset(url, { obsLocalizer: cacheLocalizer({ staleMs: 600_000, pollMs: 5 }) });
  const path = obsCachePath(cacheDir, ds.manifest.obs_fingerprint!, "flag");
  mkdirSync(join(path, ".."), { recursive: true });
  // held by a live process (this one) and fresh: it is waited for as long as it stays
  writeFileSync(`${path}.lock`, JSON.stringify({ pid: process.pid, host: hostname() }));
  const controller = new AbortController();
  const waiting = holderChecks(1);
  const loading = ds.obs(["flag"], { cacheDir, signal: controller.signal });
  await waiting;
  const reason = new Error("the user stopped");
  controller.abort(reason);
  await assert.rejects(loading, (err) => err === reason);
  // the holder's lock is untouched, and nothing was fetched into the cache
  assert.ok(existsSync(`${path}.lock`));
  assert.ok(!existsSync(path));
});
