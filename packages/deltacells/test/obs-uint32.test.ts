/**
 * uint32 obs columns keep values above 2^31 (parquet stores UINT_32 in INT32, bit pattern kept),
 * with and without missing values.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { encodeTile, openDataset, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

test("a uint32 column with values up to 2^32 - 1 reads back equal, nulls kept", async () => {
  const n = 12;
  const big = Uint32Array.from({ length: n }, (_, i) => 4_294_967_295 - i * 300_000_000);
  const source = {
    ...memorySource(randomMatrix(n, 4, 2)),
    format: "h5ad",
    obs: async () => ({
      indexName: null,
      index: Array.from({ length: n }, (_, i) => `c${i}`),
      columns: [
        { name: "full", kind: "numeric" as const, values: big },
        {
          name: "gaps",
          kind: "numeric" as const,
          values: big,
          nulls: Uint8Array.from({ length: n }, (_, i) => (i % 4 === 1 ? 1 : 0)),
        },
      ],
    }),
  };
  const store = new MemoryStore();
  await writeDataset(source, store, {
    encoder: {
      encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 1 }),
    },
    compress: zstdCompressor(1),
    tileSize: 5,
  });
  const frame = await (await openDataset(store)).obs(["full", "gaps"]);
  assert.equal(frame.column("full").arrowType, "uint32");
  assert.deepEqual(
    frame.rows(0, n),
    Array.from(big, (v, i) => [v, i % 4 === 1 ? null : v]),
  );
});
