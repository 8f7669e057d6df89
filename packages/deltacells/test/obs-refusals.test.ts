/**
 * One test per obs refusal: a tampered shard (SHA-256), a shard with the wrong row groups, a
 * parquet column whose type disagrees with schema.json, a schema.json that does not give the
 * manifest's fingerprint, and bad input to the writer (nothing a reader would accept is left).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import type { SchemaElement } from "hyparquet";
import { encodeManifest, MANIFEST_KEY, parseManifest } from "../src/dataset/manifest.js";
import { encodeTile, isDeltacellsError, openDataset, validateDataset, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { obsFingerprint, sha256Hex } from "../src/obs/fingerprint.js";
import { columnMismatch, parquetArrowType } from "../src/obs/parquet-type.js";
import { OBS_SCHEMA_KEY, type ObsColumnSchema, obsShardKey } from "../src/obs/schema.js";
import { obsSource } from "./obs-fixtures.js";

const compress = zstdCompressor(3);
const encoder = {
  encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 3 }),
};

async function written(tileSize = 10, tilesPerFile = 3) {
  const store = new MemoryStore();
  await writeDataset(obsSource(), store, { encoder, compress, tileSize, obs: { tilesPerFile } });
  return store;
}

/** Replace objects and fix the manifest's shard sizes, hashes and fingerprint so only the intended fault remains. */
async function consistently(store: MemoryStore, replace: Record<string, Uint8Array>) {
  for (const [k, v] of Object.entries(replace)) await store.set(k, v);
  const m = parseManifest((await store.get(MANIFEST_KEY))!, "manifest.json");
  const shards = m.obs_shard_sha256!.length;
  m.obs_shard_bytes = [];
  m.obs_shard_sha256 = [];
  for (let s = 0; s < shards; s++) {
    const bytes = (await store.get(obsShardKey(s)))!;
    m.obs_shard_bytes.push(bytes.length);
    m.obs_shard_sha256.push(await sha256Hex(bytes));
  }
  const text = new TextDecoder().decode((await store.get(OBS_SCHEMA_KEY))!);
  m.obs_fingerprint = await obsFingerprint(text, m.tile_cells, m.obs_shard_sha256);
  await store.set(MANIFEST_KEY, encodeManifest(m));
}

test("validate reports a shard whose bytes no longer match the manifest's SHA-256", async () => {
  const store = await written();
  const bytes = (await store.get(obsShardKey(1)))!.slice();
  bytes[20]! ^= 0x01;
  await store.set(obsShardKey(1), bytes);
  const report = await validateDataset(await openDataset(store));
  assert.equal(report.valid, false);
  assert.deepEqual(
    report.problems.map((p) => [p.object, p.tag]),
    [["obs/obs_0001.parquet", "InconsistentManifest"]],
  );
  assert.match(report.problems[0]!.message, /has SHA-256 [0-9a-f]{64} but the manifest says/);
});

test("a shard with the wrong row groups is refused by obs() and reported by validate", async () => {
  // shard 0 of a dataset with 15-cell tiles: row groups 15, 15, 5 where the manifest's tiles are 10, 10, 10
  const other = await written(15, 3);
  const store = await written();
  await consistently(store, { [obsShardKey(0)]: (await other.get(obsShardKey(0)))! });
  const ds = await openDataset(store);
  await assert.rejects(ds.obs(["score"]), (e) => {
    assert.ok(isDeltacellsError(e, "InconsistentManifest"), String(e));
    assert.match(
      e.message,
      /row groups of \[15,15,5\] rows, but must hold one row group per tile .*\[10,10,10\]/,
    );
    return true;
  });
  const report = await validateDataset(ds);
  assert.deepEqual(
    report.problems.map((p) => p.object),
    ["obs/obs_0000.parquet", "obs/obs_0000.parquet", "obs/obs_0000.parquet"],
  );
  assert.match(
    report.problems.map((p) => p.message).join("\n"),
    /row group 0 has 15 rows but tile 0 holds 10 cells/,
  );
});

test("a shard with a row group too few is refused", async () => {
  const other = await written(10, 2); // shard 0 holds tiles 0 and 1 only
  const store = await written(10, 3);
  await consistently(store, { [obsShardKey(0)]: (await other.get(obsShardKey(0)))! });
  const report = await validateDataset(await openDataset(store));
  assert.match(
    report.problems[0]!.message,
    /has 2 row groups but must hold one per tile: tiles 0 \.\. 2 \(3\)/,
  );
});

test("a schema.json whose Arrow type disagrees with the parquet column is refused by obs() and validate", async () => {
  const store = await written();
  const schema = JSON.parse(new TextDecoder().decode((await store.get(OBS_SCHEMA_KEY))!));
  const score = schema.columns.find((c: { name: string }) => c.name === "score");
  score.arrow_type = "double"; // the shards hold float32
  await consistently(store, { [OBS_SCHEMA_KEY]: new TextEncoder().encode(JSON.stringify(schema)) });
  const ds = await openDataset(store);
  await assert.rejects(ds.obs(["score"]), (e) => {
    assert.ok(isDeltacellsError(e, "InconsistentManifest"), String(e));
    assert.match(
      e.message,
      /column "score" is FLOAT OPTIONAL, Arrow type float, but obs\/schema\.json says numeric double/,
    );
    return true;
  });
  const report = await validateDataset(ds);
  assert.equal(report.problems.length, 2); // both shards
  assert.match(
    report.problems[0]!.message,
    /column "score" is FLOAT OPTIONAL, Arrow type float, but obs\/schema\.json says numeric double/,
  );
  // the other columns still read
  assert.equal((await ds.obs(["maybe"])).column("maybe").table.numRows, 35);
});

test("a parquet column's Arrow type is read off its physical type and either annotation, as a parquet reader does", () => {
  const el = (e: Partial<SchemaElement>): SchemaElement => ({ name: "c", repetition_type: "OPTIONAL", ...e });
  const cases: [Partial<SchemaElement>, string | undefined][] = [
    [{ type: "INT32" }, "int32"],
    [{ type: "INT32", converted_type: "INT_8" }, "int8"],
    [{ type: "INT32", logical_type: { type: "INTEGER", bitWidth: 16, isSigned: true } }, "int16"],
    [{ type: "INT32", logical_type: { type: "INTEGER", bitWidth: 32, isSigned: false } }, "uint32"],
    [
      {
        type: "INT32",
        converted_type: "UINT_8",
        logical_type: { type: "INTEGER", bitWidth: 8, isSigned: false },
      },
      "uint8",
    ],
    [{ type: "INT64" }, "int64"],
    [{ type: "INT64", logical_type: { type: "INTEGER", bitWidth: 64, isSigned: false } }, "uint64"],
    [{ type: "FLOAT" }, "float"],
    [{ type: "DOUBLE" }, "double"],
    [{ type: "BOOLEAN" }, "bool"],
    [{ type: "BYTE_ARRAY", converted_type: "UTF8" }, "string"],
    [{ type: "BYTE_ARRAY", logical_type: { type: "STRING" } }, "string"],
    // annotations that make the column something no obs column is
    [{ type: "INT32", converted_type: "DATE" }, undefined],
    [
      { type: "INT64", logical_type: { type: "TIMESTAMP", isAdjustedToUTC: false, unit: "NANOS" } },
      undefined,
    ],
    [
      {
        type: "INT32",
        converted_type: "INT_8",
        logical_type: { type: "INTEGER", bitWidth: 16, isSigned: true },
      },
      undefined,
    ],
    [{ type: "INT32", converted_type: "INT_64" }, undefined],
    [{ type: "BYTE_ARRAY" }, undefined],
    [{ type: "BYTE_ARRAY", logical_type: { type: "JSON" } }, undefined],
    [{ type: "INT96" }, undefined],
  ];
  for (const [e, want] of cases) assert.equal(parquetArrowType(el(e)), want, JSON.stringify(e));
  const codes: ObsColumnSchema = { name: "c", kind: "category", arrow_type: "int8", categories: ["a"] };
  // nullable or required codes alike; a repeated column never
  assert.equal(columnMismatch(el({ type: "INT32", converted_type: "INT_8" }), codes), undefined);
  assert.equal(
    columnMismatch(el({ type: "INT32", converted_type: "INT_8", repetition_type: "REQUIRED" }), codes),
    undefined,
  );
  assert.equal(
    columnMismatch(el({ type: "INT32", converted_type: "INT_8", repetition_type: "REPEATED" }), codes),
    "INT32 INT_8 REPEATED",
  );
  assert.equal(columnMismatch(undefined, codes), "missing");
});

test("a schema.json replaced after conversion does not give the fingerprint and is refused", async () => {
  const store = await written();
  const text = new TextDecoder().decode((await store.get(OBS_SCHEMA_KEY))!);
  await store.set(OBS_SCHEMA_KEY, new TextEncoder().encode(text.replace('"NK"', '"NK cells"')));
  const ds = await openDataset(store);
  await assert.rejects(
    ds.obsSchema(),
    (e) => isDeltacellsError(e, "InconsistentManifest") && /fingerprint/.test(e.message),
  );
  const report = await validateDataset(ds);
  assert.deepEqual(
    report.problems.map((p) => p.object),
    ["manifest.json"],
  );
  assert.match(
    report.problems[0]!.message,
    /obs_fingerprint is [0-9a-f]{24} but schema\.json, tile_cells and the shards' hashes give/,
  );
});

test("the writer refuses an obs column of the wrong length and leaves no manifest", async () => {
  const store = await written();
  const src = obsSource();
  const table = await src.obs!();
  const bad = {
    ...src,
    obs: async () => ({ ...table, columns: [{ name: "short", kind: "string" as const, values: ["a"] }] }),
  };
  // over an existing dataset: refused before the old manifest is touched
  await assert.rejects(
    writeDataset(bad, store, { encoder, compress, tileSize: 10 }),
    (e) =>
      isDeltacellsError(e, "InvalidInput") && /obs column "short" has 1 rows, expected 35/.test(e.message),
  );
  assert.ok(await store.get(MANIFEST_KEY), "the earlier dataset is still whole");
  const fresh = new MemoryStore();
  await assert.rejects(writeDataset(bad, fresh, { encoder, compress, tileSize: 10 }));
  assert.deepEqual(await fresh.list(""), []);
});

test("the writer refuses category codes outside the vocabulary and an embedding column clashing with a column", async () => {
  const src = obsSource();
  const table = await src.obs!();
  const codes = Int32Array.from({ length: 35 }, (_, i) => (i === 9 ? 3 : 0));
  const badCodes = {
    ...src,
    obs: async () => ({
      ...table,
      columns: [{ name: "c", kind: "category" as const, codes, categories: ["a", "b", "c"], ordered: false }],
    }),
  };
  await assert.rejects(
    writeDataset(badCodes, new MemoryStore(), { encoder, compress }),
    /cell 9 has category code 3, outside -1 \.\. 2/,
  );
  const clash = {
    ...src,
    obs: async () => ({
      ...table,
      columns: [{ name: "X_umap_0", kind: "string" as const, values: new Array(35).fill("x") }],
    }),
  };
  await assert.rejects(
    writeDataset(clash, new MemoryStore(), { encoder, compress }),
    /two obs columns would be named "X_umap_0"/,
  );
});
