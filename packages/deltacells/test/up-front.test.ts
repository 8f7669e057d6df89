/**
 * What the Node entries and the pool's worker load up front (their static import graph). Every
 * module there is start-up time of every process that imports them (`deltacells stream` starts
 * one per rank and data-loader worker): parquet (obs, `var.parquet`, validation) and Arrow (obs)
 * load when first used, and a decoding worker loads neither the encoder nor the WASM zstd that
 * serves only where the native one is missing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { packagesOf, upFront } from "../../../test-utils/up-front.js";

const LAZY = ["hyparquet", "hyparquet-writer", "hyparquet-compressors", "apache-arrow"];

for (const entry of ["@deltacells/core", "@deltacells/core/node"]) {
  test(`${entry} loads no parquet or Arrow library up front`, async () => {
    const files = await upFront(entry);
    assert.ok(files.has("packages/deltacells/src/dataset/reader.ts"), "the check sees the entry's modules");
    const heavy = LAZY.filter((p) => packagesOf(files).has(p));
    assert.deepEqual(heavy, []);
  });
}

test("the pool's worker loads neither the encoder nor the WASM zstd up front", async () => {
  const files = await upFront("@deltacells/core/worker");
  assert.ok(files.has("packages/deltacells/src/codec/decode.ts"), "the check sees the worker's modules");
  assert.ok(!files.has("packages/deltacells/src/codec/encode.ts"), "encode.ts is loaded up front");
  assert.ok(!packagesOf(files).has("zstddec"), "zstddec is loaded up front");
});
