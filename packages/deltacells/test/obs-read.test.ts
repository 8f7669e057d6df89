/**
 * Reading obs: only the footers and the requested column's chunks are fetched (ranges checked
 * against the footer's column chunk offsets), per-tile access touches one row group, and the
 * local Arrow cache is used, reused and repaired.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  MemoryStore,
  type RangeQuery,
  type ReadableStore,
  StorageError,
  withStats,
} from "@deltacells/storage";
import { parquetMetadata } from "hyparquet";
import { tempDir } from "../../../test-utils/temp.js";
import { columnTable, encodeColumnFile } from "../src/arrow.js";
import { categoryLabels, encodeTile, isDeltacellsError, openDataset, writeDataset } from "../src/index.js";
import { openDataset as openNode, zstdCompressor } from "../src/node.js";
import { obsCachePath, quoteColumnName } from "../src/obs/cache-node.js";
import { obsShardKey } from "../src/obs/schema.js";
import { cellTable, obsSource } from "./obs-fixtures.js";

const compress = zstdCompressor(3);
const encoder = {
  encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 3 }),
};

async function written() {
  const store = new MemoryStore();
  const { manifest } = await writeDataset(obsSource(), store, {
    encoder,
    compress,
    tileSize: 10,
    obs: { tilesPerFile: 3 },
  });
  return { store, manifest };
}

/** A store that records every range read. */
function recording(inner: ReadableStore) {
  const ranges: { key: string; offset: number; length: number }[] = [];
  const store = {
    url: "memory://rec",
    get: (k: string, o?: object) => inner.get(k, o),
    getRange: async (k: string, r: RangeQuery, o?: object) => {
      if ("offset" in r) ranges.push({ key: k, offset: r.offset, length: r.length });
      else ranges.push({ key: k, offset: -1, length: r.suffixLength });
      return inner.getRange(k, r, o);
    },
  };
  return { store, ranges };
}

test("the writer makes 2 shards of 3 and 1 row groups and the manifest's obs fields", async () => {
  const { store, manifest } = await written();
  assert.equal(manifest.has_obs, true);
  assert.deepEqual(manifest.tile_cells, [10, 10, 10, 5]);
  assert.equal(manifest.obs_shard_bytes?.length, 2);
  for (let s = 0; s < 2; s++) {
    const bytes = (await store.get(obsShardKey(s)))!;
    assert.equal(bytes.length, manifest.obs_shard_bytes![s]);
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    assert.deepEqual(
      meta.row_groups.map((g) => Number(g.num_rows)),
      s === 0 ? [10, 10, 10] : [5],
    );
  }
  assert.deepEqual(manifest.metadata.obs_embeddings, { X_umap: 2 });
  assert.equal(manifest.metadata.obs_index, "cell id");
});

test("obs(column) reads each shard's footer and that column's chunks only, and values equal the source", async () => {
  const { store } = await written();
  const rec = recording(store);
  const ds = await openDataset(rec.store);
  const frame = await ds.obs(["cell type/ü"]);
  const col = frame.column("cell type/ü");
  assert.equal(col.kind, "category");
  assert.deepEqual(col.categories, ["B", "T", "NK"]);
  assert.equal(col.table.batches.length, 4);
  const codes = Array.from({ length: 4 }, (_, t) => Array.from(col.tile(t).toArray() as Int8Array)).flat();
  assert.deepEqual(
    codes,
    Array.from(
      cellTable(35).columns[0]!.kind === "category"
        ? (cellTable(35).columns[0] as { codes: Int32Array }).codes
        : [],
    ),
  );
  assert.equal(categoryLabels(col.categories!, [0, -1, 2]).join(","), "B,,NK");
  assert.deepEqual(col.labels([2, -1]), ["NK", null]);

  // Every range is a footer read (last 8 bytes, then the footer) or a chunk of this column.
  const allowed = new Map<string, [number, number][]>();
  for (let s = 0; s < 2; s++) {
    const bytes = (await store.get(obsShardKey(s)))!;
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const footerLen = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8).getUint32(0, true);
    const spans: [number, number][] = [
      [bytes.length - 8, bytes.length],
      [bytes.length - 8 - footerLen, bytes.length],
    ];
    for (const g of meta.row_groups) {
      const c = g.columns.find((x) => x.meta_data?.path_in_schema[0] === "cell type/ü")!.meta_data!;
      const start = Number(c.dictionary_page_offset ?? c.data_page_offset);
      spans.push([start, start + Number(c.total_compressed_size)]);
    }
    allowed.set(obsShardKey(s), spans);
  }
  assert.equal(rec.ranges.length, 2 * 2 + 4, JSON.stringify(rec.ranges));
  for (const r of rec.ranges) {
    const spans = allowed.get(r.key)!;
    assert.ok(
      spans.some(([a, b]) => r.offset >= a && r.offset + r.length <= b),
      `range ${JSON.stringify(r)} is outside the footer and the column's chunks`,
    );
  }
});

test("obsTile(t) reads one shard's footer and one chunk per column, nothing of other tiles", async () => {
  const { store } = await written();
  const counted = withStats(store);
  const ds = await openDataset(counted);
  counted.reset();
  const tile = await ds.obsTile(3, ["maybe", "donor", "flag", "n_counts", "score", "X_umap_1"]);
  // schema.json (get), the footer of shard 1 (2 ranges), 6 chunks
  assert.deepEqual(counted.stats.requests, { get: 1, getRange: 8, set: 0, delete: 0, list: 0 });
  assert.deepEqual(tile.maybe!.toArray().length, 5);
  assert.deepEqual([...tile.maybe!].slice(0, 2), [null, 310]); // cell 30 is missing (30 % 5 == 0)
  assert.equal(tile.donor!.get(0), "d2");
  assert.equal(tile.n_counts!.get(1), 31000n);
  assert.equal(tile.score!.get(4), 34 / 4);
  assert.equal(tile.X_umap_1!.get(0), 30 * 2 * 0.5 + 0.5);
  const first = await ds.obsTile(0, ["maybe", "flag", "donor"]);
  assert.equal(first.maybe!.get(0), null);
  assert.equal(first.flag!.get(7), null);
  assert.equal(first.flag!.get(1), true);
  assert.equal(first.donor!.get(3), null);
});

test("a shard whose footer is damaged is refused as a FormatError naming it, one test per damage", async () => {
  const cases: [string, (b: Uint8Array) => void][] = [
    ["no PAR1 at the end", (b) => b.fill(0, b.length - 4)],
    [
      "a footer length past the start",
      (b) => new DataView(b.buffer, b.byteOffset).setUint32(b.length - 8, b.length, true),
    ],
    [
      "footer bytes that are not thrift",
      (b) => {
        const len = new DataView(b.buffer, b.byteOffset).getUint32(b.length - 8, true);
        b.fill(0xff, b.length - 8 - len, b.length - 8);
      },
    ],
  ];
  for (const [what, damage] of cases) {
    const { store } = await written();
    const bytes = (await store.get(obsShardKey(1)))!.slice();
    damage(bytes);
    await store.set(obsShardKey(1), bytes);
    const ds = await openDataset(store);
    await assert.rejects(
      ds.obsTile(3, ["donor"]),
      (e: { _tag?: string; object?: string; message: string }) =>
        e._tag === "FormatError" &&
        /obs\/obs_0001\.parquet$/.test(e.object ?? "") &&
        /no readable parquet footer at the end \(.+\): the shard is truncated or replaced$/.test(e.message),
      what,
    );
  }
});

test("a store failure while a shard's footer is read is that failure, not a damaged footer", async () => {
  const { store } = await written();
  const failing: ReadableStore = {
    get: (k, o) => store.get(k, o),
    getRange: async (k, r, o) => {
      // The footer itself (after its 8-byte tail): as if the connection dropped.
      if (k === obsShardKey(1) && "offset" in r && r.length !== 8) throw new StorageError("connection reset");
      return store.getRange(k, r, o);
    },
  };
  const ds = await openDataset(Object.assign(failing, { url: "memory://failing" }));
  await assert.rejects(
    ds.obsTile(3, ["donor"]),
    (e: unknown) => e instanceof StorageError && !isDeltacellsError(e),
  );
});

test("rows(a, b) prints labels, nulls and numbers across tiles", async () => {
  const { store } = await written();
  const ds = await openDataset(store);
  const frame = await ds.obs(["cell id", "cell type/ü", "maybe", "flag"]);
  assert.deepEqual(frame.rows(3, 6), [
    ["cell-3", "B", 30, true],
    ["cell-4", null, 40, false],
    ["cell-5", "NK", null, true],
  ]);
  await assert.rejects(ds.obs(["nope"]), /no obs column "nope"; it has "cell id"/);
});

test("the Node entry caches each column as an Arrow file with one batch per tile, then reads it without GETs", async () => {
  const { store } = await written();
  const cacheDir = tempDir("deltacells-obs-cache-");
  const counted = withStats(store);
  const ds = await openNode(counted);
  const fp = ds.manifest.obs_fingerprint!;
  await ds.obs(["cell type/ü", "score"], { cacheDir });
  const path = obsCachePath(cacheDir, fp, "cell type/ü");
  assert.equal(path, join(cacheDir, fp, "obs", "cell%20type%2F%C3%BC.arrow"));
  assert.equal(quoteColumnName("a(b)*'!~_.-"), "a%28b%29%2A%27%21~_.-");
  assert.ok(existsSync(path));
  counted.reset();
  const again = await ds.obs(["score", "cell type/ü"], { cacheDir });
  assert.equal(counted.stats.requests.getRange, 0);
  assert.equal(again.column("score").path, obsCachePath(cacheDir, fp, "score"));
  assert.equal(again.column("score").tile(3).get(4), 34 / 4);
  // $DELTACELLS_CACHE is the next choice
  const envDir = tempDir("deltacells-obs-env-");
  process.env.DELTACELLS_CACHE = envDir;
  try {
    await ds.obs(["flag"]);
  } finally {
    delete process.env.DELTACELLS_CACHE;
  }
  assert.ok(existsSync(obsCachePath(envDir, fp, "flag")));
});

test("a cache file whose row counts disagree with the manifest is deleted and fetched again", async () => {
  const { store } = await written();
  const cacheDir = tempDir("deltacells-obs-bad-");
  const ds = await openNode(store);
  const schema = (await ds.obsSchema()).columns.find((c) => c.name === "score")!;
  const path = obsCachePath(cacheDir, ds.manifest.obs_fingerprint!, "score");
  await ds.obs(["score"], { cacheDir });
  // the right column, wrong tiling: one record batch (tile 0's 10 rows) instead of 10, 10, 10, 5
  const whole = await ds.obs(["score"], { cacheDir });
  const merged = columnTable(schema, [whole.column("score").table.batches[0]!.getChildAt(0)!.data[0]!]);
  writeFileSync(path, encodeColumnFile(merged));
  const counted = withStats(store);
  const fresh = await openNode(counted);
  const frame = await fresh.obs(["score"], { cacheDir });
  assert.ok(counted.stats.requests.getRange > 0, "fetched again");
  assert.equal(frame.column("score").table.batches.length, 4);
  assert.notDeepEqual(readFileSync(path), encodeColumnFile(merged));
});
