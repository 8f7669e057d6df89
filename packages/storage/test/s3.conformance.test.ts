import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { HttpStatusError, isStorageError, S3Store, type S3StoreOptions } from "@deltacells/storage";
import { openStore } from "@deltacells/storage/node";
import { AwsClient } from "aws4fetch";
import { type RunningServer, startMoto } from "../../../test-utils/servers.js";
import { FaultProxy } from "./helpers/fault-proxy.js";

const BUCKET = "deltacells-test";
const creds = { accessKeyId: "testing", secretAccessKey: "testing", region: "us-east-1" };

let moto: RunningServer;
let proxy: FaultProxy;

function store(extra: Partial<S3StoreOptions> = {}): S3Store {
  return new S3Store({ ...creds, endpoint: moto.url, bucket: BUCKET, prefix: "data/set1", ...extra });
}

before(async () => {
  moto = await startMoto();
  proxy = await FaultProxy.start(moto.url);
  const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
  const res = await client.fetch(`${moto.url}/${BUCKET}`, { method: "PUT" });
  assert.equal(res.status, 200, await res.text());
});

after(async () => {
  await proxy?.stop();
  await moto?.stop();
});

const isTag = (tag: Parameters<typeof isStorageError>[1]) => (err: unknown) => isStorageError(err, tag);

describe("an S3 store against moto_server", () => {
  const bytes = randomBytes(10_000);

  test("an object written with set reads back whole, by range and by suffix range", async () => {
    const s = store();
    await s.set("a/object.bin", bytes);
    assert.deepEqual(await s.get("/a/object.bin"), new Uint8Array(bytes));
    assert.deepEqual(
      await s.getRange("a/object.bin", { offset: 1234, length: 100 }),
      new Uint8Array(bytes.subarray(1234, 1334)),
    );
    assert.deepEqual(
      await s.getRange("a/object.bin", { suffixLength: 33 }),
      new Uint8Array(bytes.subarray(-33)),
    );
    assert.deepEqual(await s.getRange("a/object.bin", { offset: 10_000, length: 0 }), new Uint8Array(0));
  });

  test("getInto reads an object into the memory allocate gives, asked for once with its size", async () => {
    const s = store();
    await s.set("into.bin", bytes);
    const sizes: number[] = [];
    const memory = new Uint8Array(new SharedArrayBuffer(bytes.length + 8));
    const lend = (n: number) => {
      sizes.push(n);
      return memory;
    };
    const got = await s.getInto("into.bin", lend);
    assert.deepEqual(sizes, [bytes.length]);
    assert.equal(got?.buffer, memory.buffer);
    assert.deepEqual(new Uint8Array(got!), new Uint8Array(bytes));
    assert.equal(await s.getInto("missing.bin", lend), undefined);
    assert.deepEqual(sizes, [bytes.length]);
    // Through openStore's retries and stall timeout too (a wrapper keeps getInto).
    const opened = openStore(`s3://${BUCKET}/data/set1`, { s3: { ...creds, endpoint: moto.url } });
    assert.deepEqual(
      new Uint8Array((await opened.getInto!("into.bin", (n) => new Uint8Array(n)))!),
      new Uint8Array(bytes),
    );
  });

  test("the object lives under the store's prefix in the bucket", async () => {
    const whole = new S3Store({ ...creds, endpoint: moto.url, bucket: BUCKET });
    await store().set("where.bin", new Uint8Array([7]));
    assert.deepEqual(await whole.get("data/set1/where.bin"), new Uint8Array([7]));
  });

  test("a missing key is undefined for get, getRange and an empty range", async () => {
    const s = store();
    assert.equal(await s.get("missing.bin"), undefined);
    assert.equal(await s.getRange("missing.bin", { offset: 0, length: 10 }), undefined);
    assert.equal(await s.getRange("missing.bin", { suffixLength: 10 }), undefined);
    assert.equal(await s.getRange("missing.bin", { offset: 0, length: 0 }), undefined);
  });

  test("a missing bucket is an error, not a missing object", async () => {
    const s = new S3Store({ ...creds, endpoint: moto.url, bucket: "no-such-bucket-here" });
    await assert.rejects(s.get("x.bin"), (err: unknown) => {
      assert.ok(err instanceof HttpStatusError);
      assert.equal(err.status, 404);
      assert.match(err.message, /NoSuchBucket/);
      return true;
    });
    await assert.rejects(s.getRange("x.bin", { offset: 0, length: 1 }), /NoSuchBucket/);
  });

  test("ranges past the end are RangeNotSatisfiable", async () => {
    const s = store();
    await s.set("short.bin", bytes.subarray(0, 100));
    await assert.rejects(s.getRange("short.bin", { offset: 100, length: 1 }), isTag("RangeNotSatisfiable"));
    await assert.rejects(s.getRange("short.bin", { offset: 90, length: 20 }), isTag("RangeNotSatisfiable"));
    await assert.rejects(s.getRange("short.bin", { suffixLength: 101 }), isTag("RangeNotSatisfiable"));
  });

  test("keys with spaces, plus signs, unicode and other odd characters round-trip and list", async () => {
    const s = store({ prefix: "odd" });
    const keys = [
      "a b/c d.bin",
      "plus+sign.bin",
      "ünï/cödé €.bin",
      "amp&lt;<x>.bin",
      "q?hash#pct%20.bin",
      "tilde~(1)'!*.bin",
    ];
    for (const [i, k] of keys.entries()) await s.set(k, new Uint8Array([i, i + 1]));
    for (const [i, k] of keys.entries()) assert.deepEqual(await s.get(k), new Uint8Array([i, i + 1]), k);
    assert.deepEqual(await s.list(), [...keys].sort());
    // "+" must not be read as a space: the key with a space must not exist.
    assert.equal(await s.get("plus sign.bin"), undefined);
  });

  test("list follows continuation tokens over several pages and strips the prefix", async () => {
    const s = store({ prefix: "paged", listPageSize: 3 });
    const keys = Array.from({ length: 11 }, (_, i) => `k/${String(i).padStart(3, "0")}.bin`);
    await Promise.all(keys.map((k) => s.set(k, new Uint8Array([1]))));
    await s.set("other/x.bin", new Uint8Array([1]));
    proxy.reset();
    const viaProxy = new S3Store({
      ...creds,
      endpoint: proxy.url,
      bucket: BUCKET,
      prefix: "paged",
      listPageSize: 3,
    });
    assert.deepEqual(await viaProxy.list("k/"), keys);
    assert.equal(proxy.seen.length, 4, "11 keys in pages of 3 take 4 requests");
    assert.deepEqual(await s.list(), [...keys, "other/x.bin"]);
  });

  test("an object above the multipart threshold is uploaded in parts and reads back exactly", async () => {
    const big = randomBytes(11 * 1024 * 1024 + 123);
    proxy.reset();
    const s = new S3Store({
      ...creds,
      endpoint: proxy.url,
      bucket: BUCKET,
      prefix: "mp",
      multipartThreshold: 1024 * 1024,
      partSize: 5 * 1024 * 1024,
    });
    await s.set("big.bin", big);
    const requests = proxy.seen.map((r) => `${r.method} ${r.path.replace(/uploadId=[^&]+/, "uploadId=U")}`);
    const path = "/deltacells-test/mp/big.bin";
    assert.equal(requests[0], `POST ${path}?uploads`);
    assert.equal(requests[requests.length - 1], `POST ${path}?uploadId=U`);
    assert.deepEqual(
      requests.slice(1, -1).sort(),
      [1, 2, 3].map((n) => `PUT ${path}?partNumber=${n}&uploadId=U`),
    );
    const back = await s.get("big.bin");
    assert.ok(back !== undefined && Buffer.compare(Buffer.from(back), big) === 0, "multipart object differs");
    assert.deepEqual(await s.getRange("big.bin", { suffixLength: 5 }), new Uint8Array(big.subarray(-5)));
  });

  test("a multipart upload that fails is aborted and leaves no object", async () => {
    const s = new S3Store({
      ...creds,
      endpoint: proxy.url,
      bucket: BUCKET,
      prefix: "mp",
      multipartThreshold: 1024 * 1024,
      partSize: 5 * 1024 * 1024,
      partConcurrency: 1,
    });
    proxy.reset(["pass", "pass", "403"]);
    await assert.rejects(
      s.set("failed.bin", randomBytes(11 * 1024 * 1024)),
      (err: unknown) => err instanceof HttpStatusError && err.status === 403,
    );
    const last = proxy.seen[proxy.seen.length - 1]!;
    assert.equal(last.method, "DELETE");
    assert.match(last.path, /uploadId=/);
    assert.equal(await store({ prefix: "mp" }).get("failed.bin"), undefined);
    // And the server no longer holds the upload's parts.
    const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
    const uploads = await (await client.fetch(`${moto.url}/${BUCKET}?uploads`)).text();
    assert.doesNotMatch(uploads, /failed\.bin/);
  });

  test("uploads lists the multipart uploads a killed writer left under the store's prefix, and abortUpload drops them", async () => {
    const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
    const begin = async (key: string) => {
      const res = await client.fetch(`${moto.url}/${BUCKET}/${key}?uploads`, { method: "POST" });
      const id = /<UploadId>([^<]+)<\/UploadId>/.exec(await res.text())?.[1];
      assert.ok(id, `no UploadId for ${key}`);
      await client.fetch(`${moto.url}/${BUCKET}/${key}?partNumber=1&uploadId=${encodeURIComponent(id)}`, {
        method: "PUT",
        body: randomBytes(1000),
      });
      return id;
    };
    const tile = await begin("killed/set/tiles/0.bin");
    const obs = await begin("killed/set/obs/a b.bin");
    const other = await begin("killed/other/x.bin");
    const s = store({ prefix: "killed/set" });
    const found = await s.uploads();
    assert.deepEqual(found.map((u) => [u.key, u.uploadId]).sort(), [
      ["obs/a b.bin", obs],
      ["tiles/0.bin", tile],
    ]);
    // moto answers one fixed Initiated date for every upload: only its form is checked here.
    for (const u of found) assert.ok(Number.isFinite(u.initiated.getTime()), "initiated is a date");
    assert.deepEqual(
      (await s.uploads("tiles/")).map((u) => u.key),
      ["tiles/0.bin"],
    );
    // No listing of objects shows them.
    assert.deepEqual(await s.list(), []);
    await s.abortUpload("tiles/0.bin", tile);
    assert.deepEqual(
      (await s.uploads()).map((u) => u.key),
      ["obs/a b.bin"],
    );
    // Aborting one that is gone already is no error (a second cleanup, or a race with another).
    await s.abortUpload("tiles/0.bin", tile);
    await s.abortUpload("obs/a b.bin", obs);
    assert.deepEqual(await s.uploads(), []);
    assert.deepEqual(
      (await store({ prefix: "killed/other" }).uploads()).map((u) => u.uploadId),
      [other],
    );
    await store({ prefix: "killed/other" }).abortUpload("x.bin", other);
  });

  test("setParts uploads an object arriving in parts of any size, never holding it whole", async () => {
    const big = randomBytes(11 * 1024 * 1024 + 123);
    const s = new S3Store({
      ...creds,
      endpoint: moto.url,
      bucket: BUCKET,
      prefix: "mp",
      multipartThreshold: 1024 * 1024,
      partSize: 5 * 1024 * 1024,
    });
    async function* pieces(bytes: Uint8Array, sizes: number[]) {
      for (let at = 0, k = 0; at < bytes.length; k++) {
        const size = sizes[k % sizes.length] as number;
        yield bytes.subarray(at, Math.min(bytes.length, at + size));
        at += size;
      }
    }
    await s.setParts("parts.bin", big.length, pieces(big, [700_001, 3_000_000, 17]));
    const back = await s.get("parts.bin");
    assert.ok(back !== undefined && Buffer.compare(Buffer.from(back), big) === 0, "object differs");
    // Below the threshold: gathered and PUT.
    const small = randomBytes(100);
    await s.setParts("small.bin", 100, pieces(small, [30, 41]));
    assert.deepEqual(await s.get("small.bin"), new Uint8Array(small));
  });

  test("setParts refuses parts that do not add up to the declared length, and leaves nothing", async () => {
    const s = new S3Store({
      ...creds,
      endpoint: moto.url,
      bucket: BUCKET,
      prefix: "mp",
      multipartThreshold: 1024 * 1024,
      partSize: 5 * 1024 * 1024,
    });
    const bytes = randomBytes(6 * 1024 * 1024);
    async function* once() {
      yield bytes;
    }
    await assert.rejects(s.setParts("short.bin", bytes.length + 1, once()), /did not add up|declared as/);
    await assert.rejects(
      s.setParts(
        "short-small.bin",
        10,
        (async function* () {
          yield new Uint8Array(9);
        })(),
      ),
      /did not add up/,
    );
    assert.equal(await s.get("short.bin"), undefined);
    assert.equal(await s.get("short-small.bin"), undefined);
    const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
    const uploads = await (await client.fetch(`${moto.url}/${BUCKET}?uploads`)).text();
    assert.doesNotMatch(uploads, /short\.bin/);
  });

  test("copy is server-side: a HEAD and one CopyObject, no byte read, the source kept", async () => {
    const s = new S3Store({ ...creds, endpoint: proxy.url, bucket: BUCKET, prefix: "cp" });
    const value = randomBytes(300_000);
    await s.set("staged/odd key+1.bin", value);
    proxy.reset();
    assert.equal(await s.copy("staged/odd key+1.bin", "final/odd key+1.bin"), value.length);
    assert.deepEqual(
      proxy.seen.map((r) => `${r.method} ${r.path}`),
      [
        "HEAD /deltacells-test/cp/staged/odd%20key%2B1.bin",
        "PUT /deltacells-test/cp/final/odd%20key%2B1.bin",
      ],
    );
    const back = await s.get("final/odd key+1.bin");
    assert.ok(back !== undefined && Buffer.compare(Buffer.from(back), value) === 0, "copy differs");
    assert.equal((await s.get("staged/odd key+1.bin"))?.length, value.length);
  });

  test("copy above copyThreshold is a multipart upload of UploadPartCopy ranges", async () => {
    const big = randomBytes(11 * 1024 * 1024 + 77);
    const s = new S3Store({
      ...creds,
      endpoint: proxy.url,
      bucket: BUCKET,
      prefix: "cp",
      copyThreshold: 1024 * 1024,
      copyPartSize: 5 * 1024 * 1024,
    });
    await s.set("big-src.bin", big);
    proxy.reset();
    assert.equal(await s.copy("big-src.bin", "big-dst.bin"), big.length);
    const requests = proxy.seen.map((r) => `${r.method} ${r.path.replace(/uploadId=[^&]+/, "uploadId=U")}`);
    const path = "/deltacells-test/cp/big-dst.bin";
    assert.equal(requests[0], "HEAD /deltacells-test/cp/big-src.bin");
    assert.equal(requests[1], `POST ${path}?uploads`);
    assert.deepEqual(
      requests.slice(2, -1).sort(),
      [1, 2, 3].map((n) => `PUT ${path}?partNumber=${n}&uploadId=U`),
    );
    assert.equal(requests[requests.length - 1], `POST ${path}?uploadId=U`);
    assert.ok(!requests.some((r) => r.startsWith("GET")), "no byte of the object was read");
    const back = await s.get("big-dst.bin");
    assert.ok(back !== undefined && Buffer.compare(Buffer.from(back), big) === 0, "part copy differs");
  });

  test("copy of a missing object is refused and writes nothing", async () => {
    const s = store({ prefix: "cp" });
    await assert.rejects(s.copy("nothing-here.bin", "target.bin"), /no such object/);
    assert.equal(await s.get("target.bin"), undefined);
  });

  test("a copy in parts that fails is aborted and leaves no object", async () => {
    const s = new S3Store({
      ...creds,
      endpoint: proxy.url,
      bucket: BUCKET,
      prefix: "cp",
      copyThreshold: 1024 * 1024,
      copyPartSize: 5 * 1024 * 1024,
      partConcurrency: 1,
    });
    await s.set("fail-src.bin", randomBytes(11 * 1024 * 1024));
    // HEAD, initiate, part 1 pass; part 2 refused.
    proxy.reset(["pass", "pass", "pass", "403"]);
    await assert.rejects(
      s.copy("fail-src.bin", "fail-dst.bin"),
      (err: unknown) => err instanceof HttpStatusError && err.status === 403,
    );
    const last = proxy.seen[proxy.seen.length - 1]!;
    assert.equal(last.method, "DELETE");
    assert.match(last.path, /uploadId=/);
    assert.equal(await store({ prefix: "cp" }).get("fail-dst.bin"), undefined);
  });

  test("a create-only set is a PUT with If-None-Match: *, refused as AlreadyExists when the key exists", async () => {
    const s = store();
    await s.set("lock/one", new Uint8Array([1]), { createOnly: true });
    await assert.rejects(
      s.set("lock/one", new Uint8Array([2]), { createOnly: true }),
      isTag("AlreadyExists"),
    );
    assert.deepEqual(await s.get("lock/one"), new Uint8Array([1]));
    await s.delete("lock/one");
    await s.set("lock/one", new Uint8Array([3]), { createOnly: true });
    assert.deepEqual(await s.get("lock/one"), new Uint8Array([3]));
  });

  test("reads report Last-Modified and Date, and refuse an object changed after unchangedSince", async () => {
    const s = store();
    await s.set("versioned.bin", new Uint8Array([1, 2]));
    let info: { changed?: number; readAt?: number } = {};
    await s.get("versioned.bin", { onInfo: (i) => (info = i) });
    assert.ok(info.changed !== undefined && info.readAt !== undefined && info.changed <= info.readAt);
    const since = info.readAt;
    assert.ok(
      (await s.getRange("versioned.bin", { offset: 0, length: 1 }, { unchangedSince: since })) !== undefined,
    );
    await new Promise((r) => setTimeout(r, 1100)); // Last-Modified counts whole seconds
    await s.set("versioned.bin", new Uint8Array([3, 4]));
    await assert.rejects(
      s.getRange("versioned.bin", { offset: 0, length: 1 }, { unchangedSince: since }),
      isTag("Changed"),
    );
  });

  test("delete removes an object, and deleting a missing one is not an error", async () => {
    const s = store();
    await s.set("gone.bin", new Uint8Array([1, 2]));
    await s.delete("gone.bin");
    assert.equal(await s.get("gone.bin"), undefined);
    await s.delete("gone.bin");
  });

  test("a server error is an HttpStatus error naming the URL and status", async () => {
    const s = new S3Store({ ...creds, endpoint: proxy.url, bucket: BUCKET, prefix: "data/set1" });
    proxy.reset(["500"]);
    await assert.rejects(s.get("a/object.bin"), (err: unknown) => {
      assert.ok(err instanceof HttpStatusError);
      assert.equal(err.status, 500);
      assert.match(err.message, /\/deltacells-test\/data\/set1\/a\/object\.bin answered 500/);
      return true;
    });
  });

  test("an aborted signal rejects while the server has not answered", async () => {
    const s = new S3Store({ ...creds, endpoint: proxy.url, bucket: BUCKET, prefix: "data/set1" });
    // The server never answers: only the abort can end this read (no clock involved).
    proxy.reset([], "stall");
    const controller = new AbortController();
    const reading = s.getRange("a/object.bin", { offset: 0, length: 10 }, { signal: controller.signal });
    await proxy.arrived(1);
    controller.abort();
    await assert.rejects(reading, { name: "AbortError" });
    proxy.reset();
  });

  test("openStore reads credentials, region and endpoint from the AWS environment", async () => {
    const env = {
      AWS_ACCESS_KEY_ID: "testing",
      AWS_SECRET_ACCESS_KEY: "testing",
      AWS_DEFAULT_REGION: "eu-west-1",
      AWS_ENDPOINT_URL: moto.url,
    };
    const s = openStore(`s3://${BUCKET}/data/set1`, { env, retries: 0 });
    assert.ok(s instanceof S3Store);
    assert.equal(s.url, `s3://${BUCKET}/data/set1`);
    assert.deepEqual(
      await s.getRange("a/object.bin", { offset: 0, length: 3 }),
      new Uint8Array(bytes.subarray(0, 3)),
    );
  });
});

test("the SigV4 signatures of the S3 store match botocore's for odd keys, ranges, listing and session tokens", async () => {
  const sent: { method: string; url: string; headers: Headers }[] = [];
  const s = new S3Store({
    ...creds,
    region: "eu-central-1",
    sessionToken: "token/with+odd=chars",
    endpoint: moto.url,
    bucket: BUCKET,
    prefix: "sig v4/ü",
    listPageSize: 2,
    fetch: (input, init) => {
      sent.push({ method: init?.method ?? "GET", url: String(input), headers: new Headers(init?.headers) });
      return fetch(input, init);
    },
  });
  const keys = ["a b+c.bin", "ü/€ (1)!'*~.bin", "semi;colon,comma=eq&amp@at$.bin"];
  for (const k of keys) await s.set(k, new Uint8Array([1, 2, 3]));
  for (const k of keys)
    assert.deepEqual(await s.getRange(k, { offset: 1, length: 2 }), new Uint8Array([2, 3]));
  await s.getRange(keys[0]!, { suffixLength: 1 });
  assert.deepEqual(await s.list(), [...keys].sort());
  await s.delete(keys[0]!);
  assert.ok(
    sent.some((r) => r.url.includes("continuation-token=")),
    "listing took more than one page",
  );

  const requests = sent.map((r) => {
    const auth = r.headers.get("authorization") ?? "";
    const signedNames = /SignedHeaders=([^,]+)/.exec(auth)?.[1]?.split(";") ?? [];
    const headers: Record<string, string> = {};
    for (const name of signedNames) if (name !== "host") headers[name] = r.headers.get(name) ?? "";
    return {
      method: r.method,
      url: r.url,
      headers,
      accessKeyId: "testing",
      secretAccessKey: "testing",
      region: "eu-central-1",
    };
  });
  const repo = fileURLToPath(new URL("../../../", import.meta.url));
  const expected = JSON.parse(
    execFileSync(`${repo}conformance/.venv/bin/python`, [`${repo}conformance/storage_sigv4.py`], {
      input: JSON.stringify(requests),
    }).toString(),
  ) as string[];
  assert.equal(expected.length, sent.length);
  for (const [i, r] of sent.entries()) {
    assert.equal(r.headers.get("authorization"), expected[i], `${r.method} ${r.url}`);
  }
});
