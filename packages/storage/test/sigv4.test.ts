/**
 * SigV4 signing of S3 requests: in Node the store signs with node:crypto's synchronous hashes
 * (`#sigv4`), and every header it sends must be exactly what aws4fetch's `AwsClient` (WebCrypto)
 * signs for the same request and moment.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { S3Store } from "@deltacells/storage";
import { AwsClient } from "aws4fetch";
import { S3Signer } from "../src/sigv4.js";

const DATETIME = "20261201T203000Z";
const creds = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };

/** Requests as the S3 store sends them: ranges, conditional and copy headers, listings, odd keys. */
const requests: [string, string, Record<string, string>][] = [
  ["GET", "http://127.0.0.1:9000/bucket/ds/tiles/tile_000001.dct", {}],
  ["GET", "http://127.0.0.1:9000/bucket/ds/tiles/tile_000001.dct", { range: "bytes=100-1099" }],
  ["HEAD", "https://s3.eu-west-1.amazonaws.com/bucket/a%20b/%C3%A9t%C3%A9%21%27%28%29%2A.bin", {}],
  ["PUT", "https://bucket.s3.us-east-1.amazonaws.com/k/v.json", { "if-none-match": "*" }],
  ["PUT", "http://localhost:4566/b/to", { "x-amz-copy-source": "/b/from%20x" }],
  [
    "GET",
    "http://127.0.0.1:9000/bucket?list-type=2&prefix=ds%2Fa%20b&max-keys=1000&continuation-token=a%2Bb%3D",
    {},
  ],
  ["POST", "http://127.0.0.1:9000/bucket/big?uploads=", { "content-type": "application/octet-stream" }],
  ["DELETE", "http://127.0.0.1:9000/bucket/big?uploadId=x~y&partNumber=3", {}],
];

for (const sessionToken of [undefined, "FQoGZXIvYXdzEJr//////////wEaDOPK+token"]) {
  for (const region of ["us-east-1", "eu-central-1"]) {
    test(`S3Signer signs as aws4fetch's AwsClient does (${region}${sessionToken ? ", session token" : ""})`, async () => {
      const c = { ...creds, region, ...(sessionToken ? { sessionToken } : {}) };
      const client = new AwsClient({ ...c, service: "s3", retries: 0 });
      const ours = new S3Signer(c);
      // The browsers' path: aws4fetch's signer with its WebCrypto hashes.
      const webCrypto = new S3Signer(c, null);
      for (const [method, url, headers] of requests) {
        const want = await client.sign(url, { method, headers, aws: { datetime: DATETIME } });
        const web = await webCrypto.sign(method, url, headers, DATETIME);
        assert.deepEqual(
          Object.fromEntries(web.headers),
          Object.fromEntries(want.headers),
          `${method} ${url}`,
        );
        const got = await ours.sign(method, url, headers, DATETIME);
        assert.equal(got.url, want.url, `${method} ${url}`);
        assert.deepEqual(
          Object.fromEntries(got.headers),
          Object.fromEntries(want.headers),
          `${method} ${url}`,
        );
        // Twice: the second signature comes from the cached signing key.
        const again = await ours.sign(method, url, headers, DATETIME);
        assert.equal(again.headers.get("authorization"), want.headers.get("authorization"));
      }
    });
  }
}

test("a different day, region or secret signs with its own key, not a cached one", async () => {
  const ours = new S3Signer({ ...creds, region: "us-east-1" });
  const url = requests[0]![1];
  const day1 = await ours.sign("GET", url, {}, DATETIME);
  const day2 = await ours.sign("GET", url, {}, "20261202T203000Z");
  const other = await new S3Signer({ ...creds, region: "us-east-1", secretAccessKey: "x" }).sign(
    "GET",
    url,
    {},
    DATETIME,
  );
  const want2 = await new AwsClient({ ...creds, region: "us-east-1", service: "s3" }).sign(url, {
    method: "GET",
    aws: { datetime: "20261202T203000Z" },
  });
  assert.equal(day2.headers.get("authorization"), want2.headers.get("authorization"));
  assert.notEqual(day1.headers.get("authorization"), day2.headers.get("authorization"));
  assert.notEqual(day1.headers.get("authorization"), other.headers.get("authorization"));
});

test("in Node the S3 store signs without WebCrypto (node:crypto, synchronously)", async (t) => {
  const subtle = globalThis.crypto.subtle;
  for (const name of ["digest", "sign", "importKey"] as const) {
    t.mock.method(subtle, name, () => {
      throw new Error(`crypto.subtle.${name} called`);
    });
  }
  let auth: string | null = null;
  const store = new S3Store({
    ...creds,
    endpoint: "http://127.0.0.1:9",
    bucket: "bucket",
    fetch: async (_input, init) => {
      auth = new Headers(init?.headers).get("authorization");
      return new Response(null, { status: 404 });
    },
  });
  assert.equal(await store.get("missing.bin"), undefined);
  assert.match(auth ?? "", /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/s3\/aws4_request, /);
});
