/**
 * One rule for "is this a URL": a scheme of two or more characters before a colon. Every package
 * and the command decide it through parseLocation, so a location is never a URL to one reader and
 * a path to another.
 */
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { test } from "node:test";
import { isRemoteLocation, joinLocation, localPath, parseLocation } from "@deltacells/storage/node";

test("a scheme of two or more characters makes a URL; anything else, a drive letter included, is a path", () => {
  const cases: [string, ReturnType<typeof parseLocation>][] = [
    ["s3://bucket/ds", { kind: "url", scheme: "s3", url: "s3://bucket/ds" }],
    ["HTTPS://Host/x", { kind: "url", scheme: "https", url: "HTTPS://Host/x" }],
    ["file:///data/ds", { kind: "url", scheme: "file", url: "file:///data/ds" }],
    ["memory://m", { kind: "url", scheme: "memory", url: "memory://m" }],
    ["git+ssh://h/r", { kind: "url", scheme: "git+ssh", url: "git+ssh://h/r" }],
    // a scheme without "//" is still a URL (openStore refuses it as one, never as a missing path)
    ["s3:bucket", { kind: "url", scheme: "s3", url: "s3:bucket" }],
    ["C:\\data\\ds", { kind: "path", path: "C:\\data\\ds" }],
    ["c:/data", { kind: "path", path: "c:/data" }],
    ["data/ds", { kind: "path", path: "data/ds" }],
    ["/abs/ds", { kind: "path", path: "/abs/ds" }],
    ["./s3://x", { kind: "path", path: "./s3://x" }],
    ["1ab://x", { kind: "path", path: "1ab://x" }],
  ];
  for (const [location, expected] of cases) assert.deepEqual(parseLocation(location), expected, location);
});

test("remote locations are URLs other than file://; localPath resolves paths and file:// URLs only", () => {
  assert.equal(isRemoteLocation("s3://b/x"), true);
  assert.equal(isRemoteLocation("https://h/x"), true);
  assert.equal(isRemoteLocation("file:///data/x"), false);
  assert.equal(isRemoteLocation("data/x"), false);
  assert.equal(localPath("data/x"), resolve("data/x"));
  assert.equal(localPath("file:///data/x%20y"), "/data/x y");
  assert.equal(localPath("s3://b/x"), undefined);
  assert.equal(localPath("https://h/x"), undefined);
});

test("joinLocation puts a relative path inside a path or URL with one slash", () => {
  assert.equal(joinLocation("s3://bucket/ds/", "sporadik"), "s3://bucket/ds/sporadik");
  assert.equal(joinLocation("https://h/ds//", "/a/b"), "https://h/ds/a/b");
  assert.equal(joinLocation("data/ds", "sporadik"), "data/ds/sporadik");
  assert.equal(joinLocation("file:///data/ds", ".deltacells-lock"), "file:///data/ds/.deltacells-lock");
});
