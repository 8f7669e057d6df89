/**
 * `#sigv4` in Node: node:crypto's synchronous HMAC and SHA-256. WebCrypto (what aws4fetch uses)
 * is asynchronous: each of a request's three calls (importKey, digest, sign) is a job on libuv's
 * thread pool and a promise back, ~0.1-0.3 ms of the calling thread per request against ~5 us here.
 */
import { createHash, createHmac } from "node:crypto";
import type { SyncSigningCrypto } from "./sigv4-crypto.js";

export const syncSigningCrypto: SyncSigningCrypto | undefined = {
  hmac: (key, data) => createHmac("sha256", key).update(data, "utf8").digest(),
  sha256Hex: (data) => createHash("sha256").update(data, "utf8").digest("hex"),
};
