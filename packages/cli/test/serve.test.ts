/**
 * `deltacells serve`: byte ranges and their edge cases, validators, CORS, refusal of every path
 * that could reach outside the served folder, and a bounded load test, against the real server on
 * 127.0.0.1 (raw HTTP requests, so nothing normalises the hostile paths before the server sees them).
 */
import assert from "node:assert/strict";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type RunningServer, startServer } from "../src/serve/http.js";
import { deltacells, tempDir } from "./cli-helpers.js";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One raw request: the path goes on the wire exactly as given. */
function get(
  base: string,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<Answer> {
  const u = new URL(base);
  return new Promise((ok, fail) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (d: Buffer) => parts.push(d));
      res.on("end", () =>
        ok({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }),
      );
      res.on("error", fail);
    });
    req.on("error", fail);
    req.end();
  });
}

const BYTES = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7) % 256));

let root: string;
let outside: string;
let server: RunningServer;

before(async () => {
  const tmp = tempDir();
  root = join(tmp, "served");
  outside = join(tmp, "secret");
  mkdirSync(join(root, "ds/tiles"), { recursive: true });
  mkdirSync(join(root, "notadataset"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(root, "ds/manifest.json"), "{}");
  writeFileSync(join(root, "ds/tiles/tile_000000.dct"), BYTES);
  writeFileSync(join(root, "ds/.tmp-upload"), "hidden");
  writeFileSync(join(root, "notadataset/file.txt"), "not part of a dataset");
  writeFileSync(join(root, "toplevel.txt"), "not part of a dataset");
  writeFileSync(join(outside, "passwd"), "SECRET");
  symlinkSync(join(outside, "passwd"), join(root, "ds/link-out"));
  symlinkSync(outside, join(root, "ds/dir-out"));
  symlinkSync(join(root, "ds/tiles/tile_000000.dct"), join(root, "ds/link-in"));
  server = await startServer({ root, port: 0 });
});
after(async () => {
  await server?.close();
  if (root) rmSync(join(root, ".."), { recursive: true, force: true });
});

describe("ranges", () => {
  const key = "/ds/tiles/tile_000000.dct";
  test("whole object: 200, length, validators, ranges announced", async () => {
    const r = await get(server.url, key);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, BYTES);
    assert.equal(r.headers["content-length"], "1000");
    assert.equal(r.headers["accept-ranges"], "bytes");
    assert.ok(r.headers.etag);
    assert.ok(r.headers["last-modified"]);
    assert.equal(r.headers["content-encoding"], undefined);
  });
  const cases: [string, number, number][] = [
    ["bytes=0-0", 0, 1],
    ["bytes=10-19", 10, 20],
    ["bytes=990-", 990, 1000],
    ["bytes=-5", 995, 1000],
    ["bytes=500-5000", 500, 1000],
    ["bytes=999-999", 999, 1000],
    ["bytes=-5000", 0, 1000],
  ];
  for (const [range, start, end] of cases) {
    test(`${range}: 206 with Content-Range bytes ${start}-${end - 1}/1000`, async () => {
      const r = await get(server.url, key, { Range: range });
      assert.equal(r.status, 206);
      assert.equal(r.headers["content-range"], `bytes ${start}-${end - 1}/1000`);
      assert.equal(r.headers["content-length"], String(end - start));
      assert.deepEqual(r.body, BYTES.subarray(start, end));
    });
  }
  for (const range of ["bytes=1000-", "bytes=1000-1005", "bytes=5000-6000"]) {
    test(`${range}: 416 with bytes */1000`, async () => {
      const r = await get(server.url, key, { Range: range });
      assert.equal(r.status, 416);
      assert.equal(r.headers["content-range"], "bytes */1000");
    });
  }
  test("HEAD: the length without a body", async () => {
    const r = await get(server.url, key, {}, "HEAD");
    assert.equal(r.status, 200);
    assert.equal(r.headers["content-length"], "1000");
    assert.equal(r.body.length, 0);
  });
  test("If-None-Match with the ETag: 304", async () => {
    const first = await get(server.url, key);
    const r = await get(server.url, key, { "If-None-Match": String(first.headers.etag) });
    assert.equal(r.status, 304);
  });
  test("If-Range with a stale validator sends the whole object", async () => {
    const r = await get(server.url, key, { Range: "bytes=0-9", "If-Range": '"stale"' });
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 1000);
  });
  test("a symlink inside the folder is followed", async () => {
    const r = await get(server.url, "/ds/link-in", { Range: "bytes=0-3" });
    assert.equal(r.status, 206);
    assert.deepEqual(r.body, BYTES.subarray(0, 4));
  });
  test("writes are refused with 405", async () => {
    for (const method of ["PUT", "POST", "DELETE"]) {
      const r = await get(server.url, key, {}, method);
      assert.equal(r.status, 405, method);
    }
  });
});

describe("CORS", () => {
  test("reads carry Allow-Origin * and expose Content-Range", async () => {
    const r = await get(server.url, "/ds/manifest.json", {
      Origin: "https://example.org",
      Range: "bytes=0-0",
    });
    assert.equal(r.headers["access-control-allow-origin"], "*");
    assert.match(String(r.headers["access-control-expose-headers"]), /Content-Range/);
  });
  test("a preflight for Range is allowed", async () => {
    const r = await get(
      server.url,
      "/ds/manifest.json",
      {
        Origin: "https://example.org",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "range",
      },
      "OPTIONS",
    );
    assert.equal(r.status, 204);
    assert.match(String(r.headers["access-control-allow-headers"]), /Range/);
    assert.match(String(r.headers["access-control-allow-methods"]), /GET/);
  });
  test("a 404 carries CORS too, so a page can tell it from a network failure", async () => {
    const r = await get(server.url, "/ds/nothing-here");
    assert.equal(r.status, 404);
    assert.equal(r.headers["access-control-allow-origin"], "*");
  });
});

describe("refusals", () => {
  const hostile = [
    "/../secret/passwd",
    "/ds/../../secret/passwd",
    "/ds/%2e%2e/%2e%2e/secret/passwd",
    "/ds/%2E%2E/%2E%2E/secret/passwd",
    "/ds/..%2f..%2fsecret%2fpasswd",
    "/ds/..%2F..%2Fsecret%2Fpasswd",
    "/ds/%2e%2e%2f%2e%2e%2fsecret%2fpasswd",
    "/ds/..%5c..%5csecret%5cpasswd",
    "/ds/..\\..\\secret\\passwd",
    "/ds/%252e%252e/%252e%252e/secret/passwd",
    "/ds/tiles/../../../secret/passwd",
    "/ds/./manifest.json",
    "/ds//manifest.json",
    "/ds/link-out",
    "/ds/dir-out/passwd",
    "/ds/.tmp-upload",
    "/ds/%2etmp-upload",
    "/ds/manifest.json%00.txt",
    "/ds/%00",
    "/ds/%zz",
    "//etc/passwd",
    "/%2fetc%2fpasswd",
    "/ds/%2fetc%2fpasswd",
    "/etc/passwd",
    "/C:%5cWindows%5cwin.ini",
    "/toplevel.txt",
    "/notadataset/file.txt",
    "/ds/",
    "/ds",
    "/ds/tiles/",
    "/ds/tiles",
    "/_viewer/../ds/manifest.json",
  ];
  for (const path of hostile) {
    test(`${path}: 404, nothing outside a dataset is served`, async () => {
      const r = await get(server.url, path);
      assert.equal(r.status, 404, `${path} answered ${r.status}: ${r.body}`);
      assert.ok(!r.body.toString().includes("SECRET"));
    });
  }
  test("an absolute URL in the request line is refused", async () => {
    const r = await get(server.url, "http://127.0.0.1/../secret/passwd");
    assert.equal(r.status, 404);
  });
  test("a Host that is not the loopback address is refused (DNS rebinding)", async () => {
    const r = await get(server.url, "/ds/manifest.json", { Host: "evil.example:80" });
    assert.equal(r.status, 421);
  });
});

test("load: 2,000 range requests, 64 at a time, all exact", async () => {
  const { Agent } = await import("node:http");
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const u = new URL(server.url);
  let next = 0;
  let errors = 0;
  const one = (i: number) =>
    new Promise<void>((ok) => {
      const start = (i * 37) % 1000;
      const len = 1 + ((i * 13) % (1000 - start));
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: "/ds/tiles/tile_000000.dct",
          agent,
          headers: { Range: `bytes=${start}-${start + len - 1}` },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (d: Buffer) => parts.push(d));
          res.on("end", () => {
            if (res.statusCode !== 206 || !Buffer.concat(parts).equals(BYTES.subarray(start, start + len)))
              errors++;
            ok();
          });
        },
      );
      req.on("error", () => {
        errors++;
        ok();
      });
      req.end();
    });
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < 2000) await one(next++);
    }),
  );
  agent.destroy();
  assert.equal(errors, 0);
});

test("the command prints its URL and links, binds to 127.0.0.1, and stops on SIGTERM", async () => {
  const { spawn } = await import("node:child_process");
  const { COMMAND_ARGS, REPO } = await import("./cli-helpers.js");
  const child = spawn(process.execPath, [...COMMAND_ARGS, "serve", root, "--port", "0", "--json"], {
    cwd: REPO,
  });
  const exited = new Promise<number | null>((ok) => child.on("exit", ok));
  try {
    await checkServing(child);
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
  } finally {
    // A server left running after a failed assertion would keep this file's process alive for ever.
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  }
});

/** The served URL and links the command prints, and a range read through them. */
async function checkServing(child: ChildProcessWithoutNullStreams) {
  const line = await new Promise<string>((ok, fail) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) ok(out.split("\n")[0]!);
    });
    child.on("exit", (code) => fail(new Error(`serve exited with ${code}`)));
  });
  const info = JSON.parse(line) as { url: string; datasets: string[]; links: string[] };
  assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  assert.deepEqual(info.datasets, ["ds"]);
  assert.deepEqual(info.links, [`${info.url}?data=/ds/`]);
  const r = await get(info.url, "/ds/tiles/tile_000000.dct", { Range: "bytes=1-2" });
  assert.deepEqual(r.body, BYTES.subarray(1, 3));
}

test("a DIR that is not a folder is a usage error", async () => {
  const r = await deltacells("serve", join(root, "toplevel.txt"));
  assert.equal(r.code, 2);
  assert.match(r.stderr, /DIR must be a folder/);
});
