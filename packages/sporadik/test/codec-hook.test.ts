/**
 * Chunk decoding goes through zarrita's codec registry, so a faster compressor (a native zstd in
 * Node) is plugged in with `registry.set` before the first read, without touching this package.
 * Its own file: the registry is process-wide and node's runner gives each test file a process.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { registry } from "zarrita";
import { layoutFromCoords, openReader, writeStore } from "../src/index.js";
import { plain, randomCoords } from "./helpers.js";

test("a zstd registered with zarrita's registry is the one chunks are read and written with", async () => {
  const original = registry.get("zstd");
  assert.ok(original);
  const Zstd = (await original()) as unknown as {
    fromConfig(config: unknown): {
      encode(b: Uint8Array): Promise<Uint8Array>;
      decode(b: Uint8Array): Promise<Uint8Array>;
    };
  };
  const calls = { encode: 0, decode: 0 };
  const Counting = {
    fromConfig(config: unknown) {
      const inner = Zstd.fromConfig(config);
      return {
        encode: (bytes: Uint8Array) => {
          calls.encode++;
          return inner.encode(bytes);
        },
        decode: (bytes: Uint8Array) => {
          calls.decode++;
          return inner.decode(bytes);
        },
      };
    },
  };
  registry.set("zstd", async () => Counting as never);
  const spec = randomCoords([30, 20], 0.2, 91);
  const layout = layoutFromCoords([30, 20], spec.coords, new Float32Array(spec.values), 0);
  const store = new MemoryStore();
  await writeStore(store, layout, { chunk: 16 });
  assert.ok(calls.encode > 10);
  const reader = await openReader(store);
  const { values } = await reader.sliceAt(4);
  const indptr = layout.indptr as Int32Array;
  assert.deepEqual(plain(values), plain(layout.data.subarray(indptr[4], indptr[5])));
  assert.ok(calls.decode >= 3);
});
