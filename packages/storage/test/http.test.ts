import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { HttpStatusError, HttpStore, isStorageError, openStore, S3Store } from "@deltacells/storage";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import { FaultProxy } from "./helpers/fault-proxy.js";

const data = randomBytes(100_000);
const odd = randomBytes(300);
// Unicode only in the folder: serve 14 crashes when a file name with non-ASCII characters goes
// into its Content-Disposition header (a bug of that server, not of the store).
const ODD_KEY = "dïr ü/odd name +1.bin";

let dir: string;
let serve: RunningServer;
let proxy: FaultProxy;
let ignoring: Server;
let ignoringUrl: string;

/** A server that ignores Range headers and always answers 200 with the whole object. */
function startIgnoringServer(): Promise<Server> {
  const big = new Uint8Array(5000).map((_, i) => i % 251);
  const server = createServer((req, res) => {
    if (req.url === "/small.bin") {
      res.writeHead(200, { "content-length": String(data.length) });
      res.end(data);
    } else if (req.url === "/big.bin") {
      res.writeHead(200, { "content-length": String(big.length) });
      res.end(big);
    } else if (req.url === "/gz.json") {
      const gz = gzipSync(JSON.stringify({ zarr_format: 3, pad: "x".repeat(1000) }));
      res.writeHead(200, { "content-length": String(gz.length), "content-encoding": "gzip" });
      res.end(gz);
    } else if (req.url === "/bad.gz") {
      const garbage = new Uint8Array(300).fill(7);
      res.writeHead(200, { "content-length": String(garbage.length), "content-encoding": "gzip" });
      res.end(garbage);
    } else if (req.url === "/moved.bin") {
      res.writeHead(302, { location: "/small.bin" });
      res.end();
    } else if (req.url === "/loop.bin") {
      res.writeHead(307, { location: "/loop.bin" });
      res.end();
    } else if (req.url === "/cut-chunked.bin") {
      res.writeHead(200); // no Content-Length: only the connection's end could tell the body is cut
      res.write(big.subarray(0, 2500), () => res.socket?.destroy());
    } else if (req.url === "/chunked.bin") {
      res.writeHead(200); // no Content-Length: chunked
      res.write(big.subarray(0, 2500));
      res.end(big.subarray(2500));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "dc-http-"));
  await mkdir(join(dir, "dïr ü"));
  await writeFile(join(dir, "data.bin"), data);
  await writeFile(join(dir, ODD_KEY), odd);
  await mkdir(join(dir, "bkt"));
  await writeFile(join(dir, "bkt", "data.bin"), data);
  serve = await startServe(dir);
  proxy = await FaultProxy.start(serve.url);
  ignoring = await startIgnoringServer();
  ignoringUrl = `http://127.0.0.1:${(ignoring.address() as AddressInfo).port}`;
});

after(async () => {
  await proxy?.stop();
  await serve?.stop();
  await new Promise((r) => ignoring?.close(r));
  await rm(dir, { recursive: true, force: true });
});

const isTag = (tag: Parameters<typeof isStorageError>[1]) => (err: unknown) => isStorageError(err, tag);

describe("an HTTP store in front of a static server with Range support", () => {
  test("get returns the whole object and getRange exactly the asked bytes", async () => {
    const store = new HttpStore(serve.url);
    assert.deepEqual(await store.get("data.bin"), new Uint8Array(data));
    for (const [offset, length] of [
      [0, 1],
      [12_345, 678],
      [99_999, 1],
      [0, 100_000],
    ] as const) {
      assert.deepEqual(
        await store.getRange("/data.bin", { offset, length }),
        new Uint8Array(data.subarray(offset, offset + length)),
      );
    }
  });

  test("a suffix range is sent as bytes=-N in one request and returns the last N bytes", async () => {
    proxy.reset();
    const store = new HttpStore(proxy.url);
    assert.deepEqual(
      await store.getRange("data.bin", { suffixLength: 10 }),
      new Uint8Array(data.subarray(-10)),
    );
    assert.deepEqual(
      proxy.seen.map((s) => [s.method, s.range]),
      [["GET", "bytes=-10"]],
    );
  });

  test("a missing object is undefined, for get, getRange and an empty range", async () => {
    const store = new HttpStore(serve.url);
    assert.equal(await store.get("nope.bin"), undefined);
    assert.equal(await store.getRange("nope.bin", { offset: 0, length: 4 }), undefined);
    assert.equal(await store.getRange("nope.bin", { offset: 0, length: 0 }), undefined);
  });

  test("keys with spaces, plus signs and unicode are percent-encoded and found", async () => {
    const store = new HttpStore(serve.url);
    assert.deepEqual(await store.get(ODD_KEY), new Uint8Array(odd));
    assert.deepEqual(
      await store.getRange(ODD_KEY, { offset: 10, length: 5 }),
      new Uint8Array(odd.subarray(10, 15)),
    );
  });

  test("a range starting past the end (416) is RangeNotSatisfiable", async () => {
    const store = new HttpStore(serve.url);
    await assert.rejects(
      store.getRange("data.bin", { offset: 100_000, length: 10 }),
      isTag("RangeNotSatisfiable"),
    );
  });

  test("a range straddling the end (the server clamps it) is RangeNotSatisfiable, not a short answer", async () => {
    const store = new HttpStore(serve.url);
    await assert.rejects(
      store.getRange("data.bin", { offset: 99_990, length: 20 }),
      isTag("RangeNotSatisfiable"),
    );
  });

  test("a suffix longer than the object is RangeNotSatisfiable", async () => {
    const store = new HttpStore(serve.url);
    await assert.rejects(store.getRange("data.bin", { suffixLength: 100_001 }), isTag("RangeNotSatisfiable"));
  });

  test("an empty range is checked against the object's size", async () => {
    const store = new HttpStore(serve.url);
    assert.deepEqual(await store.getRange("data.bin", { offset: 100_000, length: 0 }), new Uint8Array(0));
    assert.deepEqual(await store.getRange("data.bin", { suffixLength: 0 }), new Uint8Array(0));
    await assert.rejects(
      store.getRange("data.bin", { offset: 100_001, length: 0 }),
      isTag("RangeNotSatisfiable"),
    );
  });

  test("a 403 or 500 is an HttpStatus error naming the URL and the status", async () => {
    const store = new HttpStore(proxy.url);
    for (const status of [403, 500] as const) {
      proxy.reset([String(status) as "403" | "500"]);
      await assert.rejects(store.getRange("data.bin", { offset: 0, length: 4 }), (err: unknown) => {
        assert.ok(err instanceof HttpStatusError);
        assert.equal(err.status, status);
        assert.match(err.message, new RegExp(`${proxy.url}/data.bin answered ${status}`));
        return true;
      });
    }
  });

  test("403 can be declared to mean missing, for public buckets that deny listing", async () => {
    const store = new HttpStore(proxy.url, { missingStatuses: [403, 404] });
    proxy.reset(["403"]);
    assert.equal(await store.get("data.bin"), undefined);
  });

  test("a body cut short by the server is a Network error, never a shorter answer", async () => {
    const store = new HttpStore(proxy.url);
    proxy.reset(["truncate"]);
    await assert.rejects(store.getRange("data.bin", { offset: 0, length: 50_000 }), isTag("Network"));
    proxy.reset(["truncate"]);
    await assert.rejects(store.get("data.bin"), isTag("Network"));
  });

  test("writes, deletes and listing are refused as read-only", async () => {
    const store = new HttpStore(serve.url);
    await assert.rejects(store.set("x", new Uint8Array(1)), isTag("ReadOnly"));
    await assert.rejects(store.delete("x"), isTag("ReadOnly"));
    await assert.rejects(store.list(), isTag("ReadOnly"));
  });

  test("keys escaping the root are refused before any request", async () => {
    const store = new HttpStore(serve.url);
    await assert.rejects(store.get("../etc/passwd"), isTag("InvalidKey"));
  });

  test("a custom fetch and headers are used", async () => {
    const seen: string[] = [];
    const store = new HttpStore(serve.url, {
      headers: { "x-test": "yes" },
      fetch: (input, init) => {
        seen.push(new Headers(init?.headers).get("x-test") ?? "missing");
        return fetch(input, init);
      },
    });
    assert.equal((await store.getRange("data.bin", { offset: 1, length: 1 }))?.[0], data[1]);
    assert.deepEqual(seen, ["yes"]);
  });

  test("an aborted signal rejects while the server has not answered", async () => {
    const store = new HttpStore(proxy.url);
    // The server never answers: only the abort can end this read (no clock involved).
    proxy.reset([], "stall");
    const controller = new AbortController();
    const reading = store.get("data.bin", { signal: controller.signal });
    await proxy.arrived(1);
    controller.abort();
    await assert.rejects(reading, { name: "AbortError" });
    proxy.reset();
  });
});

describe("an HTTP store in front of a server that ignores Range and answers 200", () => {
  test("the whole answer is sliced to exactly the asked range", async () => {
    const store = new HttpStore(ignoringUrl);
    assert.deepEqual(
      await store.getRange("small.bin", { offset: 500, length: 100 }),
      new Uint8Array(data.subarray(500, 600)),
    );
    assert.deepEqual(
      await store.getRange("small.bin", { suffixLength: 7 }),
      new Uint8Array(data.subarray(-7)),
    );
  });

  test("a gzip-encoded whole answer is decoded and its Content-Length not mistaken for the size", async () => {
    const store = new HttpStore(ignoringUrl);
    const json = JSON.parse(new TextDecoder().decode(await store.get("gz.json")));
    assert.equal(json.pad.length, 1000);
    assert.equal(
      new TextDecoder().decode(await store.getRange("gz.json", { offset: 0, length: 14 })),
      '{"zarr_format"',
    );
  });

  test("a range past the end of the whole answer is RangeNotSatisfiable", async () => {
    const store = new HttpStore(ignoringUrl);
    await assert.rejects(
      store.getRange("small.bin", { offset: 99_999, length: 2 }),
      isTag("RangeNotSatisfiable"),
    );
  });

  test("an object above maxIgnoredRangeBytes is refused instead of downloaded, with or without Content-Length", async () => {
    const store = new HttpStore(ignoringUrl, { maxIgnoredRangeBytes: 1000 });
    await assert.rejects(store.getRange("big.bin", { offset: 0, length: 10 }), isTag("RangeUnsupported"));
    await assert.rejects(store.getRange("chunked.bin", { offset: 0, length: 10 }), isTag("RangeUnsupported"));
    // A plain get is not a range request: it takes the whole object whatever its size.
    assert.equal((await store.get("big.bin"))?.length, 5000);
  });
});

describe("getInto: a whole object read into the caller's memory", () => {
  /** An `allocate` handing out one shared buffer of `spare` bytes more than asked, and its calls. */
  function lender(spare = 16) {
    const calls: number[] = [];
    let memory: Uint8Array | undefined;
    const allocate = (size: number) => {
      calls.push(size);
      memory = new Uint8Array(new SharedArrayBuffer(size + spare));
      return memory;
    };
    return { calls, allocate, memory: () => memory };
  }

  test("with a Content-Length the body lands in the memory allocate gave, asked for once with the size", async () => {
    const store = new HttpStore(ignoringUrl);
    const l = lender();
    const got = await store.getInto("small.bin", l.allocate);
    assert.deepEqual(l.calls, [data.length]);
    assert.equal(got?.buffer, l.memory()?.buffer);
    assert.equal(got?.byteOffset, 0);
    assert.deepEqual(new Uint8Array(got!), new Uint8Array(data));
  });

  test("without a Content-Length (chunked) or with a gzip one, allocate gets the size of the whole body", async () => {
    const store = new HttpStore(ignoringUrl);
    const chunked = lender();
    const got = await store.getInto("chunked.bin", chunked.allocate);
    assert.deepEqual(chunked.calls, [5000]);
    assert.equal(got?.buffer, chunked.memory()?.buffer);
    assert.deepEqual(new Uint8Array(got!), (await store.get("big.bin"))!);
    const gz = lender(0);
    const json = await store.getInto("gz.json", gz.allocate);
    assert.equal(gz.calls.length, 1);
    assert.equal(json?.buffer, gz.memory()?.buffer);
    assert.equal(JSON.parse(new TextDecoder().decode(new Uint8Array(json!))).pad.length, 1000);
  });

  test("a missing object is undefined and allocates nothing; a cut body is a Network error", async () => {
    const l = lender();
    assert.equal(await new HttpStore(ignoringUrl).getInto("nothing.bin", l.allocate), undefined);
    assert.deepEqual(l.calls, []);
    const store = new HttpStore(proxy.url);
    proxy.reset(["truncate"]);
    await assert.rejects(store.getInto("data.bin", l.allocate), isTag("Network"));
    proxy.reset();
  });
});

describe("in Node, reads go over node:http(s), not the global fetch", () => {
  /** Runs `body` with the global fetch counted; the count of its calls. */
  async function countingGlobalFetch(body: () => Promise<void>): Promise<number> {
    const real = globalThis.fetch;
    let calls = 0;
    globalThis.fetch = (input, init) => {
      calls++;
      return real(input, init);
    };
    try {
      await body();
    } finally {
      globalThis.fetch = real;
    }
    return calls;
  }

  test("HTTP and S3 stores (signed or not) and openStore read every way without calling fetch", async () => {
    const calls = await countingGlobalFetch(async () => {
      const whole = new Uint8Array(data);
      const http = new HttpStore(serve.url);
      assert.deepEqual(await http.get("data.bin"), whole);
      assert.deepEqual(await http.getRange("data.bin", { offset: 10, length: 20 }), whole.slice(10, 30));
      assert.deepEqual(await http.getRange("data.bin", { suffixLength: 5 }), whole.slice(-5));
      assert.deepEqual(await http.getInto("data.bin", (n) => new Uint8Array(n)), whole);
      assert.equal(await http.get("nothing.bin"), undefined);
      for (const s3 of [
        new S3Store({ endpoint: serve.url, bucket: "bkt", signRequests: false }),
        new S3Store({ endpoint: serve.url, bucket: "bkt", accessKeyId: "k", secretAccessKey: "s" }),
      ]) {
        assert.deepEqual(await s3.getInto("data.bin", (n) => new Uint8Array(n)), whole);
        assert.deepEqual(await s3.getRange("data.bin", { offset: 99_990, length: 10 }), whole.slice(-10));
      }
      assert.deepEqual(await openStore(serve.url).get("data.bin"), whole);
    });
    assert.equal(calls, 0);
  });

  test("a fetch given to a store is still the one that reads", async () => {
    let calls = 0;
    const fetch = (input: string | Request, init?: RequestInit) => {
      calls++;
      return globalThis.fetch(input, init);
    };
    assert.deepEqual(await new HttpStore(serve.url, { fetch }).get("data.bin"), new Uint8Array(data));
    assert.deepEqual(await openStore(serve.url, { fetch }).get("data.bin"), new Uint8Array(data));
    const s3 = new S3Store({ endpoint: serve.url, bucket: "bkt", signRequests: false, fetch });
    assert.deepEqual(await s3.getInto("data.bin", (n) => new Uint8Array(n)), new Uint8Array(data));
    assert.equal(calls, 3);
  });

  test("redirects are followed as fetch follows them, up to 20", async () => {
    const store = new HttpStore(ignoringUrl);
    assert.deepEqual(await store.get("moved.bin"), new Uint8Array(data));
    await assert.rejects(store.get("loop.bin"), isTag("Network"));
  });

  test("a gzip answer that does not decode is a Network error", async () => {
    await assert.rejects(new HttpStore(ignoringUrl).get("bad.gz"), isTag("Network"));
  });

  test("a chunked body cut by the connection's end is a Network error, not a short object", async () => {
    const store = new HttpStore(ignoringUrl);
    await assert.rejects(store.get("cut-chunked.bin"), isTag("Network"));
    await assert.rejects(
      store.getInto("cut-chunked.bin", (n) => new Uint8Array(n)),
      isTag("Network"),
    );
  });
});
