import assert from "node:assert/strict";
import { test } from "node:test";
import { mulberry32 } from "../../../test-utils/prng.js";
import { decodeCells, encodeCells } from "../src/selection-code.js";

test("a selection survives its URL code: scattered cells, runs, repeats, the empty selection", () => {
  const rand = mulberry32(5);
  const scattered = Array.from({ length: 10_000 }, () => Math.floor(rand() * 1_000_000));
  const expected = [...new Set(scattered)].sort((a, b) => a - b);
  const code = encodeCells(scattered);
  assert.match(code, /^[A-Za-z0-9_-]*$/);
  assert.deepEqual(decodeCells(code, 1_000_000), expected);
  assert.ok(code.length < 30_000, `${code.length} characters`);
  const block = Array.from({ length: 50_000 }, (_, i) => 200_000 + i);
  assert.ok(encodeCells(block).length < 10);
  assert.deepEqual(decodeCells(encodeCells(block), 1_000_000), block);
  assert.deepEqual(decodeCells(encodeCells([3, 3, 1, 2, 9]), 10), [1, 2, 3, 9]);
  assert.deepEqual(decodeCells(encodeCells([]), 10), []);
});

test("a code naming cells past the dataset, cut short, or not base64 is refused", () => {
  assert.throws(() => decodeCells(encodeCells([5, 12]), 10), /past the dataset's 10/);
  assert.throws(() => decodeCells(encodeCells([200]).slice(0, 2), 1000), /cut short/);
  assert.throws(() => decodeCells("!!", 10), /not a selection code/);
});
