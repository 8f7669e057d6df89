/** The streaming writer writes, object for object, the bytes writeStore writes for the whole matrix. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore, type Store, withConcurrencyLimit } from "@deltacells/storage";
import { ArrayWriter, InFlight, wasmEncoder } from "../src/array-stream.js";
import { type DataType, type Layout, layoutFromCompressed, openReader, writeStore } from "../src/index.js";
import { MemorySpill } from "../src/spill.js";
import { type RowBlock, StreamWriter, writeStoreFromRows } from "../src/stream-writer.js";
import { random } from "./helpers.js";

interface Csr {
  nRows: number;
  nCols: number;
  indptr: Int32Array;
  indices: Int32Array;
  data: Int32Array | Int16Array | Float32Array | Float64Array;
}

/** A random CSR with empty rows and columns, sorted columns, values of `dtype` (negatives too). */
function randomCsr(
  nRows: number,
  nCols: number,
  density: number,
  seed: number,
  dtype: DataType = "int32",
): Csr {
  const next = random(seed);
  const indptr = new Int32Array(nRows + 1);
  const indices: number[] = [];
  const values: number[] = [];
  // Every third column stays empty, and every fifth row.
  for (let r = 0; r < nRows; r++) {
    if (r % 5 !== 4) {
      for (let c = 0; c < nCols; c++) {
        if (c % 3 === 2 || next() >= density) continue;
        indices.push(c);
        const magnitude = dtype.startsWith("int") ? 1 + Math.floor(next() * 40) : next() * 9;
        values.push(next() < 0.1 ? -magnitude : magnitude);
      }
    }
    indptr[r + 1] = indices.length;
  }
  const Data =
    dtype === "float64"
      ? Float64Array
      : dtype === "float32"
        ? Float32Array
        : dtype === "int16"
          ? Int16Array
          : Int32Array;
  return { nRows, nCols, indptr, indices: Int32Array.from(indices), data: Data.from(values) };
}

/** scipy's tocsc: a counting sort by column, rows ascending within each. */
function toCsc(m: Csr): Layout {
  const indptr = new Int32Array(m.nCols + 1);
  for (const c of m.indices) indptr[c + 1] = (indptr[c + 1] as number) + 1;
  for (let c = 0; c < m.nCols; c++) indptr[c + 1] = (indptr[c + 1] as number) + (indptr[c] as number);
  const next = indptr.slice(0, m.nCols);
  const indices = new Int32Array(m.indices.length);
  const data = new (m.data.constructor as Float64ArrayConstructor)(m.indices.length);
  for (let r = 0; r < m.nRows; r++) {
    for (let k = m.indptr[r] as number; k < (m.indptr[r + 1] as number); k++) {
      const c = m.indices[k] as number;
      const at = next[c] as number;
      next[c] = at + 1;
      indices[at] = r;
      data[at] = m.data[k] as number;
    }
  }
  return layoutFromCompressed({ format: "csc", shape: [m.nRows, m.nCols], indptr, indices, data });
}

function layoutsOf(m: Csr, axes: readonly number[]): Layout[] {
  const out: Layout[] = [];
  if (axes.includes(0)) out.push(layoutFromCompressed({ format: "csr", shape: [m.nRows, m.nCols], ...m }));
  if (axes.includes(1)) out.push(toCsc(m));
  return out;
}

/** Row blocks of `size` rows, each keeping the whole arrays with indptr starting past 0 (as readers do). */
function* blocksOf(m: Csr, size: number): Generator<RowBlock> {
  for (let r = 0; r < m.nRows; r += size) {
    const n = Math.min(size, m.nRows - r);
    yield { nRows: n, indptr: m.indptr.subarray(r, r + n + 1), indices: m.indices, data: m.data };
  }
}

function assertSameObjects(streamed: MemoryStore, reference: MemoryStore): void {
  assert.deepEqual([...streamed.objects.keys()].sort(), [...reference.objects.keys()].sort());
  for (const [key, bytes] of reference.objects) {
    assert.ok(
      Buffer.from(bytes).equals(Buffer.from(streamed.objects.get(key) as Uint8Array)),
      `${key} differs`,
    );
  }
}

interface Case {
  name: string;
  m: Csr;
  axes: number[];
  block: number;
  chunk?: number;
  byteAddressable?: boolean;
  nnz?: boolean;
  spillFiles?: number;
  spillFrame?: number;
  assembly?: number;
  transposeMemory?: number;
}

const cases: Case[] = [
  {
    name: "both axes, chunked, small chunks",
    m: randomCsr(97, 61, 0.2, 1),
    axes: [0, 1],
    block: 10,
    chunk: 37,
  },
  {
    name: "both axes, default chunks (one short chunk per array)",
    m: randomCsr(50, 40, 0.3, 2),
    axes: [0, 1],
    block: 7,
  },
  {
    name: "more nonzeros than one spill frame and one assembly pass",
    m: randomCsr(400, 90, 0.4, 3),
    axes: [0, 1],
    block: 33,
    chunk: 500,
    spillFiles: 4,
    spillFrame: 64,
    assembly: 300,
  },
  {
    name: "axis 0 only, declared nnz",
    m: randomCsr(120, 30, 0.3, 4),
    axes: [0],
    block: 16,
    chunk: 50,
    nnz: true,
  },
  { name: "axis 1 only, float32", m: randomCsr(80, 45, 0.25, 5, "float32"), axes: [1], block: 9, chunk: 64 },
  {
    name: "float64 both axes, byte-addressable",
    m: randomCsr(64, 33, 0.3, 6, "float64"),
    axes: [0, 1],
    block: 5,
    byteAddressable: true,
  },
  { name: "chunks larger than the default", m: randomCsr(300, 200, 0.6, 7), axes: [0, 1], block: 64 },
  {
    name: "transposed in memory (transposeMemory above the nonzeros), float64",
    m: randomCsr(150, 70, 0.3, 11, "float64"),
    axes: [0, 1],
    block: 20,
    chunk: 90,
    spillFrame: 100,
    transposeMemory: 2 ** 20,
  },
  {
    name: "partly in memory, partly spilled; int16 values (codes aligned past odd batches)",
    m: randomCsr(151, 70, 0.3, 12, "int16"),
    axes: [0, 1],
    block: 19,
    chunk: 77,
    spillFrame: 37,
    spillFiles: 3,
    transposeMemory: 1000,
  },
  {
    name: "a batch of more rows than a record's 16-bit row offset holds",
    m: randomCsr(70_003, 3, 0.02, 13),
    axes: [1],
    block: 70_003,
  },
  {
    name: "a gene block of more columns than a record's 16-bit gene offset holds",
    m: randomCsr(6, 70_001, 0.01, 14),
    axes: [1],
    block: 6,
    spillFiles: 1,
  },
  {
    // 3,000 columns: 3 gene blocks of at most 1,024 by default; rows cross blocks in runs.
    name: "more columns than one default gene block, both axes",
    m: randomCsr(40, 3_000, 0.02, 15),
    axes: [0, 1],
    block: 7,
  },
];

for (const c of cases) {
  test(`streamed store equals writeStore's: ${c.name}`, async () => {
    const reference = new MemoryStore();
    await writeStore(reference, layoutsOf(c.m, c.axes), {
      ...(c.chunk ? { chunk: c.chunk } : {}),
      byteAddressable: c.byteAddressable === true,
    });
    const streamed = new MemoryStore();
    const spill = new MemorySpill();
    const result = await writeStoreFromRows(streamed, blocksOf(c.m, c.block), {
      shape: [c.m.nRows, c.m.nCols],
      axes: c.axes,
      ...(c.chunk ? { chunk: c.chunk } : {}),
      byteAddressable: c.byteAddressable === true,
      ...(c.nnz ? { nnz: c.m.data.length } : {}),
      ...(c.spillFiles ? { spillFiles: c.spillFiles } : {}),
      ...(c.spillFrame ? { spillFrame: c.spillFrame } : {}),
      ...(c.assembly ? { assembly: c.assembly } : {}),
      ...(c.transposeMemory ? { transposeMemory: c.transposeMemory } : {}),
      spill,
    });
    assert.equal(result.nnz, c.m.data.length);
    assertSameObjects(streamed, reference);
    // Axis 1 takes each nonzero's value and its 4-byte code (gene in block, row in batch): in
    // memory up to transposeMemory, the rest spilled.
    const records = c.axes.includes(1) ? c.m.data.length * (4 + c.m.data.BYTES_PER_ELEMENT) : 0;
    assert.ok(result.bytesInMemory <= (c.transposeMemory ?? 0));
    assert.ok(result.bytesSpilled + result.bytesInMemory >= records);
    if (c.transposeMemory === 2 ** 20) assert.equal(result.bytesInMemory, records);
    if (c.transposeMemory === 1000)
      assert.ok(result.bytesInMemory > 0 && result.bytesSpilled >= records - 1000);
  });
}

test("a wide shape writes int64 indices and indptr, as writeStore (and scipy) do", async () => {
  // 2^31 columns: int32 cannot hold the axis, so both index arrays are int64.
  const nCols = 2 ** 31 + 5;
  const m = {
    nRows: 3,
    nCols,
    indptr: Int32Array.of(0, 2, 2, 3),
    indices: Int32Array.of(0, 7, 9),
    data: Int32Array.of(4, -2, 5),
  };
  const wide = (rows: number[], cols: number[]) => ({
    indices: BigInt64Array.from(cols.map(BigInt)),
    indptr: BigInt64Array.from(rows.map(BigInt)),
  });
  const reference = new MemoryStore();
  await writeStore(
    reference,
    layoutFromCompressed({
      format: "csr",
      shape: [3, nCols],
      data: m.data,
      ...wide([0, 2, 2, 3], [0, 7, 9]),
    }),
  );
  const streamed = new MemoryStore();
  await writeStoreFromRows(streamed, [m], { shape: [3, nCols], axes: [0] });
  assertSameObjects(streamed, reference);
  const meta = JSON.parse(new TextDecoder().decode(streamed.objects.get("layouts/axis0/indptr/zarr.json")));
  assert.equal(meta.data_type, "int64");
});

test("a byte-addressable all-zero array still gets its one chunk, so readers can range into it", async () => {
  const m = {
    nRows: 2,
    nCols: 3,
    indptr: Int32Array.of(0, 1, 2),
    indices: Int32Array.of(0, 2),
    data: Int32Array.of(0, 0),
  };
  const store = new MemoryStore();
  await writeStoreFromRows(store, [m], { shape: [2, 3], byteAddressable: true });
  assert.ok(store.objects.has("layouts/axis0/data/c/0"));
  assert.ok(store.objects.has("layouts/axis1/maxima/c/0"));
  const reader = await openReader(store, { axis: 0 });
  assert.deepEqual([...(await reader.sliceAt(1)).values], [0]);
});

test("a store stopped before finish has no block: readers refuse it, and the spill is removed by abort", async () => {
  const m = randomCsr(40, 20, 0.3, 9);
  const store = new MemoryStore();
  const spill = new MemorySpill();
  const writer = await StreamWriter.open(store, { shape: [40, 20], spill, spillFrame: 8 });
  await writer.writeRows({ nRows: 20, indptr: m.indptr.subarray(0, 21), indices: m.indices, data: m.data });
  assert.ok(spill.peakBytes > 0);
  await writer.abort();
  await assert.rejects(openReader(store), { _tag: "IncompleteError" });
});

test("refusals: too many rows, too few rows, a column outside the shape, a wrong declared nnz", async () => {
  const m = randomCsr(10, 8, 0.5, 10);
  await assert.rejects(
    writeStoreFromRows(new MemoryStore(), blocksOf(m, 3), { shape: [9, 8] }),
    /declared 9/,
  );
  const short = new MemoryStore();
  await assert.rejects(writeStoreFromRows(short, blocksOf(m, 3), { shape: [11, 8] }), /10 rows were written/);
  await assert.rejects(openReader(short), { _tag: "IncompleteError" });
  await assert.rejects(
    writeStoreFromRows(new MemoryStore(), blocksOf(m, 3), { shape: [10, 5] }),
    /in column/,
  );
  await assert.rejects(
    writeStoreFromRows(new MemoryStore(), blocksOf(m, 3), { shape: [10, 8], nnz: m.data.length + 1 }),
    /were declared/,
  );
});

test("a row whose columns do not strictly ascend is refused, on either axis, with no block", async () => {
  // The transposition counts a row's nonzeros per gene block as runs, which only holds for
  // ascending columns; readers refuse such rows in axis 0 too. Row 1: columns 5 then 3; then 2 twice.
  for (const [indices, found] of [
    [Int32Array.of(1, 5, 3), /column 3 after column 5/],
    [Int32Array.of(4, 2, 2), /column 2 after column 2/],
  ] as const) {
    for (const axes of [[0], [1], [0, 1]]) {
      const store = new MemoryStore();
      const block = { nRows: 2, indptr: [0, 1, 3], indices, data: Int32Array.of(1, 2, 3) };
      await assert.rejects(writeStoreFromRows(store, [block], { shape: [2, 6], axes, spillFiles: 3 }), {
        _tag: "LayoutError",
        message: found,
      });
      await assert.rejects(openReader(store), { _tag: "IncompleteError" });
    }
  }
});

for (const [nRows, nCols] of [
  [0, 5],
  [6, 0],
] as const) {
  test(`an empty ${nRows} x ${nCols} matrix streams to writeStore's bytes`, async () => {
    const m: Csr = {
      nRows,
      nCols,
      indptr: new Int32Array(nRows + 1),
      indices: new Int32Array(0),
      data: new Int32Array(0),
    };
    const reference = new MemoryStore();
    await writeStore(reference, layoutsOf(m, [0, 1]));
    const streamed = new MemoryStore();
    await writeStoreFromRows(streamed, blocksOf(m, 4), { shape: [nRows, nCols], dtype: "int32" });
    assertSameObjects(streamed, reference);
  });
}

test("nnzAtMost, a bound above the nonzeros, writes writeStore's bytes with axis 0's indices streamed, not spooled", async () => {
  const m = randomCsr(120, 40, 0.3, 21);
  const reference = new MemoryStore();
  await writeStore(reference, layoutsOf(m, [0, 1]));
  const bounded = new MemoryStore();
  const result = await writeStoreFromRows(bounded, blocksOf(m, 25), {
    shape: [m.nRows, m.nCols],
    axes: [0, 1],
    nnzAtMost: m.data.length + 17,
  });
  assertSameObjects(bounded, reference);
  // Only axis 1's nonzeros went to temporary space: the indices' width was known from the bound.
  assert.equal(result.bytesSpilled, m.data.length * 8);
  const unbounded = await writeStoreFromRows(new MemoryStore(), blocksOf(m, 25), {
    shape: [m.nRows, m.nCols],
    axes: [0, 1],
  });
  assert.ok(unbounded.bytesSpilled > m.data.length * 8, "without a bound the indices are spooled");
});

test("nnzAtMost below the nonzeros written is refused at finish, with no block", async () => {
  const m = randomCsr(30, 10, 0.5, 22);
  const store = new MemoryStore();
  await assert.rejects(
    writeStoreFromRows(store, blocksOf(m, 7), { shape: [30, 10], nnzAtMost: m.data.length - 1 }),
    /above the bound of/,
  );
  await assert.rejects(openReader(store), { _tag: "IncompleteError" });
});

/**
 * A memory store writing objects in parts that copies each part three turns of the event loop
 * after it got it, as a file write does (which may take several): a part whose memory is reused
 * before the store took it shows in the object.
 */
function laggingStore() {
  const streamed = new MemoryStore();
  const store = Object.assign(streamed, {
    async setParts(key: string, byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void> {
      const whole = new Uint8Array(byteLength);
      let at = 0;
      for await (const part of parts) {
        for (let turn = 0; turn < 3; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
        whole.set(part, at);
        at += part.byteLength;
      }
      await streamed.set(key, whole);
    },
  });
  return { streamed, store };
}

test("an object written in parts takes each part from the caller's memory only until writeRows resolves", async () => {
  const m = randomCsr(90, 25, 0.3, 15);
  const reference = new MemoryStore();
  await writeStore(reference, layoutsOf(m, [0, 1]), { byteAddressable: true });
  const { streamed, store } = laggingStore();
  // Blocks in one pair of buffers, overwritten for the next block once writeRows resolved (as
  // input readers reuse theirs).
  const indices = new Int32Array(m.indices.length);
  const data = new Int32Array(m.data.length);
  async function* reused(): AsyncGenerator<RowBlock> {
    for (let r = 0; r < m.nRows; r += 10) {
      const n = Math.min(10, m.nRows - r);
      const lo = m.indptr[r] as number;
      const hi = m.indptr[r + n] as number;
      indices.fill(-1);
      data.fill(-7);
      indices.set(m.indices.subarray(lo, hi));
      data.set(m.data.subarray(lo, hi) as Int32Array);
      const indptr = Int32Array.from(m.indptr.subarray(r, r + n + 1), (v) => v - lo);
      yield { nRows: n, indptr, indices: indices.subarray(0, hi - lo), data: data.subarray(0, hi - lo) };
    }
  }
  await writeStoreFromRows(store, reused(), {
    shape: [m.nRows, m.nCols],
    byteAddressable: true,
    nnz: m.data.length,
  });
  assertSameObjects(streamed, reference);
});

test("axis 1's ranges lent from two assembly buffers to a lagging store keep their bytes", async () => {
  // Many small ranges (assembly of 12 nonzeros), each written turns after the store got it: an
  // assembly buffer reused before the store took the range lent from it would corrupt the object.
  const m = randomCsr(70, 40, 0.3, 23);
  const reference = new MemoryStore();
  await writeStore(reference, layoutsOf(m, [1]), { byteAddressable: true });
  const { streamed, store } = laggingStore();
  await writeStoreFromRows(store, blocksOf(m, 16), {
    shape: [m.nRows, m.nCols],
    axes: [1],
    byteAddressable: true,
    nnz: m.data.length,
    assembly: 12,
  });
  assertSameObjects(streamed, reference);
});

/** A memory store taking objects in parts (each part copied when it is taken), as a file or S3 upload. */
function partsStore(): MemoryStore & {
  setParts(key: string, byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void>;
} {
  const store = new MemoryStore();
  return Object.assign(store, {
    async setParts(key: string, byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void> {
      const whole = new Uint8Array(byteLength);
      let at = 0;
      for await (const part of parts) {
        whole.set(part, at);
        at += part.byteLength;
      }
      await store.set(key, whole);
    },
  });
}

for (const slots of [1, 2]) {
  test(`a store capping writes at ${slots} (fewer than the objects open) takes a byte-addressable stream`, async () => {
    // Four objects of axis 0 are open at once (data, indices, indptr, maxima): before the parts
    // were parked, the objects past the cap waited for a slot that the first ones held until
    // they were closed, while the writer waited for the later ones to take a part (a deadlock).
    const m = randomCsr(60, 25, 0.3, 31 + slots);
    const reference = new MemoryStore();
    await writeStore(reference, layoutsOf(m, [0, 1]), { byteAddressable: true });
    const inner = partsStore();
    const limited = withConcurrencyLimit(inner, slots);
    await writeStoreFromRows(limited, blocksOf(m, 9), {
      shape: [m.nRows, m.nCols],
      byteAddressable: true,
      nnz: m.data.length,
    });
    assert.equal(limited.inFlight, 0);
    assertSameObjects(inner, reference);
  });
}

test("parts parked past the memory allowance go to temporary space and reach the object in order", async () => {
  // One slot: the second object cannot start until the first is closed, so all its parts park;
  // past 8 bytes in memory they are written to the spill and read back, in order.
  const inner = partsStore();
  const store = withConcurrencyLimit(inner, 1);
  const spill = new MemorySpill();
  const context = {
    store,
    encoder: wasmEncoder,
    inFlight: new InFlight(2),
    spill,
    byteAddressable: true,
    chunk: undefined,
    parkInMemory: 8,
  };
  const first = new ArrayWriter(context, "a", "int32", 6);
  const second = new ArrayWriter(context, "b", "int32", 6);
  for (const values of [Int32Array.of(1, 2), Int32Array.of(3, 4), Int32Array.of(5, 6)]) {
    await first.append(values);
    await second.append(values.map((v) => -v));
  }
  await first.end();
  await second.end();
  await first.finish();
  await second.finish();
  assert.ok(spill.bytesSpilled >= 16, "the parts past the allowance were spilled");
  const read = async (key: string) => {
    const bytes = (await inner.get(key)) as Uint8Array;
    return [...new Int32Array(bytes.buffer, bytes.byteOffset, 6)];
  };
  assert.deepEqual(await read("a/c/0"), [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(await read("b/c/0"), [-1, -2, -3, -4, -5, -6]);
});

test("a part pushed while the previous one is still being written is refused", async () => {
  const store = partsStore();
  // 4 bytes ahead of the store: the first append's second half waits for the store to take the first.
  const context = byteAddressableContext(store, 4);
  const array = new ArrayWriter(context, "a", "int32", 4);
  const first = array.append(Int32Array.of(1, 2));
  await assert.rejects(array.append(Int32Array.of(3, 4)), {
    _tag: "StateError",
    message: /still being written/,
  });
  await first;
  await array.append(Int32Array.of(3, 4));
  await array.finish();
  const bytes = (await store.get("a/c/0")) as Uint8Array;
  assert.deepEqual([...new Int32Array(bytes.buffer, bytes.byteOffset, 4)], [1, 2, 3, 4]);
});

test("writeRows before the previous block was taken is refused, and the first block still lands", async () => {
  const m = randomCsr(20, 6, 0.4, 41);
  const reference = new MemoryStore();
  await writeStore(reference, layoutsOf(m, [0, 1]));
  const store = new MemoryStore();
  const writer = await StreamWriter.open(store, { shape: [m.nRows, m.nCols] });
  const [head, tail] = [...blocksOf(m, 10)] as [RowBlock, RowBlock];
  const first = writer.writeRows(head);
  await assert.rejects(writer.writeRows(tail), { _tag: "StateError", message: /await each writeRows/ });
  await first;
  await writer.writeRows(tail);
  await writer.finish();
  assertSameObjects(store, reference);
});

/**
 * A store taking objects in parts that copies a part only once the test allows it (`allow`), so a
 * test sees what the writer does while the store is busy; `failOn` fails the object at that part.
 */
function gatedStore(failOn?: { key: string; part: number }) {
  const inner = new MemoryStore();
  let allowed = 0;
  let wake: (() => void) | undefined;
  const taken: string[] = [];
  /** The parts as the store was given them (not copies). */
  const given: Uint8Array[] = [];
  const store = Object.assign(inner, {
    async setParts(key: string, byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void> {
      const whole = new Uint8Array(byteLength);
      let at = 0;
      let index = 0;
      for await (const part of parts) {
        given.push(part);
        while (allowed === 0) await new Promise<void>((resolve) => (wake = resolve));
        allowed--;
        // Keys come with the store's leading slash.
        if (failOn?.key === key.replace(/^\/+/, "") && failOn.part === index)
          throw new Error("disk full (test)");
        whole.set(part, at);
        at += part.byteLength;
        index++;
        taken.push(key);
      }
      await inner.set(key, whole);
    },
  });
  return {
    store,
    taken,
    given,
    allow(n: number) {
      allowed += n;
      wake?.();
    },
  };
}

/** The context of a byte-addressable ArrayWriter on `store` with `writeBehind` bytes of write-behind. */
function byteAddressableContext(store: Store, writeBehind: number) {
  return {
    store,
    encoder: wasmEncoder,
    inFlight: new InFlight(2),
    spill: new MemorySpill(),
    byteAddressable: true,
    chunk: undefined,
    writeBehind,
  };
}

/** Whether `promise` has settled once every task queued before it ran (no clock involved). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  return done;
}

test("parts are copied ahead of a busy store, up to the write-behind allowance, and land in order", async () => {
  const gated = gatedStore();
  const context = byteAddressableContext(gated.store, 32);
  const array = new ArrayWriter(context, "a", "int32", 12);
  // One buffer, reused by the caller as soon as each append resolved.
  const values = Int32Array.of(1, 2, 3, 4);
  await array.append(values);
  assert.equal(gated.taken.length, 0, "the store took nothing yet, but the first append resolved");
  values.set([5, 6, 7, 8]);
  await array.append(values);
  values.set([9, 10, 11, 12]);
  // 32 bytes are queued: the third append waits for the store.
  const third = array.append(values);
  assert.equal(await settled(third), false, "past the allowance, an append waits for the store");
  gated.allow(Number.POSITIVE_INFINITY);
  await third;
  values.fill(-1);
  await array.end();
  await array.finish();
  const bytes = (await gated.store.get("a/c/0")) as Uint8Array;
  assert.deepEqual(
    [...new Int32Array(bytes.buffer, bytes.byteOffset, 12)],
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
  );
});

/** Turns of the event loop until `done()` holds, at most `most`; whether it held. */
async function turnsUntil(done: () => boolean, most = 1000): Promise<boolean> {
  for (let turn = 0; turn < most && !done(); turn++)
    await new Promise<void>((resolve) => setImmediate(resolve));
  return done();
}

test("a part lent to an object written in parts is written from the lender's memory, given back once taken", async () => {
  const gated = gatedStore();
  const array = new ArrayWriter(byteAddressableContext(gated.store, 1 << 20), "a", "int32", 6);
  let released = 0;
  const first = Int32Array.of(1, 2, 3);
  await array.append(first, () => released++);
  assert.equal(released, 0, "queued uncopied: still lent while the store has not taken it");
  assert.equal(gated.given[0]?.buffer, first.buffer, "the store is given the lender's memory");
  gated.allow(1);
  assert.ok(await turnsUntil(() => released === 1), "given back once the store asked for the next part");
  first.fill(-1);
  const second = Int32Array.of(4, 5, 6);
  await array.append(second, () => released++);
  gated.allow(Number.POSITIVE_INFINITY);
  await array.end();
  await array.finish();
  assert.equal(released, 2, "each part given back once");
  const bytes = (await gated.store.get("a/c/0")) as Uint8Array;
  assert.deepEqual([...new Int32Array(bytes.buffer, bytes.byteOffset, 6)], [1, 2, 3, 4, 5, 6]);
});

test("a store failing gives back the parts lent to it, and the next lent part is refused and given back", async () => {
  const gated = gatedStore({ key: "a/c/0", part: 0 });
  const array = new ArrayWriter(byteAddressableContext(gated.store, 1 << 20), "a", "int32", 6);
  let released = 0;
  await array.append(Int32Array.of(1, 2, 3), () => released++);
  gated.allow(Number.POSITIVE_INFINITY);
  assert.ok(await turnsUntil(() => released === 1), "the failed store's part is given back");
  await assert.rejects(
    array.append(Int32Array.of(4, 5, 6), () => released++),
    /disk full \(test\)/,
  );
  assert.equal(released, 2, "a part refused is given back too");
  assert.equal(await gated.store.get("a/c/0"), undefined, "nothing landed under the key");
});

test("a store failing without closing the parts it was given gives back the lent part it holds", async () => {
  // The part handed out was given back only when the generator resumed or closed: a store that
  // took it and rejected with its iterator left open kept it lent for ever (and a block lending
  // its memory waited for it for ever).
  let fail = () => {};
  const failing = new Promise<void>((resolve) => (fail = resolve));
  let took = false;
  const store = Object.assign(new MemoryStore(), {
    async setParts(_key: string, _byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void> {
      took = (await parts[Symbol.asyncIterator]().next()).done === false;
      await failing;
      throw new Error("disk full (test)");
    },
  });
  const array = new ArrayWriter(byteAddressableContext(store, 1 << 20), "a", "int32", 6);
  let released = 0;
  await array.append(Int32Array.of(1, 2, 3), () => released++);
  assert.ok(await turnsUntil(() => took), "the store took the lent part");
  assert.equal(released, 0, "still lent while the store holds it");
  fail();
  assert.ok(await turnsUntil(() => released === 1), "the failed store's part is given back");
  await assert.rejects(array.end(), /disk full \(test\)/);
  assert.equal(released, 1, "given back once");
});

test("a store failing on a queued part fails the append waiting for room with the store's error", async () => {
  const gated = gatedStore({ key: "a/c/0", part: 1 });
  const context = byteAddressableContext(gated.store, 8);
  const array = new ArrayWriter(context, "a", "int32", 8);
  await array.append(Int32Array.of(1, 2));
  const waiting = array.append(Int32Array.of(3, 4, 5, 6));
  assert.equal(await settled(waiting), false);
  gated.allow(Number.POSITIVE_INFINITY);
  await assert.rejects(waiting, /disk full \(test\)/);
  await assert.rejects(array.end(), /disk full \(test\)/);
  assert.equal(await gated.store.get("a/c/0"), undefined, "nothing landed under the key");
});

test("a store failing without closing the parts it was given fails the append waiting for room", async () => {
  // The wait for room ended only when the parts generator ended; a store that stops iterating
  // and rejects (its iterator left open) left the append waiting for ever.
  let fail = () => {};
  const failing = new Promise<void>((resolve) => (fail = resolve));
  const store = Object.assign(new MemoryStore(), {
    async setParts(_key: string, _byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void> {
      await parts[Symbol.asyncIterator]().next();
      await failing;
      throw new Error("disk full (test)");
    },
  });
  const array = new ArrayWriter(byteAddressableContext(store, 8), "a", "int32", 6);
  await array.append(Int32Array.of(1, 2));
  const waiting = array.append(Int32Array.of(3, 4, 5, 6));
  assert.equal(await settled(waiting), false, "past the allowance, the append waits for the store");
  fail();
  assert.equal(await settled(waiting), true, "the store's failure ends the wait");
  await assert.rejects(waiting, /disk full \(test\)/);
});

test("a write failing on a part queued behind the writer fails the write, and the store has no block", async () => {
  const m = randomCsr(90, 25, 0.3, 51);
  const gated = gatedStore({ key: "layouts/axis0/data/c/0", part: 2 });
  gated.allow(Number.POSITIVE_INFINITY);
  await assert.rejects(
    writeStoreFromRows(gated.store, blocksOf(m, 10), {
      shape: [m.nRows, m.nCols],
      byteAddressable: true,
      nnz: m.data.length,
    }),
    /disk full \(test\)/,
  );
  await assert.rejects(openReader(gated.store), { _tag: "IncompleteError" });
  assert.equal(await gated.store.get("layouts/axis0/data/c/0"), undefined);
});

/**
 * Temporary space whose `columns` file (axis 1's batches) copies an appended batch a turn of the
 * event loop after the call, as a file write does, and fails its append number `failAt` if given.
 */
function laggingSpill(failAt?: number): MemorySpill {
  const spill = new MemorySpill();
  const create = spill.create.bind(spill);
  spill.create = async (name: string) => {
    const file = await create(name);
    if (name !== "columns") return file;
    const append = file.append.bind(file);
    let calls = 0;
    file.append = async (parts) => {
      const call = calls++;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (call === failAt) throw new Error("spill disk full (test)");
      await append(parts);
    };
    return file;
  };
  return spill;
}

test("batches appended to the spill while the next is sorted keep their bytes (two scratch buffers)", async () => {
  const m = randomCsr(200, 60, 0.3, 61);
  const reference = new MemoryStore();
  await writeStore(reference, layoutsOf(m, [0, 1]), { chunk: 70 });
  const streamed = new MemoryStore();
  const result = await writeStoreFromRows(streamed, blocksOf(m, 50), {
    shape: [m.nRows, m.nCols],
    chunk: 70,
    spillFrame: 40,
    spillFiles: 3,
    spill: laggingSpill(),
  });
  assert.ok(result.bytesSpilled >= m.data.length * 8, "every batch went through the spill");
  assertSameObjects(streamed, reference);
});

test("a spill append failing while the next batch is sorted fails the write, with no block", async () => {
  const m = randomCsr(200, 60, 0.3, 62);
  const store = new MemoryStore();
  await assert.rejects(
    writeStoreFromRows(store, blocksOf(m, 50), {
      shape: [m.nRows, m.nCols],
      spillFrame: 40,
      spill: laggingSpill(3),
    }),
    /spill disk full \(test\)/,
  );
  await assert.rejects(openReader(store), { _tag: "IncompleteError" });
});
