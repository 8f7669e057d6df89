import { strict as assert } from "node:assert";
import { test } from "node:test";
import { Utf8Strings } from "../src/obs/utf8-strings.js";

test("Utf8Strings gives back every row range of ASCII strings, with nulls", () => {
  const values = ["CELL1-1", null, "", "AAACCTG", null, "x"];
  const s = Utf8Strings.from(values);
  assert.equal(s.length, 6);
  for (let a = 0; a <= 6; a++)
    for (let b = a; b <= 6; b++) assert.deepEqual(s.slice(a, b), values.slice(a, b));
});

test("Utf8Strings keeps non-ASCII text (multi-byte UTF-8, surrogate pairs) exact", () => {
  const values = ["naïve", "細胞", null, "🧬-1", "plain", "é".repeat(100)];
  const s = Utf8Strings.from(values);
  for (let a = 0; a <= 6; a++)
    for (let b = a; b <= 6; b++) assert.deepEqual(s.slice(a, b), values.slice(a, b));
});

test("Utf8Strings grows past its first buffer", () => {
  const values = Array.from({ length: 3000 }, (_, i) => (i % 7 === 0 ? null : `v${i}-${"z".repeat(i % 40)}`));
  const s = Utf8Strings.from(values);
  assert.deepEqual(s.slice(0, 3000), values);
  assert.deepEqual(s.slice(1234, 2345), values.slice(1234, 2345));
});
