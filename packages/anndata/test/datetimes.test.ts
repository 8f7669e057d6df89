/**
 * obs columns of numpy datetime64 (which anndata reads from zarr, but obs cannot hold as dates)
 * come as ISO-8601 text with their type noted, whole or by range, NaT and missing chunks as
 * null; other types the readers cannot decode (timedelta64 in zarr, h5py's opaque values in
 * .h5ad) are refused by name and type, never reported missing.
 */
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { datetimeText, parseDatetimeUnit } from "../src/datetime-text.js";
import { isAnndataError, UnsupportedColumnsError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { DATA } from "./helpers.js";

const WHEN = [
  "2024-01-01T00:00:00.000000000",
  "2024-01-02T01:01:01.000000000",
  "2024-01-03T02:02:02.000000000",
  null,
  "1969-12-31T23:59:59.999999999",
];

for (const v of [2, 3]) {
  const path = join(DATA, "anndata", `obs-datetime-v${v}.zarr`);

  test(`zarr v${v}: datetime64 obs columns read as ISO-8601 text, whole and by range, their type noted`, async () => {
    const src = await openInput(path);
    try {
      const obs = await src.obs({ exclude: ["gap"] });
      const when = obs.columns.find((c) => c.name === "when")!;
      assert.equal(when.kind, "string");
      assert.ok(when.kind === "string");
      assert.equal(when.textFrom, "datetime64[ns]");
      assert.deepEqual(when.values.slice(0, 5), WHEN);
      const day = obs.columns.find((c) => c.name === "day")!;
      assert.ok(day.kind === "string");
      assert.equal(day.textFrom, "datetime64[D]");
      assert.deepEqual(day.values.slice(0, 4), ["1999-12-30", "1999-12-31", "2000-01-01", "2000-01-02"]);
      assert.deepEqual(obs.excluded, ["gap"]);
      // by range, across the chunks of 5 rows
      const reader = (await src.obsReader({ exclude: ["gap"] }))!;
      const ranged = reader.columns.find((c) => c.name === "when")!;
      assert.ok(ranged.kind === "string");
      assert.equal(ranged.textFrom, "datetime64[ns]");
      assert.deepEqual(await ranged.read(3, 8), [...WHEN.slice(3), ...when.values.slice(5, 8)]);
    } finally {
      await src.close();
    }
  });

  test(`zarr v${v}: a timedelta64 obs column is refused by name and type, not reported missing`, async () => {
    const src = await openInput(path);
    try {
      await assert.rejects(src.obs(), (e: unknown) => {
        assert.ok(e instanceof UnsupportedColumnsError, String(e));
        assert.deepEqual(e.columns, ["gap"]);
        assert.deepEqual(e.types, ["timedelta64[s]"]);
        assert.match(e.message, /"gap" \(timedelta64\[s\]\)/);
        return true;
      });
    } finally {
      await src.close();
    }
  });
}

test("a missing chunk of a datetime64 column reads as NaT (null), zarr's fill value, not as 1970", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-datetime-"));
  try {
    for (const [v, chunk] of [
      [2, "1"],
      [3, "c/1"],
    ] as const) {
      const copy = join(dir, `obs-v${v}.zarr`);
      cpSync(join(DATA, "anndata", `obs-datetime-v${v}.zarr`), copy, { recursive: true });
      rmSync(join(copy, "obs", "when", chunk)); // rows 5 .. 9
      const src = await openInput(copy);
      try {
        const when = (await src.obs({ exclude: ["gap"] })).columns.find((c) => c.name === "when")!;
        assert.ok(when.kind === "string");
        assert.deepEqual(when.values.slice(4, 11), [WHEN[4], null, null, null, null, null, when.values[10]]);
        assert.equal(when.values[10], "2024-01-11T10:10:10.000000000", `v${v}`);
      } finally {
        await src.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a datetime64 field of a pre-0.7 zarr record array reads as ISO-8601 text", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-records-"));
  try {
    const root = join(dir, "old.zarr");
    mkdirSync(join(root, "obs"), { recursive: true });
    mkdirSync(join(root, "X"), { recursive: true });
    writeFileSync(join(root, ".zgroup"), JSON.stringify({ zarr_format: 2 }));
    const meta = (dtype: unknown, shape: number[]) =>
      JSON.stringify({
        zarr_format: 2,
        shape,
        chunks: shape,
        dtype,
        compressor: null,
        fill_value: 0,
        filters: null,
        order: "C",
      });
    writeFileSync(join(root, "X", ".zarray"), meta("<f4", [3, 2]));
    writeFileSync(join(root, "X", "0.0"), Buffer.from(Float32Array.of(1, 0, 0, 2, 3, 0).buffer));
    writeFileSync(
      join(root, "obs", ".zarray"),
      meta(
        [
          ["index", "|S2"],
          ["when", "<M8[s]"],
        ],
        [3],
      ),
    );
    const rows = Buffer.alloc(3 * 10);
    ["c0", "c1", "c2"].forEach((name, i) => {
      rows.write(name, i * 10, "latin1");
      rows.writeBigInt64LE([0n, 86_461n, -(2n ** 63n)][i]!, i * 10 + 2);
    });
    writeFileSync(join(root, "obs", "0"), rows);
    const src = await openInput(root);
    try {
      const obs = await src.obs();
      assert.deepEqual(obs.index, ["c0", "c1", "c2"]);
      assert.deepEqual(obs.columns, [
        {
          name: "when",
          kind: "string",
          values: ["1970-01-01T00:00:00", "1970-01-02T00:01:01", null],
          textFrom: "datetime64[s]",
        },
      ]);
    } finally {
      await src.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an .h5ad obs column of h5py's opaque datetime values is refused naming its HDF5 type, with the others", async () => {
  const src = await openInput(join(DATA, "anndata", "obs-unsupported.h5ad"));
  try {
    await assert.rejects(src.obs(), (e: unknown) => {
      assert.ok(isAnndataError(e, "Unsupported") && e instanceof UnsupportedColumnsError, String(e));
      assert.deepEqual(e.columns, ["when", "nested"]);
      assert.deepEqual(e.types, [
        "HDF5 opaque, 8 bytes: how h5py stores numpy datetime64 and timedelta64",
        'encoding "awkward-array"',
      ]);
      return true;
    });
  } finally {
    await src.close();
  }
});

test("datetime64 units are spelled as numpy spells them, scaled units included", () => {
  assert.deepEqual(parseDatetimeUnit("10s"), { unit: "s", scale: 10 });
  assert.deepEqual(parseDatetimeUnit("μs"), { unit: "us", scale: 1 });
  assert.equal(parseDatetimeUnit("fortnight"), undefined);
  assert.equal(datetimeText(7n, parseDatetimeUnit("10s")!), "1970-01-01T00:01:10");
  assert.equal(datetimeText(-(2n ** 63n), { unit: "D", scale: 1 }), null);
});
