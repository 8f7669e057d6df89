import assert from "node:assert/strict";
import { test } from "node:test";
import { loadZstd } from "@deltacells/core";
import { crc32, crc32Combine } from "../src/codec/crc32.js";
import { checksum } from "../src/codec/layout.js";
import { prng } from "./codec-helpers.js";

test("CRC-32 is zlib's: the check value of '123456789' is 0xcbf43926", () => {
  assert.equal(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
  assert.equal(crc32(new Uint8Array(0)), 0);
});

test("the native CRC (Node's zlib) and the TypeScript one agree", async () => {
  await loadZstd();
  const rnd = prng(3);
  for (const n of [0, 1, 7, 8, 9, 1000, 65_537]) {
    const b = Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
    assert.equal(checksum(b), crc32(b), `length ${n}`);
  }
});

test("combining the CRCs of parts gives the CRC of the whole, for any split", () => {
  const rnd = prng(4);
  const b = Uint8Array.from({ length: 100_003 }, () => Math.floor(rnd() * 256));
  const whole = crc32(b);
  for (const parts of [1, 2, 3, 7]) {
    let c = 0;
    for (let i = 0; i < parts; i++) {
      const lo = Math.floor((b.length * i) / parts);
      const hi = Math.floor((b.length * (i + 1)) / parts);
      c = crc32Combine(c, crc32(b.subarray(lo, hi)), hi - lo);
    }
    assert.equal(c, whole, `${parts} parts`);
  }
  for (const cut of [0, 1, 50_000, 100_002, 100_003]) {
    assert.equal(crc32Combine(crc32(b.subarray(0, cut)), crc32(b.subarray(cut)), b.length - cut), whole);
  }
});
