/**
 * The local obs cache against damage to its files: a byte flipped anywhere in a column file (in
 * its values, its metadata or its footer), a missing or wrong checksum record, and the file
 * truncated, emptied, replaced or deleted. Each later read, by a new localizer as a new process
 * has, gives the right values, fetches the column again, and leaves a good file behind.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { MemoryStore, withStats } from "@deltacells/storage";
import { tempDir } from "../../../test-utils/temp.js";
import { type ColumnTable, type DatasetSource, encodeTile, writeDataset } from "../src/index.js";
import { cacheLocalizer, openDataset, zstdCompressor } from "../src/node.js";
import { obsCachePath, obsChecksumPath } from "../src/obs/cache-node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

const N = 2000;

/** One column of each Arrow kind a column file can hold, with nulls where the kind has them. */
function everyKind(n: number): ColumnTable {
  return {
    indexName: "cell",
    index: Array.from({ length: n }, (_, i) => `cell-${i}`),
    columns: [
      {
        name: "type",
        kind: "category",
        codes: Int32Array.from({ length: n }, (_, i) => (i % 11 === 4 ? -1 : i % 3)),
        categories: ["B", "T", "NK"],
        ordered: false,
      },
      {
        name: "int32",
        kind: "numeric",
        values: Int32Array.from({ length: n }, (_, i) => i * 7919),
        nulls: Uint8Array.from({ length: n }, (_, i) => (i % 13 === 0 ? 1 : 0)),
      },
      {
        name: "int64",
        kind: "numeric",
        values: BigInt64Array.from({ length: n }, (_, i) => BigInt(i) << 33n),
      },
      { name: "float", kind: "numeric", values: Float32Array.from({ length: n }, (_, i) => i / 3) },
      { name: "double", kind: "numeric", values: Float64Array.from({ length: n }, (_, i) => Math.sin(i)) },
      {
        name: "flag",
        kind: "bool",
        values: Uint8Array.from({ length: n }, (_, i) => i % 2),
        nulls: Uint8Array.from({ length: n }, (_, i) => (i % 17 === 0 ? 1 : 0)),
      },
      {
        name: "donor",
        kind: "string",
        values: Array.from({ length: n }, (_, i) => (i % 19 === 0 ? null : `donor-${i % 97}`)),
      },
    ],
  };
}

/** Numbers first: without the check their flipped values are served, where flipped string offsets hang the Arrow reader. */
const COLUMNS = ["double", "float", "int64", "int32", "flag", "type", "donor", "cell"];

async function dataset() {
  const table = everyKind(N);
  const source: DatasetSource = {
    ...memorySource(randomMatrix(N, 4, 3)),
    format: "h5ad",
    obs: async () => table,
  };
  const store = new MemoryStore();
  await writeDataset(source, store, {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 1 }) },
    compress: zstdCompressor(1),
    tileSize: 500,
  });
  return store;
}

/** Every value of a column, as printed (labels, nulls, numbers). */
function values(frame: Awaited<ReturnType<Awaited<ReturnType<typeof openDataset>>["obs"]>>, name: string) {
  const c = frame.column(name);
  return Array.from({ length: frame.nCells }, (_, i) => c.value(i));
}

/** Reads `names` through a new localizer (as a new process would), counting the range reads. */
async function readFresh(store: MemoryStore, cacheDir: string, names: string[]) {
  const counted = withStats(store);
  const ds = await openDataset(counted, { obsLocalizer: cacheLocalizer() });
  const frame = await ds.obs(names, { cacheDir });
  return { frame, fetches: counted.stats.requests.getRange, fingerprint: ds.manifest.obs_fingerprint! };
}

test("a byte flipped at any of several offsets of a cached column of each kind is never served: the column is fetched again and the file repaired", async () => {
  const store = await dataset();
  const cacheDir = tempDir("deltacells-obs-flip-");
  const { frame: first, fingerprint } = await readFresh(store, cacheDir, COLUMNS);
  const expected = new Map(COLUMNS.map((n) => [n, values(first, n)]));
  for (const name of COLUMNS) {
    const path = obsCachePath(cacheDir, fingerprint, name);
    const good = readFileSync(path);
    // the batches (values, offsets, validity), a batch's metadata, the footer, the first message's
    // length (which, flipped, makes the Arrow reader spin)
    const offsets = [0.5, 0.6, 0.75, 0.9, 0.25].map((f) => Math.floor(good.length * f));
    offsets.push(good.length - 12, 10);
    for (const at of offsets) {
      const bad = Buffer.from(good);
      bad[at]! ^= 0x10;
      writeFileSync(path, bad);
      const { frame, fetches } = await readFresh(store, cacheDir, [name]);
      assert.deepEqual(values(frame, name), expected.get(name), `${name}, byte ${at} of ${good.length}`);
      assert.ok(fetches > 0, `${name}, byte ${at}: fetched again`);
      assert.deepEqual(readFileSync(path), good, `${name}, byte ${at}: the file is repaired`);
    }
  }
});

test("an undamaged cached column is read without a request, also by a new localizer", async () => {
  const store = await dataset();
  const cacheDir = tempDir("deltacells-obs-good-");
  await readFresh(store, cacheDir, ["double", "donor"]);
  const again = await readFresh(store, cacheDir, ["double", "donor"]);
  assert.equal(again.fetches, 0);
  const sum = readFileSync(obsChecksumPath(obsCachePath(cacheDir, again.fingerprint, "double")), "utf8");
  assert.match(sum, /^[0-9a-f]{64} {2}double\.arrow\n$/, "sha256sum's format, so `sha256sum -c` checks it");
});

test("a cached column whose checksum record is missing, wrong or garbage is fetched again and gets a record", async () => {
  const store = await dataset();
  const cacheDir = tempDir("deltacells-obs-sum-");
  const { frame: first, fingerprint } = await readFresh(store, cacheDir, ["double"]);
  const want = values(first, "double");
  const path = obsCachePath(cacheDir, fingerprint, "double");
  const sum = obsChecksumPath(path);
  const good = readFileSync(sum, "utf8");
  const damages: [string, () => void][] = [
    ["missing (a cache written before records were kept)", () => unlinkSync(sum)],
    ["another file's hash", () => writeFileSync(sum, `${"0".repeat(64)}  double.arrow\n`)],
    ["garbage", () => writeFileSync(sum, "\u0000\u00ff not a hash")],
    ["empty", () => writeFileSync(sum, "")],
  ];
  for (const [what, damage] of damages) {
    damage();
    const { frame, fetches } = await readFresh(store, cacheDir, ["double"]);
    assert.deepEqual(values(frame, "double"), want, what);
    assert.ok(fetches > 0, `${what}: fetched again`);
    assert.equal(readFileSync(sum, "utf8"), good, `${what}: the record is written again`);
  }
});

test("a cached column truncated, emptied, extended, swapped with another column's or deleted is fetched again", async () => {
  const store = await dataset();
  const cacheDir = tempDir("deltacells-obs-shape-");
  const { frame: first, fingerprint } = await readFresh(store, cacheDir, ["double", "float"]);
  const want = values(first, "double");
  const path = obsCachePath(cacheDir, fingerprint, "double");
  const good = readFileSync(path);
  const other = readFileSync(obsCachePath(cacheDir, fingerprint, "float"));
  const damages: [string, () => void][] = [
    ["truncated", () => writeFileSync(path, good.subarray(0, good.length >> 1))],
    ["emptied", () => writeFileSync(path, new Uint8Array(0))],
    ["extended", () => writeFileSync(path, Buffer.concat([good, Buffer.from("appended")]))],
    ["swapped", () => writeFileSync(path, other)],
    ["deleted", () => unlinkSync(path)],
  ];
  for (const [what, damage] of damages) {
    damage();
    const { frame, fetches } = await readFresh(store, cacheDir, ["double"]);
    assert.deepEqual(values(frame, "double"), want, what);
    assert.ok(fetches > 0, `${what}: fetched again`);
    assert.ok(existsSync(path));
    assert.deepEqual(readFileSync(path), good, `${what}: the file is repaired`);
  }
});
