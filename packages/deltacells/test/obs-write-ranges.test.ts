/**
 * The writer's bounded memory for obs: a source that reads its cell table by row range is asked
 * for one tile of each column at a time (and category codes in bounded slices for the check),
 * never for the whole table; and the shards it writes equal those written from the same table
 * held in memory.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import type { ColumnTableReader, TableColumn, TableColumnReader } from "../src/dataset/source.js";
import { encodeTile, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { obsShardKey } from "../src/obs/schema.js";
import { cellTable, obsSource } from "./obs-fixtures.js";

const compress = zstdCompressor(3);
const encoder = {
  encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 3 }),
};

/** The fixture's table as a row-range reader that records every range asked for. */
function rangeReader(nCells: number, ranges: [string, number, number][]): ColumnTableReader {
  const table = cellTable(nCells);
  /** Records the range read and passes its rows on. */
  const log = <T>(name: string, a: number, b: number, rows: T): T => {
    assert.ok(0 <= a && a <= b && b <= nCells, `${name}: range ${a}..${b}`);
    ranges.push([name, a, b]);
    return rows;
  };
  const reader = (col: TableColumn): TableColumnReader => {
    switch (col.kind) {
      case "category":
        return { ...col, read: async (a, b) => log(col.name, a, b, col.codes.slice(a, b)) };
      case "string":
        return { ...col, read: async (a, b) => log(col.name, a, b, col.values.slice(a, b)) };
      case "bool":
        return {
          name: col.name,
          kind: "bool",
          read: async (a, b) =>
            log(col.name, a, b, { values: col.values.slice(a, b), nulls: col.nulls?.slice(a, b) }),
        };
      case "numeric":
        return {
          name: col.name,
          kind: "numeric",
          read: async (a, b) =>
            log(col.name, a, b, { values: col.values.slice(a, b), nulls: col.nulls?.slice(a, b) }),
        };
    }
  };
  return {
    indexName: table.indexName,
    index: async (a, b) => log("index", a, b, table.index.slice(a, b)),
    columns: table.columns.map(reader),
  };
}

test("obs read by row range is read one tile at a time and writes the same shards as the table in memory", async () => {
  const nCells = 35;
  const opts = { encoder, compress, tileSize: 10, obs: { tilesPerFile: 2 } };
  const inMemory = new MemoryStore();
  await writeDataset(obsSource(nCells), inMemory, opts);

  const ranges: [string, number, number][] = [];
  const byRange = new MemoryStore();
  const source = {
    ...obsSource(nCells),
    obs: async () => assert.fail("the whole table was read although the source reads by range"),
    obsReader: async () => rangeReader(nCells, ranges),
  };
  const { manifest } = await writeDataset(source, byRange, opts);
  assert.equal(manifest.obs_shard_bytes?.length, 2);
  for (let s = 0; s < 2; s++)
    assert.deepEqual(await byRange.get(obsShardKey(s)), await inMemory.get(obsShardKey(s)), `shard ${s}`);
  // Every range lies within one tile, except the up-front check of category codes (in slices).
  const categories = new Set(
    cellTable(nCells)
      .columns.filter((c) => c.kind === "category")
      .map((c) => c.name),
  );
  const tiles = [0, 10, 20, 30, 35];
  let wholeColumn = 0;
  for (const [name, a, b] of ranges) {
    if (tiles.some((x, i) => i < 4 && a >= x && b <= tiles[i + 1]!)) continue;
    assert.ok(categories.has(name), `${name}: range ${a}..${b} spans tiles`);
    wholeColumn++;
  }
  assert.equal(wholeColumn, categories.size, "one check slice per category column");
  assert.ok(ranges.some(([n]) => n === "index"));
});
