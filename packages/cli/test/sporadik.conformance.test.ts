/**
 * `deltacells convert --format sporadik`, `deltacells slice`, and `inspect`/`validate` on sporadik
 * stores, run in this process (cli-helpers' `cli`). Every store is read back by Python sporadik
 * (describe, the whole layouts against the input as independent readers load it, slices_at against
 * `slice --json`), in one Python process for the file (conformance/cli_sporadik.py).
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { cli, PYTHON, run, tempDir } from "./cli-helpers.js";

const H5 = "data/10x-v3-chr21/filtered_feature_bc_matrix.h5";
const MTX = "data/anndata/cells-by-genes.mtx";
const dir = tempDir();
const DATASET = join(dir, "ds");

interface Store {
  name: string;
  /** The convert arguments after OUTPUT. */
  from: string;
  args: string[];
  /** What Python loads as the matrix the store must equal. */
  input: { kind: string; path: string; transpose?: boolean };
  axes: number[];
  byteAddressable: boolean;
}

const h5 = { kind: "10x-h5", path: H5 };
const STORES: Store[] = [
  { name: "h5-chunked", from: H5, args: [], input: h5, axes: [0, 1], byteAddressable: false },
  {
    name: "h5-bytes",
    from: H5,
    args: ["--byte-addressable"],
    input: h5,
    axes: [0, 1],
    byteAddressable: true,
  },
  { name: "ds-chunked", from: DATASET, args: [], input: h5, axes: [0, 1], byteAddressable: false },
  {
    name: "ds-bytes-axis1",
    from: DATASET,
    args: ["--byte-addressable", "--axes", "1"],
    input: h5,
    axes: [1],
    byteAddressable: true,
  },
  {
    name: "mtx-transposed-axis0",
    from: MTX,
    args: ["--transpose", "--axes", "0"],
    input: { kind: "mtx", path: MTX, transpose: true },
    axes: [0],
    byteAddressable: false,
  },
];

/** The positions asked along each axis: out of order, repeated, first and last. */
const POSITIONS: Record<number, number[]> = { 0: [3, 1106, 10, 11, 3, 0], 1: [5, 0, 506, 5, 200] };
const MTX_POSITIONS = [0, 2, 1];

const path = (s: Store) => join(dir, `${s.name}.zarr`);
const positionsFor = (s: Store, axis: number) => (s.from === MTX ? MTX_POSITIONS : POSITIONS[axis]!);

interface PySlices {
  axis: number;
  positions: number[];
  slices: { position: number; indices: number[]; values: number[] }[];
  dense: number[][];
}
interface PyResult {
  error?: string;
  describe: {
    spec: string;
    shape: number[];
    layouts: Record<string, { nnz: number; dtype: string; range_readable: boolean; has_maxima: boolean }>;
  };
  problems: string[];
  slices: PySlices[];
}

const converted = new Map<string, Record<string, unknown>>();
const sliced = new Map<string, { slices: unknown[] }>();
const python = new Map<string, PyResult>();

/** Convert one store, then slice it along each of its axes with `--json`. */
async function convertAndSlice(s: Store): Promise<void> {
  const r = await cli(
    "convert",
    s.from,
    path(s),
    "--format",
    "sporadik",
    "--threads",
    "1",
    "--json",
    ...s.args,
  );
  assert.equal(r.code, 0, `${s.name}: ${r.stderr}`);
  converted.set(s.name, JSON.parse(r.stdout));
  for (const axis of s.axes) {
    const sl = await cli(
      "slice",
      path(s),
      "--axis",
      String(axis),
      ...positionsFor(s, axis).map(String),
      "--json",
    );
    assert.equal(sl.code, 0, `${s.name} axis ${axis}: ${sl.stderr}`);
    sliced.set(`${s.name}/${axis}`, JSON.parse(sl.stdout));
  }
}

before(async () => {
  const ds = await cli("convert", H5, DATASET, "--tile-size", "100", "--level", "3", "--threads", "1");
  assert.equal(ds.code, 0, ds.stderr);
  for (const s of STORES) await convertAndSlice(s);
  const jobs = STORES.map((s) => ({
    store: path(s),
    input: s.input,
    slices: s.axes.map((axis) => ({ axis, positions: positionsFor(s, axis) })),
  }));
  const file = join(dir, "jobs.json");
  writeFileSync(file, JSON.stringify(jobs));
  const py = await run(PYTHON, ["conformance/cli_sporadik.py", file]);
  assert.equal(py.code, 0, py.stderr);
  const lines = py.stdout.trim().split("\n");
  STORES.forEach((s, i) => {
    python.set(s.name, JSON.parse(lines[i] ?? `{"error": "no line for ${s.name}: ${py.stderr}"}`));
  });
});

for (const s of STORES) {
  test(`convert --format sporadik ${s.args.map((a) => `${a} `).join("")}from ${s.from === DATASET ? "a deltacells dataset" : s.from} gives a store Python sporadik reads as exactly the input`, () => {
    const py = python.get(s.name)!;
    assert.equal(py.error, undefined);
    assert.deepEqual(py.problems, []);
    assert.deepEqual(Object.keys(py.describe.layouts).map(Number), s.axes);
    const summary = converted.get(s.name)!;
    assert.deepEqual(py.describe.shape, [summary.n_cells, summary.n_genes]);
    for (const layout of Object.values(py.describe.layouts)) {
      assert.equal(layout.nnz, summary.nnz);
      assert.equal(layout.dtype, "int32");
      assert.equal(layout.range_readable, s.byteAddressable);
      assert.equal(layout.has_maxima, true);
    }
    assert.equal(summary.gene_order, s.from === DATASET ? "source" : "input");
  });

  for (const axis of s.axes) {
    test(`slice --json on ${s.name} along axis ${axis} answers what Python's slices_at answers`, () => {
      const py = python.get(s.name)!.slices.find((x) => x.axis === axis)!;
      const ours = sliced.get(`${s.name}/${axis}`)!;
      assert.deepEqual(ours.slices, py.slices);
      assert.ok(
        py.slices.some((x) => x.values.length > 0),
        "the positions asked for hold values",
      );
    });
  }
}

test("slice --dense prints what Python's Selection.to_dense gives", async () => {
  const s = STORES[1]!;
  const r = await cli("slice", path(s), "--axis", "1", ...POSITIONS[1]!.map(String), "--dense", "--json");
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.dense_shape, [POSITIONS[1]!.length, 1107]);
  const py = python.get(s.name)!.slices.find((x) => x.axis === 1)!;
  assert.deepEqual(
    out.slices.map((x: { values: number[] }) => x.values),
    py.dense,
  );
});

test("a range A:B is the positions A to B-1, in place among the others", async () => {
  const s = STORES[0]!;
  const r = await cli("slice", path(s), "--axis", "0", "10:13", "2", "1105:", "--json");
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(
    out.slices.map((x: { position: number }) => x.position),
    [10, 11, 12, 2, 1105, 1106],
  );
  const single = JSON.parse((await cli("slice", path(s), "--axis", "0", "11", "--json")).stdout);
  assert.deepEqual(out.slices[1], single.slices[0]);
});

test("slice --stats on a byte-addressable store shows two waves: a bracket per position, then an indices and a data run", async () => {
  const s = STORES[1]!;
  const positions = [3, 100, 500, 900]; // far apart, so nothing merges
  const r = await cli("slice", path(s), "--axis", "0", ...positions.map(String), "--json", "--stats");
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  const nnz = out.slices.reduce((a: number, x: { values: number[] }) => a + x.values.length, 0);
  assert.ok(nnz > 0);
  assert.deepEqual(out.reads.slices, {
    requests: { get: 0, get_range: 3 * positions.length },
    // int32 brackets of two entries, then four bytes of index and four of value per nonzero
    bytes_read: 8 * positions.length + 8 * nnz,
    waves: 2,
  });
  // describing the store: the root, then every layout's metadata together
  assert.equal(out.reads.describe.waves, 2);
  assert.equal(out.reads.describe.requests.get_range, 0);
  assert.equal(out.stats.requests.get_range, 3 * positions.length);

  const text = await cli("slice", path(s), "--axis", "0", ...positions.map(String), "--stats");
  assert.match(text.stderr, /^stats: \d+ requests/m);
  assert.match(text.stderr, /slices 12 requests \(get 0, getRange 12\), [\d.]+ (B|KiB), 2 waves/);
});

test("slice --stats on a chunked store shows two waves, each chunk fetched once", async () => {
  const s = STORES[0]!;
  const r = await cli("slice", path(s), "--axis", "1", "5", "6", "300", "5", "--json", "--stats");
  assert.equal(r.code, 0, r.stderr);
  const reads = JSON.parse(r.stdout).reads.slices;
  // this small store has one chunk per array: indptr, then indices and data
  assert.deepEqual(reads.requests, { get: 3, get_range: 0 });
  assert.equal(reads.waves, 2);
});

test("slice prints each position's nonzeros for people", async () => {
  const r = await cli("slice", path(STORES[0]!), "--axis", "0", "3");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /axis 0 of \[1107, 507\] \(int32\), 1 position, 11 nonzeros/);
  assert.match(r.stdout, /^ {2}3: 11 nonzeros: 138=1 164=1 214=2 /m);
});

test("slice without --axis is a usage error, even on a store with one layout", async () => {
  for (const s of [STORES[0]!, STORES[3]!]) {
    const r = await cli("slice", path(s), "3");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--axis is required/);
    assert.equal(r.stdout, "");
  }
});

test("slice along an axis the store has no layout for is refused with sporadik's error", async () => {
  const r = await cli("slice", path(STORES[3]!), "--axis", "0", "3");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^deltacells slice: error \[LayoutError\]: .*compresses \[1\], not axis 0/m);
  assert.equal(r.stdout, "");
});

test("a position outside the axis is refused with the reader's range error, before any slice is read", async () => {
  const r = await cli("slice", path(STORES[1]!), "--axis", "1", "3", "507", "--stats");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /\[PositionError\]: 507 is not a position along axis 1 of shape \[1107, 507\]/);
  const range = await cli("slice", path(STORES[1]!), "--axis", "1", "500:600");
  assert.equal(range.code, 1);
  assert.match(range.stderr, /\[PositionError\]: 507 is not a position along axis 1/);
});

test("a malformed position is a usage error", async () => {
  for (const bad of ["x", "3:1", "1.5"]) {
    const r = await cli("slice", path(STORES[0]!), "--axis", "0", bad);
    assert.equal(r.code, 2, bad);
    assert.match(r.stderr, /POSITION|range/);
  }
});

test("convert --format sporadik refuses a matrix above --max-nnz before writing anything, naming the bound", async () => {
  const out = join(dir, "too-big.zarr");
  const r = await cli("convert", H5, out, "--format", "sporadik", "--max-nnz", "1000");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /\[TooManyNonzeros\]: .* holds at least [\d,]+ nonzeros, above the bound of 1,000 /);
  assert.ok(!existsSync(out));
  // a dataset states its nonzeros: refused from the manifest, before any tile is read
  const d = await cli("convert", DATASET, out, "--format", "sporadik", "--max-nnz", "23865", "--stats");
  assert.equal(d.code, 1);
  assert.match(d.stderr, /holds 23,866 nonzeros, above the bound of 23,865/);
  assert.ok(!existsSync(out));
});

test("sporadik and deltacells options are refused with the other format", async () => {
  const out = join(dir, "never");
  for (const args of [
    ["--format", "sporadik", "--tile-size", "16"],
    ["--byte-addressable"],
    ["--axes", "0"],
    ["--format", "sporadik", "--axes", "2"],
    ["--format", "parquet"],
  ]) {
    const r = await cli("convert", H5, out, ...args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, /Run `deltacells convert --help`/);
  }
  assert.ok(!existsSync(out));
});

test("inspect describes a sporadik store from its metadata alone", async () => {
  const s = STORES[3]!;
  const r = await cli("inspect", path(s), "--json", "--stats");
  assert.equal(r.code, 0, r.stderr);
  const info = JSON.parse(r.stdout);
  assert.equal(info.format, "sporadik");
  assert.deepEqual(info.shape, [1107, 507]);
  assert.equal(info.nnz, 23866);
  assert.deepEqual(info.indexed_axes, [1]);
  assert.equal(info.layouts[0].byte_addressable, true);
  assert.equal(info.layouts[0].has_maxima, true);
  assert.deepEqual(info.layouts[0].chunks, { data: 23866, indices: 23866, indptr: 508 });
  // the root, then the layout group and its four arrays' metadata
  assert.equal(info.stats.requests.get, 1 + 5);
  assert.equal(info.stats.requests.get_range, 0);
  const human = await cli("inspect", path(STORES[0]!));
  assert.match(human.stdout, /sporadik spec 1/);
  assert.match(human.stdout, /layouts\/axis1 +csc_matrix, index_order \[0\], 507 slices/);
});

test("inspect on a zarr group that is no sporadik store says it is neither", async () => {
  const r = await cli("inspect", "data/anndata/csr-v3.zarr");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /neither a deltacells dataset .* nor a readable sporadik store: .*'sporadik' block/);
});

test("validate passes a sporadik store and lists a damaged indptr", async () => {
  const good = await cli("validate", path(STORES[1]!), "--json");
  assert.equal(good.code, 0, good.stdout + good.stderr);
  assert.equal(JSON.parse(good.stdout).layouts_checked, 2);

  const copy = join(dir, "damaged.zarr");
  cpSync(path(STORES[1]!), copy, { recursive: true });
  const key = join(copy, "layouts/axis0/indptr/c/0");
  const raw = readFileSync(key);
  const indptr = new Int32Array(raw.buffer, raw.byteOffset, raw.length / 4);
  indptr[5] = 0; // slice 4 now ends before it starts
  writeFileSync(key, raw);
  const bad = await cli("validate", copy);
  assert.equal(bad.code, 1);
  assert.match(bad.stdout, /INVALID, \d+ problem/);
  assert.match(bad.stdout, /layouts\/axis0\/indptr: \[LayoutError\] indptr decreases at slice 4/);
});

test("validate names a missing indices chunk (zarr reads it as zeros) and a damaged one", async () => {
  const missing = join(dir, "missing-indices.zarr");
  cpSync(path(STORES[0]!), missing, { recursive: true });
  rmSync(join(missing, "layouts/axis0/indices/c/0"));
  const one = await cli("validate", missing);
  assert.equal(one.code, 1, one.stdout);
  assert.match(
    one.stdout,
    /layouts\/axis0\/indices\/c\/0: \[IncompleteError\] .*strictly increasing.* is missing from the store and was read as zeros/,
  );

  const damaged = join(dir, "damaged-indices.zarr");
  cpSync(path(STORES[1]!), damaged, { recursive: true });
  const key = join(damaged, "layouts/axis1/indices/c/0");
  const raw = readFileSync(key);
  new Int32Array(raw.buffer, raw.byteOffset, raw.length / 4).fill(0, 0, 64); // genes' cell positions lost
  writeFileSync(key, raw);
  const two = await cli("validate", damaged);
  assert.equal(two.code, 1, two.stdout);
  assert.match(
    two.stdout,
    /layouts\/axis1\/indices\/c\/0: \[LayoutError\] .*strictly increasing.* is damaged/,
  );
});

test("validate reads a store zarr-python compressed with gzip, and names the array of a damaged gzip chunk", async () => {
  const copy = join(dir, "gzip.zarr");
  cpSync(path(STORES[1]!), copy, { recursive: true });
  const py = await run(PYTHON, ["conformance/sporadik_interop.py", "recompress", copy, "gzip"]);
  assert.equal(py.code, 0, py.stderr);
  const good = await cli("validate", copy, "--json");
  assert.equal(good.code, 0, good.stdout + good.stderr);

  const key = join(copy, "layouts/axis0/data/c/0");
  writeFileSync(key, readFileSync(key).subarray(0, 20)); // a gzip stream cut short
  const bad = await cli("validate", copy);
  assert.equal(bad.code, 1, bad.stdout);
  assert.match(bad.stdout, /layouts\/axis0\/data[^\n]*\[(LayoutError|IncompleteError)\]/);
  assert.doesNotMatch(bad.stdout, /layouts\/axis0\/(indptr|indices)[^\n]*\[/, "no other array blamed");
});

test("slice --help prints its usage and exits 0; convert --help states the temporary space and the opt-in bound", async () => {
  const r = await cli("slice", "--help");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^usage: deltacells slice STORE --axis K POSITION\.\.\./);
  const c = await cli("convert", "--help");
  assert.match(c.stdout, /--max-nnz N +sporadik: refuse a matrix with more nonzeros \(default: no bound\)/);
  assert.match(
    c.stdout,
    /--tmp-dir DIR +sporadik, and --sporadik.s rows in embedding order: where the temporary files go/,
  );
  assert.match(c.stdout, /about 8 bytes per nonzero/);
});

test("slice on a deltacells dataset without a companion says how to make one", async () => {
  const r = await cli("slice", DATASET, "--axis", "0", "3");
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /\[NotASporadikStore\]: .* is a deltacells dataset without a sporadik companion, .*--sporadik.*--format sporadik/,
  );
  assert.equal(r.stdout, "");
});
