/** The JavaScript LZF decoder behind the h5wasm lzf fix. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { lzfDecompress } from "../src/lzf.js";

test("literal runs and overlapping back references decode", () => {
  // "abc" literal (ctrl 2), then a back reference of length 7 (ctrl len 5 -> 5 + 2) at distance 3
  const input = Uint8Array.from([2, 0x61, 0x62, 0x63, (5 << 5) | 0, 2]);
  assert.equal(new TextDecoder().decode(lzfDecompress(input, 4)), "abcabcabca");
});

test("a long back reference uses the extra length byte", () => {
  // "x" then length 7 + 10 + 2 = 19 copies at distance 1
  const input = Uint8Array.from([0, 0x78, (7 << 5) | 0, 10, 0]);
  assert.equal(new TextDecoder().decode(lzfDecompress(input, 1)), "x".repeat(20));
});

test("truncated or out-of-range input is an error, not garbage", () => {
  assert.throws(() => lzfDecompress(Uint8Array.from([5, 1, 2]), 8), /past the end/);
  assert.throws(() => lzfDecompress(Uint8Array.from([0, 1, (1 << 5) | 0, 9]), 8), /before the start/);
  assert.throws(() => lzfDecompress(Uint8Array.from([0, 1, (7 << 5) | 0]), 8), /truncated/);
});
