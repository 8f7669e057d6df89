/**
 * A loader making its batches in a shared file (`sharedBatches`, loader/ring.ts): the batches equal
 * those of a loader in its own memory, field by field, on every path; the file holds them where
 * another process reads them (read back here with plain file reads, not through the loader's
 * mapping); a slot is never written while its batch is held; a batch denser than a slot, or made
 * while spilling, is in the loader's own memory.
 */
import assert from "node:assert/strict";
import { closeSync, openSync, readSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import {
  type Batch,
  createLoader,
  encodeTile,
  type LoaderOptions,
  openDataset,
  writeDataset,
} from "../src/index.js";
import { type SharedBatchesLayout, SLOT_MAGIC } from "../src/loader/ring.js";
import { zstdCompressor } from "../src/node.js";
import { type DenseMatrix, memorySource } from "./dataset-fixtures.js";
import { checkBatchValues, loaderDataset } from "./loader-fixtures.js";

/** A new, unlinked file for a loader's batches: its descriptor. */
function sharedFile(): number {
  const path = join(
    tmpdir(),
    `deltacells-shared-batches-${process.pid}-${Math.random().toString(36).slice(2)}`,
  );
  const fd = openSync(path, "wx+");
  unlinkSync(path);
  return fd;
}

/** Bytes `[at, at + n)` of the file, read with pread (as another process sees them). */
function fileBytes(fd: number, at: number, n: number): Buffer {
  const out = Buffer.alloc(n);
  assert.equal(readSync(fd, out, 0, n, at), n);
  return out;
}

/** What a reader of the file finds in slot `slot`: the header, the batch's CSR arrays, cells and codes. */
function readSlot(fd: number, layout: SharedBatchesLayout, slot: number) {
  const at = slot * layout.slotBytes;
  const head = fileBytes(fd, at + layout.offsets.header, 48);
  const [seq, epoch, index, size, nnz] = [8, 16, 24, 32, 40].map((o) => head.readDoubleLE(o)) as number[];
  const indptr = fileBytes(fd, at + layout.offsets.indptr, 8 * (size! + 1));
  const f64 = new Float64Array(indptr.buffer, indptr.byteOffset, size! + 1);
  const ind = fileBytes(fd, at + layout.offsets.indices, 4 * nnz!);
  const dat = fileBytes(fd, at + layout.offsets.data, 4 * nnz!);
  const cells = fileBytes(fd, at + layout.offsets.cells, 8 * size!);
  const codes = Object.fromEntries(
    Object.entries(layout.obs).map(([name, offset]) => {
      const raw = fileBytes(fd, at + offset, 4 * size!);
      return [name, [...new Int32Array(raw.buffer, raw.byteOffset, size!)]];
    }),
  );
  return {
    magic: head.readUInt32LE(0),
    seq,
    epoch,
    index,
    size,
    nnz,
    indptr: [...f64],
    indices: [...new Int32Array(ind.buffer, ind.byteOffset, nnz!)],
    data:
      layout.values === "float32"
        ? [...new Float32Array(dat.buffer, dat.byteOffset, nnz!)]
        : [...new Int32Array(dat.buffer, dat.byteOffset, nnz!)],
    cells: [...new Float64Array(cells.buffer, cells.byteOffset, size!)],
    codes,
  };
}

function snapshot(b: Batch) {
  assert.equal(b.format, "csr");
  if (b.format !== "csr") throw new Error("csr");
  return {
    epoch: b.epoch,
    index: b.index,
    size: b.size,
    padded: b.padded,
    cells: [...b.cells],
    indptr: [...b.indptr],
    indices: [...b.indices],
    data: [...b.data],
    dataType: b.data.constructor.name,
    sortedIndices: b.sortedIndices,
    obs: JSON.parse(
      JSON.stringify(b.obs, (_, v) => (ArrayBuffer.isView(v) ? [...(v as unknown as number[])] : v)),
    ),
  };
}

/** Every batch of one epoch of a loader in its own memory, as plain values. */
async function ownBatches(ds: Awaited<ReturnType<typeof openDataset>>, opts: LoaderOptions) {
  const loader = await createLoader(ds, opts);
  const out: ReturnType<typeof snapshot>[] = [];
  try {
    for await (const b of loader) {
      out.push(snapshot(b));
      b.release();
    }
  } finally {
    await loader.close();
  }
  return out;
}

const CASES: LoaderOptions[] = [
  { batchSize: 5, seed: 11, bufferTiles: 2 },
  { batchSize: 7, seed: 3, epoch: 2, worldSize: 3, rank: 2 },
  { batchSize: 20, seed: 5, bufferTiles: 1, worldSize: 2, rank: 1 },
  { batchSize: 6, seed: 8, startBatch: 4, worldSize: 2, rank: 0 },
  { batchSize: 9, seed: 2, values: "float32", obs: ["cell type/ü", "maybe", "n_counts"] },
  { batchSize: 7, seed: 4, genes: [3, 1, 8] }, // the copying path: genes left out
  { batchSize: 7, seed: 4, sortIndices: true }, // the copying path: rows sorted on this thread
  { batchSize: 5, seed: 6, order: "elastic", lanes: 4, worldSize: 2, rank: 1 }, // two lanes at once
];

test("batches made in a shared file equal a loader's own, field by field, and the file holds each where its header says", async () => {
  const { store, m } = await loaderDataset();
  for (const threads of [undefined, 2]) {
    for (const opts of CASES) {
      const what = `${JSON.stringify(opts)}, threads ${threads}`;
      const ds = await openDataset(store);
      const expected = await ownBatches(ds, { ...opts, threads });
      const fd = sharedFile();
      const loader = await createLoader(ds, { ...opts, threads, sharedBatches: { fd } });
      try {
        const shared = loader.sharedBatches!;
        const { layout } = shared;
        assert.equal(layout.bytes, layout.slots * layout.slotBytes, what);
        const got: unknown[] = [];
        const seqs = new Set<number>();
        for await (const b of loader) {
          checkBatchValues(m, b, loader.genes.sourceIndices);
          const snap = snapshot(b);
          got.push(snap);
          const where = shared.slotOf(b);
          assert.ok(where !== undefined, `${what}: batch ${b.index} is in a slot`);
          assert.ok(!seqs.has(where.seq), `${what}: each batch its own sequence number`);
          seqs.add(where.seq);
          const file = readSlot(fd, layout, where.slot);
          assert.equal(file.magic, SLOT_MAGIC, what);
          assert.deepEqual(
            { ...file, magic: undefined },
            {
              magic: undefined,
              seq: where.seq,
              epoch: snap.epoch,
              index: snap.index,
              size: snap.size,
              nnz: snap.indices.length,
              indptr: snap.indptr,
              indices: snap.indices,
              data: snap.data,
              cells: snap.cells,
              // Every category column's codes, and no other column's.
              codes: Object.fromEntries(
                Object.entries(snap.obs)
                  .filter(([, col]) => (col as { kind: string }).kind === "category")
                  .map(([name, col]) => [name, (col as { codes: number[] }).codes]),
              ),
            },
            `${what}: batch ${b.index} as the file holds it`,
          );
          b.release();
        }
        assert.deepEqual(got, expected, what);
      } finally {
        await loader.close();
        closeSync(fd);
      }
    }
  }
});

test("a slot is never written while its batch is held: the loader waits for the one released, or spills into its own memory", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  // One batch per shuffle window (batches of a tile, in order), so every slot can be held at once:
  // on the slot path, and on the copying path (genes left out).
  for (const opts of [
    { batchSize: 8, shuffle: false, bufferTiles: 1 },
    { batchSize: 8, seed: 2, bufferTiles: 1, genes: [3, 1, 8] },
  ] satisfies LoaderOptions[]) {
    const what = JSON.stringify(opts);
    const reference = await ownBatches(ds, opts);
    const fd = sharedFile();
    const slots = 3;
    const loader = await createLoader(ds, { ...opts, sharedBatches: { fd, slots } });
    const shared = loader.sharedBatches!;
    assert.equal(shared.layout.slots, slots, what);
    const it = loader[Symbol.asyncIterator]();
    const next = async () => {
      const r = await it.next();
      assert.ok(!r.done, what);
      return r.value;
    };
    const held: { batch: Batch; slot: number; snap: ReturnType<typeof snapshot> }[] = [];
    for (let k = 0; k < slots; k++) {
      const b = await next();
      const where = shared.slotOf(b);
      assert.ok(where !== undefined, `${what}: batch ${k} in a slot`);
      held.push({ batch: b, slot: where.slot, snap: snapshot(b) });
    }
    // Every slot is lent: the next batch waits for the one given back.
    const waiting = next();
    const freed = held.shift()!;
    freed.batch.release();
    const after = await waiting;
    assert.equal(shared.slotOf(after)?.slot, freed.slot, `${what}: the batch waited for the released slot`);
    held.push({ batch: after, slot: freed.slot, snap: snapshot(after) });
    // Told to spill, the loader makes the batches it has no slot for in its own memory.
    shared.spill();
    const spilled: Batch[] = [];
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      spilled.push(r.value);
    }
    assert.ok(spilled.length > 0 && spilled.every((b) => shared.slotOf(b) === undefined), what);
    const all = [...held.map((h) => snapshot(h.batch)), ...spilled.map(snapshot)];
    assert.deepEqual(all, reference.slice(1), what);
    // The held batches still hold what they held when handed out, in the file too.
    for (const h of held) {
      assert.deepEqual(snapshot(h.batch), h.snap, what);
      const file = readSlot(fd, shared.layout, h.slot);
      assert.deepEqual(
        [file.index, file.indices, file.data],
        [h.snap.index, h.snap.indices, h.snap.data],
        what,
      );
    }
    await loader.close();
    closeSync(fd);
  }
});

test("a batch denser than a slot is made in the loader's own memory, equal to the loader's own", async () => {
  // Cells 0-7 of 250 genes, the others of 3: batch 0 (no shuffle) needs more than the slots hold.
  const nCells = 32;
  const nGenes = 300;
  const values = new Int32Array(nCells * nGenes);
  for (let c = 0; c < nCells; c++)
    for (let g = 0; g < (c < 8 ? 250 : 3); g++)
      values[c * nGenes + ((g * 7 + c) % nGenes)] = 1 + ((c + g) % 9);
  const matrix: DenseMatrix = { nCells, nGenes, values };
  const store = new MemoryStore();
  const encoder = {
    encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 3 }),
  };
  await writeDataset(memorySource(matrix), store, { encoder, compress: zstdCompressor(3), tileSize: 16 });
  const ds = await openDataset(store);
  const opts = { batchSize: 8, shuffle: false } satisfies LoaderOptions;
  for (const threads of [undefined, 1]) {
    const expected = await ownBatches(ds, { ...opts, threads });
    const fd = sharedFile();
    const loader = await createLoader(ds, { ...opts, threads, sharedBatches: { fd } });
    const got: unknown[] = [];
    const outside: number[] = [];
    for await (const b of loader) {
      checkBatchValues(matrix, b, loader.genes.sourceIndices);
      got.push(snapshot(b));
      if (loader.sharedBatches!.slotOf(b) === undefined) outside.push(b.index);
      b.release();
    }
    assert.ok(loader.sharedBatches!.layout.capacity < 8 * 250, "the slots are smaller than batch 0");
    assert.deepEqual(outside, [0]);
    assert.deepEqual(got, expected);
    await loader.close();
    closeSync(fd);
  }
});

test("a shared batch file with too few slots, or with dense output, is refused naming what would work", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const fd = sharedFile();
  try {
    await assert.rejects(
      createLoader(ds, { batchSize: 4, bufferTiles: 2, sharedBatches: { fd, slots: 1 } }),
      (err: Error & { _tag?: string; field?: string }) =>
        err._tag === "InvalidInput" &&
        err.field === "sharedBatches.slots" &&
        /give at least \d+/.test(err.message),
    );
    await assert.rejects(
      createLoader(ds, { output: "dense", sharedBatches: { fd } }),
      /sharedBatches must be absent with output "dense"/,
    );
    await assert.rejects(createLoader(ds, { sharedBatches: {} as never }), /an open file descriptor/);
  } finally {
    closeSync(fd);
  }
});
