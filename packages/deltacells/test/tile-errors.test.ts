/**
 * Every error a damaged tile raises names the tile, whichever way it is read: `ds.cells()`,
 * `ds.tiles()` (what export uses), with or without a worker pool, and `validateDataset`. Mutants
 * flip a byte in each region of the tile: header fields, chunk table, indptr, chunk payloads.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { tileKey } from "../src/dataset/manifest.js";
import {
  createTilePool,
  type DeltacellsError,
  decodeTile,
  encodeTile,
  isDeltacellsError,
  openDataset,
  readTileHeader,
  validateDataset,
  writeDataset,
} from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

const TILE = 1;

async function dataset() {
  const store = new MemoryStore();
  const codec = {
    encode: (rows: Parameters<typeof encodeTile>[0]) => encodeTile(rows, { level: 3 }),
    decode: decodeTile,
  };
  await writeDataset(memorySource(randomMatrix(96, 40, 3), { blockCells: 16 }), store, {
    encoder: codec,
    compress: zstdCompressor(3),
    tileSize: 32,
    nChunks: 3,
    level: 3,
  });
  return store;
}

/** Offsets covering each region of the tile once or more (header fields one by one). */
function offsets(tile: Uint8Array): number[] {
  const h = readTileHeader(tile);
  const out = new Set<number>();
  for (let o = 0; o < 64; o++) out.add(o);
  for (let o = 64; o < h.indptrOff; o += 3) out.add(o); // chunk table
  for (let o = h.indptrOff; o < tile.length; o += Math.max(1, Math.floor((tile.length - h.indptrOff) / 60)))
    out.add(o); // indptr and chunk payloads
  out.add(tile.length - 1);
  return [...out];
}

function namesTile(err: unknown, where: string, offset: number): void {
  assert.ok(isDeltacellsError(err), `${where} @${offset}: a tagged error, got ${String(err)}`);
  const object = (err as DeltacellsError).object;
  assert.ok(
    typeof object === "string" && object.endsWith(tileKey(TILE)),
    `${where} @${offset}: err.object ${JSON.stringify(object)} names ${tileKey(TILE)} (${(err as Error).message})`,
  );
  assert.ok(
    (err as Error).message.includes(tileKey(TILE)),
    `${where} @${offset}: the message names the tile`,
  );
}

for (const threads of [undefined, 2]) {
  test(`every error of a damaged tile names the tile (${threads ? "worker pool" : "this thread"})`, async (t) => {
    const store = await dataset();
    // one pool for every mutant: starting workers per mutant costs seconds each
    const pool = threads ? createTilePool({ threads }) : undefined;
    t.after(() => pool?.close());
    const clean = (await store.get(tileKey(TILE))) as Uint8Array;
    let refused = 0;
    for (const offset of offsets(clean)) {
      const bad = clean.slice();
      bad[offset] = (bad[offset] as number) ^ 0x5a;
      await store.set(tileKey(TILE), bad);
      const ds = await openDataset(store, pool ? { decoder: pool } : {});
      try {
        for (const [where, read] of [
          ["cells", () => ds.cells(32, 64)],
          [
            "tiles",
            async () => {
              for await (const t of ds.tiles()) t.tile.release();
            },
          ],
        ] as const) {
          try {
            await read();
          } catch (err) {
            refused++;
            namesTile(err, where, offset);
          }
        }
        if (!threads) {
          const report = await validateDataset(ds);
          for (const p of report.problems) assert.equal(p.object, tileKey(TILE), `validate @${offset}`);
        }
      } finally {
        await ds.close?.();
      }
    }
    assert.ok(refused > 100, `most mutants are refused (${refused})`);
  });
}
