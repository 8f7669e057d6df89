/**
 * `deltacells stream` starts its pool's workers before it loads the rest of the library: what the
 * command's module loads up front (its static import graph) is the pool and the argument parser,
 * never the dataset reader, the loader or apache-arrow, which load while the workers start.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { packagesOf, upFront } from "../../../test-utils/up-front.js";

test("deltacells stream loads the tile pool up front and nothing heavy", async () => {
  const files = await upFront("packages/cli/src/stream/command.ts");
  assert.ok(files.has("packages/deltacells/src/codec/pool/pool.ts"), "the pool is there to start");
  const heavy = [
    "packages/deltacells/src/dataset/reader.ts",
    "packages/deltacells/src/loader/loader.ts",
    "packages/deltacells/src/loader/arrow-output.ts",
  ].filter((f) => files.has(f));
  assert.deepEqual(heavy, []);
  assert.ok(!packagesOf(files).has("apache-arrow"), "apache-arrow is loaded up front");
});
