/**
 * `deltacells stream --shm-fd`: the batches' indices and counts in a shared file, read back here
 * with plain file reads at the offsets the stream announces (as the consumer process maps them),
 * equal to the pipe's stream field by field; a consumer that holds batches, spills, releases the
 * wrong slot or goes away; the refusals.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, openSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, type Readable, type Writable } from "node:stream";
import { test } from "node:test";
import { type RecordBatch, RecordBatchReader } from "apache-arrow";
import { COMMAND_ARGS, deltacells, REPO, streamInProcess, streamWith, tempDir } from "./cli-helpers.js";

const dir = tempDir();
const DS = join(dir, "ds");
const CACHE = join(dir, "cache");

test.before(async () => {
  const r = await deltacells(
    "convert",
    "data/anndata/obs-encodings.h5ad",
    DS,
    "--tile-size",
    "8",
    "--level",
    "3",
    "--quiet",
  );
  assert.equal(r.code, 0, r.stderr);
});

/** A new, unlinked file for the batches: its descriptor. */
function sharedFile(): number {
  const path = join(dir, `batches-${Math.random().toString(36).slice(2)}`);
  const fd = openSync(path, "wx+");
  unlinkSync(path);
  return fd;
}

interface Layout {
  slots: number;
  slot_bytes: number;
  bytes: number;
  capacity: number;
  cells: number;
  values: "int32" | "float32";
  offsets: { header: number; cells: number; indptr: number; indices: number; data: number };
  obs: Record<string, number>;
  min_free: number;
}

/**
 * A record batch as plain values: cells, each row's indices and counts, obs (categories as their
 * labels), metadata. `rows`: the rows read from its slot; `fields`: its cells and category codes
 * too (a message of no rows).
 */
function plain(
  b: RecordBatch,
  meta: Record<string, unknown>,
  rows?: { indices: number[][]; counts: number[][] },
  fields?: { cells: number[]; codes: Record<string, number[]> },
) {
  const lists = (name: string) => {
    const data = b.getChild(name)!.data[0]!;
    const offsets = data.valueOffsets as Int32Array;
    const values = data.children[0]!.values as Int32Array | Float32Array;
    return Array.from({ length: b.numRows }, (_, i) =>
      Array.from(values.subarray(offsets[data.offset + i]!, offsets[data.offset + i + 1]!)),
    );
  };
  const values = (name: string): unknown[] => {
    const codes = fields?.codes[name];
    if (codes === undefined) return b.getChild(name)!.toArray();
    const vocabulary = b.getChild(name)!.data[0]!.dictionary!;
    return codes.map((c) => (c < 0 ? null : vocabulary.get(c)));
  };
  const obs = Object.fromEntries(
    b.schema.fields
      .filter((f) => !["cell", "indices", "counts"].includes(f.name))
      .map((f) => [
        f.name,
        JSON.stringify(values(f.name), (_, v) => (typeof v === "bigint" ? String(v) : v)),
      ]),
  );
  const { slot: _slot, seq: _seq, size: _size, ...rest } = meta;
  return {
    cells: fields?.cells ?? Array.from(b.getChild("cell")!.toArray() as BigInt64Array, Number),
    indices: rows?.indices ?? lists("indices"),
    counts: rows?.counts ?? lists("counts"),
    obs,
    meta: rest,
  };
}

/** Slot `slot`'s header and rows, read from the file at the announced offsets. */
function readSlot(fd: number, l: Layout, slot: number, size: number) {
  const read = (at: number, n: number) => {
    const out = Buffer.alloc(n);
    assert.equal(readSync(fd, out, 0, n, slot * l.slot_bytes + at), n);
    return out;
  };
  const head = read(l.offsets.header, 48);
  const ip = read(l.offsets.indptr, 8 * (size + 1));
  const indptr = Array.from(new Float64Array(ip.buffer, ip.byteOffset, size + 1));
  const nnz = indptr[size]!;
  const c = read(l.offsets.cells, 8 * size);
  const cells = Array.from(new Float64Array(c.buffer, c.byteOffset, size));
  const codes = Object.fromEntries(
    Object.entries(l.obs).map(([name, at]) => {
      const raw = read(at, 4 * size);
      return [name, Array.from(new Int32Array(raw.buffer, raw.byteOffset, size))];
    }),
  );
  const ind = read(l.offsets.indices, 4 * nnz);
  const dat = read(l.offsets.data, 4 * nnz);
  const indices = new Int32Array(ind.buffer, ind.byteOffset, nnz);
  const data =
    l.values === "float32"
      ? new Float32Array(dat.buffer, dat.byteOffset, nnz)
      : new Int32Array(dat.buffer, dat.byteOffset, nnz);
  const row = (a: Int32Array | Float32Array, i: number) => Array.from(a.subarray(indptr[i]!, indptr[i + 1]!));
  return {
    magic: head.readUInt32LE(0),
    version: head.readUInt32LE(4),
    seq: head.readDoubleLE(8),
    index: head.readDoubleLE(24),
    size: head.readDoubleLE(32),
    nnz: head.readDoubleLE(40),
    rows: {
      indices: Array.from({ length: size }, (_, i) => row(indices, i)),
      counts: Array.from({ length: size }, (_, i) => row(data, i)),
    },
    fields: { cells, codes },
  };
}

/** The pipe's stream of `args`, as plain batches (the end batch apart). */
async function pipeBatches(args: string[]) {
  const r = await streamInProcess(...args, "--cache-dir", CACHE);
  assert.equal(r.code, 0, r.stderr);
  const all = [...RecordBatchReader.from(r.binary).open()];
  return all
    .filter((b) => b.numRows > 0)
    .map((b) => plain(b, JSON.parse(b.metadata.get("deltacells.batch")!)));
}

/**
 * The shared-memory stream of `args`, consumed as it comes: each batch read from its slot, then
 * released (or held, for the first `hold` batches, with `spill` sent before waiting for more).
 */
async function shmBatches(args: string[], o: { hold?: number; ring?: number } = {}) {
  const fd = sharedFile();
  const sink = new PassThrough();
  const control = new PassThrough();
  const run = streamWith(
    sink,
    control,
    ...args,
    "--cache-dir",
    CACHE,
    "--shm-fd",
    String(fd),
    ...(o.ring ? ["--ring", String(o.ring)] : []),
  );
  const reader = await RecordBatchReader.from(sink);
  await reader.open();
  const info = JSON.parse(reader.schema.metadata.get("deltacells.stream")!);
  const layout = info.shm as Layout;
  const out: ReturnType<typeof plain>[] = [];
  const held: { slot: number; seq: number; size: number; rows: unknown }[] = [];
  let inline = 0;
  // Batches in a slot whose message carried no rows (cells and obs read from the slot).
  let empty = 0;
  let end: unknown;
  for await (const b of reader) {
    if (b.metadata.has("deltacells.end")) {
      end = JSON.parse(b.metadata.get("deltacells.end")!);
      continue;
    }
    const meta = JSON.parse(b.metadata.get("deltacells.batch")!);
    if (meta.slot === undefined) {
      inline++;
      out.push(plain(b, meta));
    } else {
      const rowsInSlot = meta.size !== undefined;
      const size = rowsInSlot ? meta.size : b.numRows;
      const s = readSlot(fd, layout, meta.slot, size);
      assert.deepEqual(
        [s.magic, s.version, s.seq, s.index, s.size],
        [0x42534344, 2, meta.seq, meta.index, size],
      );
      if (rowsInSlot) {
        assert.equal(b.numRows, 0, "a batch whose cells are in its slot has no rows in the stream");
        empty++;
      }
      out.push(plain(b, meta, s.rows, rowsInSlot ? s.fields : undefined));
      if (held.length < (o.hold ?? 0))
        held.push({ slot: meta.slot, seq: meta.seq, size, rows: { ...s.rows, ...s.fields } });
      else control.write(`release ${meta.slot} ${meta.seq}\n`);
    }
    if (held.length > layout.slots - layout.min_free) control.write("spill\n");
  }
  const r = await run;
  // What the held slots hold now: the batches they held when handed out.
  const after = held.map((h) => {
    const s = readSlot(fd, layout, h.slot, h.size);
    return { ...s.rows, ...s.fields };
  });
  closeSync(fd);
  return { r, info, layout, out, end, inline, empty, held: held.map((h) => h.rows), after };
}

const ARGS = [
  ["--batch-size", "5", "--seed", "3", "--obs", "cat,Int32,boolean,text", "--threads", "2"],
  ["--batch-size", "7", "--seed", "1", "--float32", "--rank", "1", "--world-size", "2", "--threads", "1"],
  ["--batch-size", "6", "--seed", "2", "--sort-indices", "--start-batch", "2"],
  ["--batch-size", "5", "--seed", "4", "--obs", "cat", "--threads", "1"],
];

test("every batch of a shared-memory stream equals the pipe's, field by field, its rows read from the slot it names", async () => {
  for (const args of ARGS) {
    const want = await pipeBatches([DS, ...args]);
    const got = await shmBatches([DS, ...args]);
    assert.equal(got.r.code, 0, got.r.stderr);
    assert.equal(got.inline, 0, "every batch came in a slot");
    // Only category obs (or none): every message is one of no rows; other obs kinds come in it.
    const categoriesOnly = !args.includes("--obs") || args[args.indexOf("--obs") + 1] === "cat";
    assert.equal(got.empty, categoriesOnly ? want.length : 0, args.join(" "));
    assert.deepEqual(got.out, want, args.join(" "));
    assert.equal(got.layout.bytes, got.layout.slots * got.layout.slot_bytes);
    assert.deepEqual(got.end && (got.end as { batches: number }).batches, want.length);
  }
});

test("a consumer holding batches gets the next ones whole in the stream after spill, and its held slots (rows, cells, codes) are never written", async () => {
  const args = [DS, "--batch-size", "4", "--seed", "5", "--buffer-tiles", "1", "--obs", "cat"];
  const want = await pipeBatches(args);
  const got = await shmBatches(args, { hold: 1000 });
  assert.equal(got.r.code, 0, got.r.stderr);
  assert.ok(got.inline > 0, "some batches came whole");
  assert.deepEqual(got.out, want);
  assert.deepEqual(got.after, got.held, "the held slots hold their batches still");
});

test("a release naming a slot the consumer was not given stops the stream with the reason", async () => {
  const fd = sharedFile();
  const sink = new PassThrough();
  const control = new PassThrough();
  sink.resume();
  control.write("release 0 99\n");
  const r = await streamWith(
    sink,
    control,
    DS,
    "--batch-size",
    "4",
    "--shm-fd",
    String(fd),
    "--cache-dir",
    CACHE,
  );
  closeSync(fd);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /released slot 0 as batch sequence 99, but the slot holds/);
});

test("--ring without --shm-fd, --shm-fd with --dense or a closed descriptor are usage mistakes", async () => {
  for (const [args, pattern] of [
    [["--ring", "4"], /--ring applies to --shm-fd/],
    [["--shm-fd", "0", "--dense"], /leave out --dense/],
    [["--shm-fd", "987654"], /--shm-fd 987654 is not an open file descriptor/],
  ] as const) {
    const r = await streamInProcess(DS, ...args);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, pattern);
  }
});

test("a consumer that goes away while the command waits for a slot stops it, quietly", async () => {
  const fd = sharedFile();
  const child = spawn(
    process.execPath,
    [
      ...COMMAND_ARGS,
      "stream",
      DS,
      "--batch-size",
      "4",
      "--buffer-tiles",
      "1",
      "--shm-fd",
      "3",
      "--ring",
      "4",
      "--cache-dir",
      CACHE,
    ],
    { cwd: REPO, stdio: ["pipe", "pipe", "pipe", fd], env: { ...process.env, DELTACELLS_DEBUG: "" } },
  );
  closeSync(fd);
  const {
    stdin,
    stdout,
    stderr: err,
  } = child as typeof child & { stdin: Writable; stdout: Readable; stderr: Readable };
  let stderr = "";
  err.on("data", (d) => {
    stderr += d;
  });
  // Read the stream, never release: the command fills its 4 slots and waits for one; then stdin
  // ends (the reader stays open: only stdin says the consumer is gone).
  const reader = await RecordBatchReader.from(stdout);
  await reader.open();
  const batches = reader[Symbol.asyncIterator]();
  for (let k = 0; k < 4; k++)
    assert.ok(JSON.parse((await batches.next()).value.metadata.get("deltacells.batch")).slot >= 0);
  stdin.end();
  const code = await new Promise<number | null>((ok) => child.on("close", ok));
  assert.equal(code, 0, stderr);
  assert.equal(stderr, "");
});

test("a serving command streams each epoch asked for after the last one's end batch, each equal to that epoch's own stream", async () => {
  const args = [DS, "--batch-size", "5", "--seed", "3", "--obs", "cat", "--threads", "2"];
  const want = [];
  for (const e of [0, 2, 1]) want.push(await pipeBatches([...args, "--epoch", String(e)]));
  const fd = sharedFile();
  const sink = new PassThrough();
  const control = new PassThrough();
  const run = streamWith(sink, control, ...args, "--cache-dir", CACHE, "--shm-fd", String(fd), "--serve");
  const reader = await RecordBatchReader.from(sink);
  await reader.open();
  const layout = JSON.parse(reader.schema.metadata.get("deltacells.stream")!).shm as Layout;
  const asks = [2, 1];
  const got: ReturnType<typeof plain>[][] = [[]];
  const epochs: unknown[] = [];
  const kept: { slot: number; rows: unknown }[] = [];
  for await (const b of reader) {
    if (b.metadata.has("deltacells.end")) {
      const next = asks.shift();
      if (next === undefined) control.end();
      else control.write(`epoch ${next}\n`);
      continue;
    }
    if (b.metadata.has("deltacells.epoch")) {
      epochs.push(JSON.parse(b.metadata.get("deltacells.epoch")!));
      got.push([]);
      continue;
    }
    const meta = JSON.parse(b.metadata.get("deltacells.batch")!);
    const s = readSlot(fd, layout, meta.slot, meta.size);
    got.at(-1)!.push(plain(b, meta, s.rows, s.fields));
    // The first batch of each epoch kept (never released): the next epochs write around it.
    if (got.at(-1)!.length === 1) kept.push({ slot: meta.slot, rows: { ...s.rows, ...s.fields } });
    else control.write(`release ${meta.slot} ${meta.seq}\n`);
  }
  const r = await run;
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(got, want);
  assert.deepEqual(
    epochs.map((e) => (e as { epoch: number }).epoch),
    [2, 1],
  );
  for (const k of kept) {
    const s = readSlot(fd, layout, k.slot, 5);
    assert.deepEqual({ ...s.rows, ...s.fields }, k.rows);
  }
  closeSync(fd);
});

test("a serving command that no epoch is asked of exits after --serve-idle; --serve needs --shm-fd", async () => {
  const fd = sharedFile();
  const sink = new PassThrough();
  sink.resume();
  const control = new PassThrough();
  const r = await streamWith(
    sink,
    control,
    DS,
    "--batch-size",
    "8",
    "--shm-fd",
    String(fd),
    "--serve",
    "--serve-idle",
    "1",
    "--cache-dir",
    CACHE,
  );
  closeSync(fd);
  assert.equal(r.code, 0, r.stderr);
  for (const [args, pattern] of [
    [["--serve"], /--serve takes the next epochs asked for on stdin: give --shm-fd too/],
    [["--serve-idle", "5"], /--serve-idle applies to --serve/],
  ] as const) {
    const u = await streamInProcess(DS, ...args);
    assert.equal(u.code, 2, u.stderr);
    assert.match(u.stderr, pattern);
  }
});
