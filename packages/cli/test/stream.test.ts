/**
 * `deltacells stream` through the real binary: the Arrow stream read back with apache-arrow and
 * checked against the dataset reader (`ds.cells`, `gene_order.npy`, `ds.obs`), not against the
 * loader it wraps; coverage over ranks, padding and drops as the metadata reports them, resuming,
 * gene selections, dense rows, obs columns, refusals, a consumer leaving early, a corrupt tile, and
 * the writer's backpressure.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, test } from "node:test";
import type { Dataset } from "@deltacells/core";
import { createLoader } from "@deltacells/core";
import { ArrowBatches, ArrowOutput, ReaderGone, type StreamEnd } from "@deltacells/core/arrow";
import { openDataset } from "@deltacells/core/node";
import { type RecordBatch, RecordBatchReader, RecordBatchStreamWriter, type Schema } from "apache-arrow";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import {
  COMMAND_ARGS,
  COMMAND_LINE,
  cli,
  deltacells,
  REPO,
  streamInProcess,
  tempDir,
} from "./cli-helpers.js";

const dir = tempDir();
const DS = join(dir, "ds");
const CACHE = join(dir, "cache");
let ds: Dataset;
/** The dataset's rows in source gene order (independent of the loader: reader + gene_order.npy). */
let rows: { indices: number[]; counts: number[] }[];
let sourceNames: string[];

before(async () => {
  // 57 cells in tiles of 16: the last tile (9 cells) is smaller than the others.
  const r = await deltacells(
    "convert",
    "data/anndata/csr.h5ad",
    DS,
    "--tile-size",
    "16",
    "--level",
    "3",
    "--quiet",
  );
  assert.equal(r.code, 0, r.stderr);
  ds = await openDataset(DS);
  const order = (await ds.geneOrder())!;
  const names = (await ds.geneNames())!;
  sourceNames = new Array<string>(ds.nGenes);
  for (let j = 0; j < ds.nGenes; j++) sourceNames[order[j]!] = names[j]!;
  const all = await ds.cells(0, ds.nCells);
  rows = [];
  for (let c = 0; c < ds.nCells; c++) {
    const pairs: [number, number][] = [];
    for (let k = all.indptr[c]!; k < all.indptr[c + 1]!; k++)
      pairs.push([order[all.indices[k]!]!, all.data[k]!]);
    pairs.sort((a, b) => a[0] - b[0]);
    rows.push({ indices: pairs.map((p) => p[0]), counts: pairs.map((p) => p[1]) });
  }
});

after(async () => {
  await ds?.close();
});

interface Streamed {
  code: number;
  stderr: string;
  stdout: Buffer;
  schema?: Schema;
  batches: RecordBatch[];
  /** The end batch's `deltacells.end` (a complete epoch), or undefined. */
  end?: StreamEnd;
}

function spawnStream(args: string[]) {
  return spawn(process.execPath, [...COMMAND_ARGS, "stream", ...args], {
    cwd: REPO,
    env: { ...process.env, DELTACELLS_DEBUG: "" },
  });
}

/**
 * `deltacells stream ARGS`, run in this process (the command's own code path, its Arrow bytes
 * collected instead of written to stdout), read as an Arrow stream. What belongs to a process (a
 * reader closing the pipe, a terminal, backpressure of a real pipe) is tested on a child process.
 */
async function stream(...args: string[]): Promise<Streamed> {
  const r = await streamInProcess(...args, "--cache-dir", CACHE);
  const result: Streamed = { code: r.code, stderr: r.stderr, stdout: r.binary, batches: [] };
  if (r.code === 0) {
    const reader = RecordBatchReader.from(r.binary).open();
    result.schema = reader.schema;
    const all = [...reader];
    result.batches = all.filter((b) => b.numRows > 0);
    result.end = endOf(all);
  }
  return result;
}

/**
 * The mini-batches of a stream: its end batch (no rows, `deltacells.end`) left out. The command
 * writes no other empty batch.
 */
function batchesOf(reader: Iterable<RecordBatch>): RecordBatch[] {
  return [...reader].filter((b) => b.numRows > 0);
}

/** The `deltacells.end` of a stream's last batch, if it has one; it must be the last, with no rows. */
function endOf(batches: RecordBatch[]): Streamed["end"] {
  const at = batches.findIndex((b) => b.metadata.has("deltacells.end"));
  if (at < 0) return undefined;
  assert.equal(at, batches.length - 1, "the end batch is the last");
  assert.equal(batches[at]!.numRows, 0);
  return JSON.parse(batches[at]!.metadata.get("deltacells.end")!);
}

function info(s: Streamed): Record<string, number | string | boolean> {
  return JSON.parse(s.schema!.metadata.get("deltacells.stream")!);
}

function batchMeta(b: RecordBatch): {
  epoch: number;
  index: number;
  padded: number;
  skipped: number;
  sorted_indices?: boolean;
  global_index?: number;
} {
  return JSON.parse(b.metadata.get("deltacells.batch")!);
}

/** Row i of a list<int32> column. */
function listRow(b: RecordBatch, name: string, i: number): number[] {
  const data = b.getChild(name)!.data[0]!;
  const offsets = data.valueOffsets as Int32Array;
  const values = data.children[0]!.values as Int32Array;
  return Array.from(values.subarray(offsets[data.offset + i]!, offsets[data.offset + i + 1]!));
}

function cellsOf(b: RecordBatch): number[] {
  return Array.from(b.getChild("cell")!.toArray() as BigInt64Array, Number);
}

/** Row i's (column, count) pairs by column (the stream's rows come in the dataset's column order). */
function pairsOf(b: RecordBatch, i: number): [number, number][] {
  const counts = listRow(b, "counts", i);
  return listRow(b, "indices", i)
    .map((j, k): [number, number] => [j, counts[k]!])
    .sort((x, y) => x[0] - y[0]);
}

function assertRowsMatch(s: Streamed): void {
  for (const b of s.batches) {
    const cells = cellsOf(b);
    cells.forEach((c, i) => {
      const want = rows[c]!.indices.map((j, k): [number, number] => [j, rows[c]!.counts[k]!]);
      assert.deepEqual(pairsOf(b, i), want, `cell ${c}`);
    });
  }
}

test("every cell once over ranks, padding as reported, equal batch counts, rows in source gene order", async () => {
  for (const [worldSize, batchSize] of [
    [1, 8],
    [4, 5],
    [3, 4],
  ] as const) {
    const seen = new Array<number>(ds.nCells).fill(0);
    const counts = new Set<number>();
    for (let rank = 0; rank < worldSize; rank++) {
      const s = await stream(
        DS,
        "--batch-size",
        String(batchSize),
        "--seed",
        "7",
        "--rank",
        String(rank),
        "--world-size",
        String(worldSize),
        "--threads",
        "2",
      );
      assert.equal(s.code, 0, s.stderr);
      const meta = info(s);
      assert.equal(s.batches.length, meta.batches);
      assert.deepEqual(s.end, {
        epoch: 0,
        rank,
        world_size: worldSize,
        batches: meta.batches,
        rows: s.batches.reduce((a, b) => a + b.numRows, 0),
      });
      counts.add(s.batches.length);
      assert.deepEqual(JSON.parse(s.schema!.metadata.get("deltacells.genes")!), sourceNames);
      const flat = s.batches.flatMap(cellsOf);
      const padded = s.batches.reduce((a, b) => a + batchMeta(b).padded, 0);
      assert.equal(padded, meta.padded, "the batches' padded rows add up to the stream's");
      assert.equal(flat.length, Math.ceil(ds.nCells / worldSize), "every rank yields ceil(N / W) cells");
      for (const c of flat.slice(0, flat.length - padded)) seen[c]!++;
      // padded rows repeat cells this rank already yielded
      for (const c of flat.slice(flat.length - padded))
        assert.ok(flat.slice(0, flat.length - padded).includes(c));
      for (const [k, b] of s.batches.entries()) assert.equal(batchMeta(b).index, k);
      assertRowsMatch(s);
    }
    assert.deepEqual(seen, new Array(ds.nCells).fill(1), `world size ${worldSize}: every cell exactly once`);
    assert.equal(counts.size, 1, "every rank yields the same number of batches");
  }
});

test("--sort-indices gives each cell's indices increasing; without it the metadata says they are not", async () => {
  const plain = await stream(DS, "--batch-size", "20", "--seed", "2");
  const sorted = await stream(DS, "--batch-size", "20", "--seed", "2", "--sort-indices");
  assert.equal(info(plain).sorted_indices, false, "gene_order.npy is not the identity here");
  assert.equal(info(sorted).sorted_indices, true);
  assert.ok(sorted.batches.every((b) => batchMeta(b).sorted_indices === true));
  let unsortedRows = 0;
  for (const [k, b] of sorted.batches.entries()) {
    cellsOf(b).forEach((c, i) => {
      assert.deepEqual(listRow(b, "indices", i), rows[c]!.indices, `cell ${c}: indices increase`);
      assert.deepEqual(listRow(b, "counts", i), rows[c]!.counts, `cell ${c}: counts follow`);
      const p = listRow(plain.batches[k]!, "indices", i);
      if (p.some((j, x) => x > 0 && j < p[x - 1]!)) unsortedRows++;
    });
  }
  assert.ok(unsortedRows > 0, "the default order really differs (the test can fail)");
  assertRowsMatch(plain);
});

test("--drop-last drops the remainder of each rank's share to whole batches and reports it", async () => {
  const seen = new Array<number>(ds.nCells).fill(0);
  let dropped = 0;
  for (let rank = 0; rank < 4; rank++) {
    const s = await stream(
      DS,
      "--batch-size",
      "5",
      "--rank",
      String(rank),
      "--world-size",
      "4",
      "--drop-last",
    );
    assert.equal(s.code, 0, s.stderr);
    assert.equal(s.batches.length, 2, "floor(57 / 4) = 14 cells: 2 whole batches of 5");
    assert.ok(s.batches.every((b) => b.numRows === 5));
    for (const c of s.batches.flatMap(cellsOf)) seen[c]!++;
    dropped += info(s).dropped as number;
    assert.equal(info(s).padded, 0);
  }
  assert.ok(seen.every((n) => n <= 1));
  assert.equal(
    seen.filter((n) => n === 0).length,
    dropped,
    "the cells not yielded are exactly the reported drops",
  );
});

test("a seed and epoch give the same batches, another epoch other ones; --no-shuffle is dataset order", async () => {
  const a = await stream(DS, "--batch-size", "10", "--seed", "3", "--epoch", "2");
  const b = await stream(DS, "--batch-size", "10", "--seed", "3", "--epoch", "2");
  const c = await stream(DS, "--batch-size", "10", "--seed", "3", "--epoch", "3");
  assert.deepEqual(a.stdout, b.stdout);
  assert.notDeepEqual(a.batches.flatMap(cellsOf), c.batches.flatMap(cellsOf));
  assert.deepEqual(
    [...a.batches.flatMap(cellsOf)].sort((x, y) => x - y),
    [...Array(57).keys()],
  );
  const plain = await stream(DS, "--batch-size", "10", "--no-shuffle");
  assert.deepEqual(plain.batches.flatMap(cellsOf), [...Array(57).keys()]);
  assertRowsMatch(plain);
});

test("--start-batch K gives exactly the batches from K on, for every K", async () => {
  const args = [DS, "--batch-size", "6", "--seed", "5", "--rank", "1", "--world-size", "2"];
  const full = await stream(...args);
  assert.equal(full.batches.length, 5, "ceil(57 / 2) = 29 cells in batches of 6");
  for (let k = 0; k <= full.batches.length; k++) {
    const s = await stream(...args, "--start-batch", String(k));
    assert.equal(s.code, 0, s.stderr);
    assert.deepEqual(s.batches.map(cellsOf), full.batches.slice(k).map(cellsOf), `from batch ${k}`);
    assert.equal(s.end?.batches, full.batches.length - k, `from batch ${k}: the end counts what was written`);
    assert.deepEqual(
      s.batches.map((b) => batchMeta(b).index),
      full.batches.slice(k).map((b) => batchMeta(b).index),
    );
  }
  const beyond = await stream(...args, "--start-batch", "6");
  assert.equal(beyond.code, 1);
  assert.match(beyond.stderr, /startBatch is 6 but an epoch has 5 batches/);
});

test("--genes selects and orders columns; --dense gives float32 rows of them", async () => {
  const pick = [sourceNames[7]!, sourceNames[0]!, sourceNames[3]!];
  const file = join(dir, "genes.txt");
  writeFileSync(file, `${pick.join("\n")}\n\n`);
  const sparse = await stream(DS, "--genes", file, "--batch-size", "20", "--no-shuffle");
  assert.equal(sparse.code, 0, sparse.stderr);
  assert.deepEqual(JSON.parse(sparse.schema!.metadata.get("deltacells.genes")!), pick);
  const dense = await stream(DS, "--genes", file, "--batch-size", "20", "--no-shuffle", "--dense");
  assert.equal(dense.code, 0, dense.stderr);
  assert.deepEqual(
    dense.schema!.fields.map((f) => `${f.name}:${f.type}`),
    ["cell:Int64", "counts:FixedSizeList[3]<Float32>"],
  );
  const wanted = [7, 0, 3];
  for (const [sb, db] of sparse.batches.map((b, i) => [b, dense.batches[i]!] as const)) {
    const values = db.getChild("counts")!.data[0]!.children[0]!.values as Float32Array;
    cellsOf(sb).forEach((c, i) => {
      const row = wanted.map((g) => {
        const k = rows[c]!.indices.indexOf(g);
        return k < 0 ? 0 : rows[c]!.counts[k]!;
      });
      assert.deepEqual(Array.from(values.subarray(3 * i, 3 * i + 3)), row, `dense cell ${c}`);
      assert.deepEqual(
        pairsOf(sb, i),
        row.flatMap((v, j) => (v ? [[j, v]] : [])),
        `sparse cell ${c}`,
      );
    });
  }
  writeFileSync(file, "no-such-gene\n");
  const bad = await stream(DS, "--genes", file);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /gene "no-such-gene" is not in/);
  assert.equal(bad.stdout.length, 0, "nothing on stdout");
});

test("--obs columns come in their types, categories as dictionaries, equal to the dataset's obs", async () => {
  const names = ["cell_type", "maybe_int", "maybe_bool", "barcode"];
  const s = await stream(DS, "--obs", names.join(","), "--batch-size", "16", "--seed", "1");
  assert.equal(s.code, 0, s.stderr);
  const frame = await ds.obs(names, { cacheDir: CACHE });
  assert.match(
    String(s.schema!.fields.find((f) => f.name === "cell_type")!.type),
    /^Dictionary<Int32, Utf8>/,
  );
  for (const b of s.batches) {
    cellsOf(b).forEach((c, i) => {
      for (const name of names) {
        const got = b.getChild(name)!.get(i);
        const want = frame.columns.find((col) => col.name === name)!.value(c);
        assert.deepEqual(typeof got === "bigint" ? Number(got) : got, want, `cell ${c} ${name}`);
      }
    });
  }
});

test("refusals: usage mistakes exit 2, a missing column or obs exit 1, nothing on stdout", async () => {
  const usage: [string[], RegExp][] = [
    [["--rank", "1"], /--rank and --world-size go together/],
    [["--rank", "2", "--world-size", "2"], /--rank 2 is not below --world-size 2/],
    [["--json"], /unknown option --json/],
    [["--batch-size", "0"], /--batch-size must be an integer/],
    [["--obs", "nope"], /has no obs column "nope"; it has barcode/],
    [["--genes", join(dir, "missing.txt")], /--genes .*missing.txt: cannot read it/],
  ];
  for (const [args, pattern] of usage) {
    const s = await stream(DS, ...args);
    assert.equal(s.code, 2, `${args}: ${s.stderr}`);
    assert.match(s.stderr, pattern);
    assert.equal(s.stdout.length, 0);
  }
  const none = await stream(join(dir, "nothing-here"));
  assert.equal(none.code, 1);
  assert.match(none.stderr, /nothing is there/);
  assert.equal(none.stdout.length, 0);
  // --obs on a dataset converted without a cell table: its content, not a usage mistake
  const plain = join(dir, "no-obs");
  const c = await cli(
    "convert",
    "data/seurat-pbmc-small/pbmc_small_counts.mtx",
    plain,
    "--quiet",
    "--level",
    "1",
  );
  assert.equal(c.code, 0, c.stderr);
  const noObs = await stream(plain, "--obs", "cell_type");
  assert.equal(noObs.code, 1, noObs.stderr);
  assert.match(noObs.stderr, /\[NotFound\].*has no obs \(has_obs is false in its manifest\)/);
  assert.equal(noObs.stdout.length, 0);
});

test("stream refuses to write binary to a terminal", () => {
  const cmd = `${COMMAND_LINE} stream ${DS}`;
  // `script` (util-linux) gives the command a pseudo-terminal, as a user's shell would.
  const r = spawnSync("script", ["-qec", cmd, "/dev/null"], { cwd: REPO, encoding: "utf8" });
  assert.equal(r.status, 2, r.stdout);
  assert.match(r.stdout, /stdout is a terminal/);
});

test("a consumer that closes the stream early ends the command quietly", async () => {
  const child = spawnStream([DS, "--batch-size", "1", "--cache-dir", CACHE]);
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  // Read a little (the schema and a batch or two), then close the pipe.
  await new Promise<void>((ok) => child.stdout.once("data", () => ok()));
  child.stdout.destroy();
  const code = await new Promise<number | null>((ok) => child.on("close", ok));
  assert.equal(code, 0, stderr);
  assert.equal(stderr, "");
});

test("a corrupt tile stops the stream with exit code 1 and a message naming it; stdout holds only whole batches", async () => {
  const bad = join(tempDir(), "ds");
  cpSync(DS, bad, { recursive: true });
  const tiles = readdirSync(join(bad, "tiles")).sort();
  const victim = join(bad, "tiles", tiles[2]!);
  const bytes = readFileSync(victim);
  bytes[bytes.length >> 1]! ^= 0xff;
  writeFileSync(victim, bytes);
  const s = await stream(bad, "--batch-size", "16", "--no-shuffle");
  assert.equal(s.code, 1);
  assert.match(s.stderr, /UnreadableTile\]: .*tiles\/tile_000002\.dct could not be read or decoded/);
  // The loader's way around it is an option the command has no flag for: the hint says what to run.
  assert.match(s.stderr, /\n {2}hint: deltacells validate DATASET lists every damaged tile; .*\n$/);
  assert.doesNotMatch(s.stdout.toString("latin1"), /error|tile_000002/i);
  // Batches made before the error are whole (how many depends on how far decoding ran ahead),
  // and the stream has no end batch: the epoch is not complete.
  const all = [...RecordBatchReader.from(s.stdout)];
  assert.equal(endOf(all), undefined);
  const read = batchesOf(all);
  assert.ok(read.length <= 2, "none from the corrupt tile on");
  assert.deepEqual(read.flatMap(cellsOf), [...Array(16 * read.length).keys()]);
  assertRowsMatch({ ...s, batches: read });
});

let server: RunningServer | undefined;
after(async () => {
  await server?.stop();
});

test("a dataset over HTTP streams the same bytes as from the folder", async () => {
  server = await startServe(dir);
  const local = await stream(DS, "--batch-size", "9", "--seed", "4", "--obs", "cell_type");
  const remote = await stream(`${server.url}/ds`, "--batch-size", "9", "--seed", "4", "--obs", "cell_type");
  assert.equal(remote.code, 0, remote.stderr);
  assert.equal(local.batches.length, remote.batches.length);
  assert.deepEqual(remote.batches.map(cellsOf), local.batches.map(cellsOf));
  assertRowsMatch(remote);
});

test("the writer holds the producer back until the destination took each batch (backpressure)", async () => {
  const { RecordBatch: RB, makeData, Int32, Schema: S, Field, Struct } = await import("apache-arrow");
  const schema = new S([new Field("x", new Int32(), false)]);
  let taken = 0;
  let holding = false;
  let release: () => void = () => {};
  const slow = new Writable({
    highWaterMark: 16,
    write(chunk: Buffer, _enc, done) {
      // the destination takes nothing until released: a consumer that stopped reading
      holding = true;
      release = () => {
        holding = false;
        release = () => {};
        taken += chunk.length;
        done();
      };
    },
  });
  // Until the destination holds a chunk, and a turn of the event loop more for anything that would
  // (wrongly) settle then: the state the assertions are about, instead of a wait on the clock.
  const untilHeld = async () => {
    for (let i = 0; i < 1000 && !holding; i++) await new Promise((r) => setImmediate(r));
    assert.ok(holding, "the destination was handed a chunk");
    await new Promise((r) => setImmediate(r));
  };
  const out = new ArrowOutput(slow, schema);
  const batch = new RB(
    schema,
    makeData({
      type: new Struct(schema.fields),
      length: 4096,
      nullCount: 0,
      children: [makeData({ type: new Int32(), length: 4096, data: new Int32Array(4096) })],
    }),
  );
  const start = out.start();
  let started = false;
  void start.then(() => {
    started = true;
  });
  await untilHeld();
  assert.equal(started, false, "the schema is not done until the destination took it");
  while (!started) {
    release();
    await new Promise((r) => setImmediate(r));
  }
  let written = false;
  const w = out.write(batch).then(() => {
    written = true;
  });
  await untilHeld();
  assert.equal(written, false, "a batch is not done while the destination holds back");
  while (!written) {
    release();
    await new Promise((r) => setImmediate(r));
  }
  await w;
  assert.ok(taken > 4096 * 4, "the whole batch reached the destination");
  // A destination that fails with EPIPE ends the stream as ReaderGone.
  const broken = new Writable({
    write(_c, _e, done) {
      done(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    },
  });
  const out2 = new ArrowOutput(broken, schema);
  await assert.rejects(out2.start(), ReaderGone);
});

test("each message goes out with its small parts joined into one write, its large buffers as views", async () => {
  const { RecordBatch: RB, makeData, Int32, Schema: S, Field, Struct } = await import("apache-arrow");
  const schema = new S([new Field("x", new Int32(), false)]);
  const writes: Uint8Array[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      writes.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      done();
    },
  });
  const out = new ArrowOutput(sink, schema);
  const batchOf = (values: Int32Array) =>
    new RB(
      schema,
      makeData({
        type: new Struct(schema.fields),
        length: values.length,
        nullCount: 0,
        children: [makeData({ type: new Int32(), length: values.length, data: values })],
      }),
    );
  await out.start();
  const small = writes.length;
  await out.write(batchOf(new Int32Array(0)));
  assert.equal(writes.length - small, 1, "a message of no rows is one write");
  const big = Int32Array.from({ length: 1 << 16 }, (_, i) => i);
  const before = writes.length;
  await out.write(batchOf(big));
  const parts = writes.slice(before);
  // The header (continuation, length, flatbuffer, padding) in one write, then the body's buffer.
  assert.equal(parts.length, 2);
  assert.equal(parts[1]!.buffer, big.buffer, "the large buffer is handed on, not copied");
  await out.end();
  const read = [...RecordBatchReader.from(Buffer.concat(writes))];
  assert.deepEqual(
    read.map((b) => b.numRows),
    [0, 1 << 16],
  );
  assert.deepEqual(Array.from(read[1]!.getChild("x")!.toArray() as Int32Array), Array.from(big));
});

test("--float32: counts as list<float32> (the loader's float32 values), equal to the int32 stream's", async () => {
  const description = { genes: [], info: {} };
  const streamOf = async (float32: boolean) => {
    const loader = await createLoader(ds, {
      batchSize: 20,
      seed: 2,
      ...(float32 && { values: "float32" as const }),
    });
    const arrow = new ArrowBatches(false, loader.genes.count, [], description, float32);
    const writer = new RecordBatchStreamWriter();
    writer.reset(undefined, arrow.schema);
    for await (const b of loader) {
      writer.write(arrow.recordBatch(b));
      b.release();
    }
    writer.finish();
    const reader = RecordBatchReader.from(await writer.toUint8Array()).open();
    return { types: reader.schema.fields.map((f) => `${f.name}:${f.type}`), batches: batchesOf(reader) };
  };
  const ints = await streamOf(false);
  const floats = await streamOf(true);
  assert.deepEqual(ints.types, ["cell:Int64", "indices:List<Int32>", "counts:List<Int32>"]);
  assert.deepEqual(floats.types, ["cell:Int64", "indices:List<Int32>", "counts:List<Float32>"]);
  assert.equal(floats.batches.length, ints.batches.length);
  ints.batches.forEach((b, k) => {
    const f = floats.batches[k]!;
    assert.deepEqual(cellsOf(f), cellsOf(b));
    const values = (x: RecordBatch) =>
      Array.from(x.getChild("counts")!.data[0]!.children[0]!.values as ArrayLike<number>);
    assert.ok(f.getChild("counts")!.data[0]!.children[0]!.values instanceof Float32Array);
    assert.deepEqual(values(f), values(b), `batch ${k}`);
    assert.deepEqual(listRow(f, "indices", 0), listRow(b, "indices", 0));
  });
});

/** The global batches of streams (`global_index` from each batch's metadata), each once, as cell lists. */
function globalBatches(streams: Streamed[]): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const s of streams)
    for (const b of s.batches) {
      const g = batchMeta(b).global_index;
      assert.ok(g !== undefined, "an elastic batch says its global index");
      assert.ok(!out.has(g), `global batch ${g} twice`);
      out.set(g, cellsOf(b));
    }
  return out;
}

test("--order elastic: 1, 2 and 4 ranks write the same global batches; --start-global-batch resumes on another world size", async () => {
  // 57 cells in 4 lanes of at most 15 cells: 4 batches of 4 a lane, 16 global batches.
  const args = [
    DS,
    "--order",
    "elastic",
    "--lanes",
    "4",
    "--batch-size",
    "4",
    "--seed",
    "3",
    "--threads",
    "1",
  ];
  const ranks = async (worldSize: number, ...more: string[]) => {
    const out: Streamed[] = [];
    for (let rank = 0; rank < worldSize; rank++) {
      const s = await stream(...args, "--rank", String(rank), "--world-size", String(worldSize), ...more);
      assert.equal(s.code, 0, s.stderr);
      out.push(s);
    }
    return out;
  };
  let reference: Map<number, number[]> | undefined;
  for (const worldSize of [1, 2, 4]) {
    const streams = await ranks(worldSize);
    streams.forEach((s, rank) => {
      const meta = info(s);
      assert.equal(meta.order, "elastic");
      assert.equal(meta.global_batches, 16);
      assert.deepEqual(s.end, {
        epoch: 0,
        rank,
        world_size: worldSize,
        batches: 16 / worldSize,
        rows: s.batches.reduce((a, b) => a + b.numRows, 0),
        order: "elastic",
        lanes: 4,
        global_batches: 16,
        start_global_batch: 0,
        first_global_batch: rank,
      });
      assert.deepEqual(
        s.batches.map((b) => batchMeta(b).global_index),
        s.batches.map((_, k) => rank + k * worldSize),
      );
    });
    assertRowsMatch({ ...streams[0]!, batches: streams.flatMap((s) => s.batches) });
    const all = globalBatches(streams);
    assert.deepEqual(
      [...all.keys()].sort((a, b) => a - b),
      [...Array(16).keys()],
    );
    if (reference === undefined) reference = all;
    else assert.deepEqual(all, reference, `world size ${worldSize}`);
  }
  // Stopped after 3 batches per rank on 2 ranks (6 global batches), resumed on 4: 10 left, so
  // ranks 2 and 3 end with a padding batch repeating global batch g - 4.
  const resumed = await ranks(4, "--start-global-batch", "6");
  const real = new Map<number, number[]>();
  resumed.forEach((s, rank) => {
    assert.equal(s.batches.length, 3);
    assert.equal(info(s).start_global_batch, 6);
    assert.equal(s.end?.first_global_batch, 6 + rank);
    for (const b of s.batches) {
      const g = batchMeta(b).global_index!;
      if (g >= 16) {
        assert.equal(batchMeta(b).padded, b.numRows, "a padding batch is all padding");
        assert.deepEqual(cellsOf(b), reference!.get(g - 4));
      } else real.set(g, cellsOf(b));
    }
  });
  assert.deepEqual(
    [...real.keys()].sort((a, b) => a - b),
    [6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  );
  for (const [g, cells] of real) assert.deepEqual(cells, reference!.get(g));
  // --start-batch K on W ranks is --start-global-batch K*W.
  const [same] = await ranks(1, "--start-batch", "6");
  assert.deepEqual(
    same!.batches.map(cellsOf),
    [...Array(10).keys()].map((i) => reference!.get(6 + i)),
  );
});

test("--report-mixing COLUMN prints how mixed the batches were; =FILE writes it as JSON, equal to the stream's own labels", async () => {
  const args = [DS, "--batch-size", "8", "--seed", "2", "--obs", "cell_type", "--threads", "1"];
  const printed = await stream(...args, "--report-mixing", "cell_type");
  assert.equal(printed.code, 0, printed.stderr);
  assert.match(printed.stderr, /^mixing of cell_type over 8 batches \(57 rows\): \d+ labels, [\d.]+ bits/);
  assert.match(printed.stderr, /entropy per batch: mean [\d.]+ .* of a random batch's/);
  assert.match(printed.stderr, /tiles per batch: mean [\d.]+/);
  const file = join(dir, "mixing.json");
  const written = await stream(...args, "--report-mixing", `cell_type=${file}`);
  assert.equal(written.code, 0, written.stderr);
  assert.equal(written.stderr, "", "with =FILE nothing goes to stderr");
  const report = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(report.complete, true);
  assert.equal(report.batches, written.batches.length);
  // The entropy of each batch's labels as the stream itself wrote them (its dictionary column).
  const entropies = written.batches.map((b) => {
    const counts = new Map<unknown, number>();
    for (const v of b.getChild("cell_type")!.toArray()) counts.set(v, (counts.get(v) ?? 0) + 1);
    return -[...counts.values()].reduce((h, k) => h + (k / b.numRows) * Math.log2(k / b.numRows), 0);
  });
  const mean = entropies.reduce((a, b) => a + b) / entropies.length;
  assert.ok(Math.abs(report.batchEntropy.mean - mean) < 1e-9, `${report.batchEntropy.mean} vs ${mean}`);
  const tiles = written.batches.map((b) => new Set(cellsOf(b).map((c) => Math.floor(c / 16))).size);
  assert.equal(report.tilesPerBatch.max, Math.max(...tiles));
  assert.ok(report.randomBatchEntropy > 0 && report.datasetEntropy >= report.randomBatchEntropy);
});

test("elastic and mixing refusals: usage mistakes exit 2, a world size not dividing lanes and a numeric column exit 1", async () => {
  const usage: [string[], RegExp][] = [
    [["--lanes", "4"], /--lanes applies to --order elastic/],
    [["--start-global-batch", "4"], /--start-global-batch applies to --order elastic/],
    [["--order", "elastic", "--start-batch", "1", "--start-global-batch", "2"], /give one/],
    [["--order", "random"], /--order random: expected default or elastic/],
    [["--report-mixing", "nope"], /--report-mixing nope: .* has no obs column "nope"; it has barcode/],
    [["--report-mixing", "=x.json"], /expected an obs column/],
  ];
  for (const [args, pattern] of usage) {
    const s = await stream(DS, ...args);
    assert.equal(s.code, 2, `${args}: ${s.stderr}`);
    assert.match(s.stderr, pattern);
    assert.equal(s.stdout.length, 0);
  }
  const world = await stream(DS, "--order", "elastic", "--lanes", "4", "--rank", "0", "--world-size", "3");
  assert.equal(world.code, 1);
  assert.match(world.stderr, /worldSize must be a divisor of lanes \(4\): 1, 2, 4/);
  const numeric = await stream(DS, "--report-mixing", "maybe_int");
  assert.equal(numeric.code, 1);
  assert.match(numeric.stderr, /"maybe_int" .* needs a category or bool column/);
});

test("stream --help describes the elastic order and the mixing report", async () => {
  const r = await streamInProcess("--help");
  for (const line of [
    /--order ORDER +default \(each rank shuffles its own share\) or elastic/,
    /--lanes L +elastic: the lanes/,
    /--start-global-batch N\n +elastic: skip the epoch's first N global batches/,
    /--report-mixing COLUMN\[=FILE\]\n +after the epoch, how mixed the batches were/,
  ])
    assert.match(r.stdout, line);
});
