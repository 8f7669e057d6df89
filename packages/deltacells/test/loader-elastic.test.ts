/**
 * The elastic order against its contract (docs/loader.md, "Elastic order"): the epoch's global
 * batch sequence is the same whatever the world size (any divisor of `lanes`), rank r of W yields
 * global batches r, r + W, ..., a state saved at one world size resumes at another with exactly
 * the global batches not yet consumed (padding or drops reported), and every tile is read by the
 * one rank that serves its lane (a tile cut between two lanes by both of them).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RangeQuery, ReadableStore } from "@deltacells/storage";
import { createLocalDecoder } from "../src/codec/local-decoder.js";
import { tileKey } from "../src/dataset/manifest.js";
import {
  createLoader,
  type Dataset,
  isDeltacellsError,
  type LoaderOptions,
  type LoaderState,
  openDataset,
  type TileDecoder,
} from "../src/index.js";
import { checkBatchValues, loaderDataset } from "./loader-fixtures.js";

/** 203 cells in tiles of 8 (the last of 3): 26 tiles, 9 cells a lane at 24 lanes. */
const N = 203;
const TILE = 8;
const LANES = 24;
const BASE = { batchSize: 4, seed: 5, epoch: 1, order: "elastic", lanes: LANES, bufferTiles: 2 } as const;

interface Got {
  /** The step (the same on every rank of one world). */
  index: number;
  global: number;
  cells: number[];
  padded: number;
}

/** A global batch's contents, whatever step of whichever world yielded it. */
const contents = ({ index: _, ...rest }: Got) => rest;

/** A store that records the tile keys read. */
function recording(inner: ReadableStore) {
  const keys: string[] = [];
  const store = {
    url: "memory://recording",
    get: (k: string, o?: object) => {
      if (k.startsWith("tiles/")) keys.push(k);
      return inner.get(k, o);
    },
    getRange: (k: string, r: RangeQuery, o?: object) => inner.getRange(k, r, o),
  };
  return { store, keys };
}

async function fixture() {
  const { store, m } = await loaderDataset(N, TILE);
  const rec = recording(store);
  return { ds: await openDataset(rec.store), m, rec };
}

/** One rank's batches (values checked), stopping after `stopAfter`; with the state then and the summary before. */
async function rankRun(
  ds: Dataset,
  m: Awaited<ReturnType<typeof fixture>>["m"],
  opts: LoaderOptions,
  stopAfter = Number.POSITIVE_INFINITY,
) {
  const loader = await createLoader(ds, opts);
  const summary = loader.epochSummary();
  const got: Got[] = [];
  if (stopAfter > 0)
    for await (const b of loader) {
      checkBatchValues(m, b);
      if (opts.order === "elastic" || opts.resume)
        assert.notEqual(b.globalIndex, undefined, "an elastic batch has its global index");
      else assert.equal(b.globalIndex, undefined, "a batch of the default order has no global index");
      got.push({ index: b.index, global: b.globalIndex ?? -1, cells: [...b.cells], padded: b.padded });
      b.release();
      if (got.length === stopAfter) break;
    }
  const state: LoaderState = JSON.parse(JSON.stringify(loader.state()));
  await loader.close();
  return { got, state, summary };
}

/** Every rank of a world, each stopping after `stopAfter` batches (in step, as a checkpoint is). */
async function world(
  ds: Dataset,
  m: Awaited<ReturnType<typeof fixture>>["m"],
  worldSize: number,
  opts: LoaderOptions,
  stopAfter = Number.POSITIVE_INFINITY,
) {
  const ranks = [];
  for (let rank = 0; rank < worldSize; rank++)
    ranks.push(await rankRun(ds, m, { ...opts, rank, worldSize }, stopAfter));
  return ranks;
}

/** The global batches of a world's runs, by global index (each must come once), without their steps. */
function byGlobal(ranks: { got: Got[] }[]): Map<number, Omit<Got, "index">> {
  const out = new Map<number, Omit<Got, "index">>();
  for (const r of ranks)
    for (const b of r.got) {
      assert.ok(!out.has(b.global), `global batch ${b.global} yielded twice`);
      out.set(b.global, contents(b));
    }
  return out;
}

test("the elastic order's global batch sequence is the same on 1, 2, 3 and 8 ranks, and rank r of W yields global batches r, r + W, ...", async () => {
  const { ds, m } = await fixture();
  let reference: ReturnType<typeof byGlobal> | undefined;
  for (const worldSize of [1, 2, 3, 8]) {
    const ranks = await world(ds, m, worldSize, BASE);
    const counts = ranks.map((r) => r.got.length);
    assert.ok(
      counts.every((n) => n === counts[0]),
      `every rank yields as many batches: ${counts}`,
    );
    ranks.forEach((r, rank) => {
      assert.deepEqual(
        r.got.map((b) => b.global),
        r.got.map((_, k) => rank + k * worldSize),
        `rank ${rank} of ${worldSize}`,
      );
      assert.deepEqual(
        r.got.map((b) => b.index),
        r.got.map((_, k) => k),
      );
      assert.equal(r.summary.batches, r.got.length);
      assert.equal(
        r.summary.elastic?.globalBatches,
        LANES * Math.ceil(Math.ceil(N / LANES) / BASE.batchSize),
      );
    });
    const all = byGlobal(ranks);
    const G = ranks[0]!.summary.elastic!.globalBatches;
    assert.deepEqual(
      [...all.keys()].sort((a, b) => a - b),
      Array.from({ length: G }, (_, g) => g),
    );
    // Every cell exactly once, apart from the lanes' padding (reported in the summaries).
    const padded = ranks.flatMap((r) => [...r.summary.padded]);
    const yielded = [...all.values()].flatMap((b) => b.cells.slice(0, b.cells.length - b.padded));
    assert.deepEqual(
      yielded.sort((a, b) => a - b),
      Array.from({ length: N }, (_, c) => c),
    );
    assert.equal(padded.length, LANES * Math.ceil(N / LANES) - N);
    if (reference === undefined) reference = all;
    else assert.deepEqual(all, reference, `the sequence at world size ${worldSize} is the one at 1`);
  }
});

test("elastic batches are a function of seed and epoch: the same again, other epochs and seeds differ", async () => {
  const { ds, m } = await fixture();
  const cells = async (o: LoaderOptions) =>
    (await world(ds, m, 2, o)).flatMap((r) => r.got.map((b) => b.cells));
  const once = await cells(BASE);
  assert.deepEqual(await cells(BASE), once);
  assert.notDeepEqual(await cells({ ...BASE, epoch: 2 }), once);
  assert.notDeepEqual(await cells({ ...BASE, seed: 6 }), once);
});

test("with lanes equal to the world size the elastic order yields the default order's batches", async () => {
  const { ds, m } = await fixture();
  const { order: _o, lanes: _l, ...plain } = BASE;
  for (let rank = 0; rank < 3; rank++) {
    const elastic = await rankRun(ds, m, { ...BASE, lanes: 3, rank, worldSize: 3 });
    const ordinary = await rankRun(ds, m, { ...plain, rank, worldSize: 3 });
    assert.deepEqual(
      elastic.got.map((b) => b.cells),
      ordinary.got.map((b) => b.cells),
    );
  }
});

for (const [from, to, steps] of [
  [8, 4, [1, 4, 8]],
  [8, 1, [2, 7]],
  [3, 2, [1, 5, 8, 23]],
] as const) {
  test(`a state saved on ${from} ranks resumes on ${to} with each global batch not yet consumed exactly once`, async () => {
    const { ds, m } = await fixture();
    const reference = byGlobal(await world(ds, m, 1, BASE));
    const G = reference.size;
    for (const step of steps) {
      const before = await world(ds, m, from, BASE, step);
      const states = before.map((r) => r.state);
      // The state is the world's: every rank's is the same but for its own rank.
      const consumed = step * from;
      for (const s of states) {
        assert.equal(s.globalBatchesConsumed, consumed);
        assert.equal(s.order, "elastic");
        assert.equal(s.lanes, LANES);
      }
      const after = await world(ds, m, to, { resume: states[0]! });
      const counts = after.map((r) => r.got.length);
      assert.ok(
        counts.every((n) => n === counts[0]),
        `every rank yields as many batches: ${counts}`,
      );
      const real = new Map<number, Omit<Got, "index">>();
      for (const r of after)
        for (const b of r.got) {
          if (b.global >= G) {
            // Padding: a whole batch repeating global batch g - lanes, reported as padding.
            assert.equal(b.padded, b.cells.length);
            assert.deepEqual(b.cells, reference.get(b.global - LANES)!.cells);
            continue;
          }
          assert.ok(!real.has(b.global), `global batch ${b.global} twice`);
          real.set(b.global, contents(b));
        }
      // Exactly the global batches from the resume point on, as the reference made them.
      assert.deepEqual(
        [...real.keys()].sort((a, b) => a - b),
        Array.from({ length: G - consumed }, (_, i) => consumed + i),
        `resumed after ${step} steps on ${from}`,
      );
      for (const [g, b] of real) assert.deepEqual(b, reference.get(g));
      // So each cell comes once over the two runs, apart from the lanes' padding rows.
      const cells = [...before.flatMap((r) => r.got), ...real.values()].flatMap((b) =>
        b.cells.slice(0, b.cells.length - b.padded),
      );
      assert.deepEqual(
        cells.sort((a, b) => a - b),
        Array.from({ length: N }, (_, c) => c),
      );
      // The summaries say what comes: the batches, the padding (lane padding and repeats).
      const pads = (G - consumed) % to === 0 ? 0 : to - ((G - consumed) % to);
      assert.equal(after.filter((r) => r.got.at(-1)!.global >= G).length, pads);
      for (const r of after) {
        assert.equal(r.summary.batches - r.summary.elastic!.firstBatch, r.got.length);
        const padded = r.got.flatMap((b) => b.cells.slice(b.cells.length - b.padded));
        assert.deepEqual([...r.summary.padded].sort(), padded.sort());
        // After the epoch's end the state points at the next one.
        assert.equal(r.state.epoch, BASE.epoch + 1);
        assert.equal(r.state.globalBatchesConsumed, 0);
      }
    }
  });
}

test("resumed twice (8, then 3, then 2 ranks) the epoch still yields each global batch once", async () => {
  const { ds, m } = await fixture();
  const reference = byGlobal(await world(ds, m, 1, BASE));
  const first = await world(ds, m, 8, BASE, 2);
  const second = await world(ds, m, 3, { resume: first[0]!.state }, 5);
  assert.equal(second[0]!.state.globalBatchesConsumed, 16 + 15);
  const third = await world(ds, m, 2, { resume: second[0]!.state });
  const seen = [...first, ...second, ...third]
    .flatMap((r) => r.got)
    .filter((b) => b.global < reference.size)
    .map((b) => b.global)
    .sort((a, b) => a - b);
  assert.deepEqual(
    seen,
    [...reference.keys()].sort((a, b) => a - b),
  );
});

test("with dropLast a resume drops the global batches past the last full round, and says so", async () => {
  const { ds, m } = await fixture();
  const opts = { ...BASE, dropLast: true };
  const before = await world(ds, m, 3, opts, 5);
  const after = await world(ds, m, 2, { resume: before[0]!.state });
  const G = before[0]!.summary.elastic!.globalBatches;
  const counts = after.map((r) => r.got.length);
  assert.equal(counts[0], Math.floor((G - 15) / 2));
  assert.ok(counts.every((n) => n === counts[0]));
  const yielded = [...before, ...after].flatMap((r) => r.got).flatMap((b) => b.cells);
  const dropped = after.flatMap((r) => [...r.summary.dropped]);
  assert.deepEqual(
    [...yielded, ...dropped].sort((a, b) => a - b),
    Array.from({ length: N }, (_, c) => c),
  );
  assert.ok(dropped.length > 0);
});

test("each rank reads only the tiles of its lanes: a tile twice only when two lanes share it", async () => {
  const { ds, m, rec } = await fixture();
  const nTiles = Math.ceil(N / TILE);
  for (const worldSize of [1, 2, 8]) {
    let reads = 0;
    for (let rank = 0; rank < worldSize; rank++) {
      rec.keys.length = 0;
      const r = await rankRun(ds, m, { ...BASE, rank, worldSize });
      const own = [...new Set(r.got.flatMap((b) => b.cells).map((c) => tileKey(Math.floor(c / TILE))))];
      assert.deepEqual([...new Set(rec.keys)].sort(), own.sort(), `rank ${rank} of ${worldSize}`);
      reads += rec.keys.length;
    }
    assert.ok(
      reads >= nTiles && reads <= nTiles + LANES - 1,
      `${reads} tile reads at world size ${worldSize}`,
    );
  }
  // Resumed on fewer ranks (one tile a window), a rank reads only tiles holding cells it yields.
  const opts = { ...BASE, bufferTiles: 1 };
  const before = await world(ds, m, 8, opts, 3);
  for (let rank = 0; rank < 4; rank++) {
    rec.keys.length = 0;
    const r = await rankRun(ds, m, { resume: before[0]!.state, rank, worldSize: 4 });
    const own = new Set(r.got.flatMap((b) => b.cells).map((c) => tileKey(Math.floor(c / TILE))));
    for (const k of rec.keys)
      assert.ok(own.has(k), `rank ${rank} of 4 read ${k}, none of whose cells it yields`);
  }
});

test("the copying path and a pool yield the same elastic batches as the slot path", async () => {
  const { ds, m } = await fixture();
  const slots = byGlobal(await world(ds, m, 2, BASE));
  assert.deepEqual(byGlobal(await world(ds, m, 2, { ...BASE, onUnreadableTile: "skip" })), slots);
  assert.deepEqual(byGlobal(await world(ds, m, 2, { ...BASE, threads: 2 })), slots);
  // Dense rows from a resume with a padding batch, on both paths.
  const before = await world(ds, m, 3, BASE, 5);
  const dense = byGlobal(await world(ds, m, 2, { resume: before[0]!.state, output: "dense" }));
  const copying = byGlobal(
    await world(ds, m, 2, { resume: before[0]!.state, output: "dense", onUnreadableTile: "skip" }),
  );
  assert.deepEqual(dense, copying);
});

test("elastic refusals: a world size that does not divide lanes, lanes or startGlobalBatch in the default order, a start past the epoch, a state's lanes", async () => {
  const { ds } = await fixture();
  const refused = async (o: LoaderOptions, field: string, what: RegExp) =>
    assert.rejects(createLoader(ds, o), (e: unknown) => {
      assert.ok(isDeltacellsError(e, "InvalidInput"), String(e));
      assert.equal(e.field, field);
      assert.match(e.message, what);
      return true;
    });
  await refused(
    { ...BASE, worldSize: 5, rank: 0 },
    "worldSize",
    /divisor of lanes \(24\): 1, 2, 3, 4, 6, 8, 12, 24/,
  );
  await refused({ lanes: 4 }, "lanes", /order is "elastic"/);
  await refused({ startGlobalBatch: 4 }, "startGlobalBatch", /elastic/);
  await refused({ ...BASE, startGlobalBatch: 10_000 }, "startGlobalBatch", /global batches/);
  await refused({ ...BASE, startGlobalBatch: 4, startBatch: 1 }, "startGlobalBatch", /startBatch/);
  await refused({ ...BASE, lanes: N + 1 }, "lanes", /each lane needs a cell/);
  const { state } = await rankRun(ds, (await fixture()).m, BASE, 1);
  await refused({ resume: state, lanes: 12 }, "lanes", /resumed state/);
  await refused({ resume: state, order: "default" }, "order", /resumed state/);
  await refused(
    { ...BASE, worldSize: 1, memoryCap: 40_000 },
    "memoryCap",
    /24 shuffle windows .* lanes 24 \/ worldSize 1/,
  );
  // startBatch K at world size W is global batch K W.
  const a = await rankRun(ds, (await fixture()).m, { ...BASE, rank: 1, worldSize: 2, startBatch: 3 });
  const b = await rankRun(ds, (await fixture()).m, { ...BASE, rank: 1, worldSize: 2, startGlobalBatch: 6 });
  assert.deepEqual(a.got, b.got);
  assert.equal(a.got[0]!.global, 7);
});

test("an elastic rank serving several lanes holds their windows and batch buffers within its cap, padding copy included", async () => {
  const { store } = await loaderDataset(400);
  const local = createLocalDecoder();
  const decoders = {
    slots: { ...local, renumbers: true } as TileDecoder,
    copying: { decode: local.decode, renumbers: true } as TileDecoder,
  };
  const opts = { batchSize: 6, seed: 2, bufferTiles: 2, prefetch: 1, order: "elastic", lanes: 4 } as const;
  for (const [path, decoder] of Object.entries(decoders)) {
    const ds = await openDataset(store, { decoder });
    const refusal = await createLoader(ds, { ...opts, memoryCap: 1 }).then(
      () => assert.fail("a cap of 1 byte is refused"),
      (e: unknown) => e,
    );
    assert.ok(isDeltacellsError(refusal, "InvalidInput"));
    assert.match(refusal.message, /4 shuffle windows/);
    const least = Number(/^>= (\d+)$/.exec(String(refusal.expected))?.[1]);
    // A whole epoch on one rank serving the 4 lanes; then saved after 3 global batches on one
    // rank and resumed on 2: one rank ends with a padding batch. With the least cap the loader
    // accepts, and with the default one (where the slot path fits).
    const first = await createLoader(ds, { ...opts, memoryCap: least });
    for await (const b of first) {
      b.release();
      if (first.state().globalBatchesConsumed === 3) break;
    }
    const runs: [string, LoaderOptions][] = [];
    for (const memoryCap of [least, undefined]) {
      runs.push([`one rank, 4 lanes, cap ${memoryCap}`, { ...opts, memoryCap }]);
      for (let rank = 0; rank < 2; rank++)
        runs.push([
          `rank ${rank} of 2, cap ${memoryCap}`,
          { resume: first.state(), rank, worldSize: 2, prefetch: opts.prefetch, memoryCap },
        ]);
    }
    for (const [run, options] of runs) {
      const rank = run.startsWith("rank 1 of 2") ? 1 : 0;
      const loader = await createLoader(ds, options);
      const seen = new Set<ArrayBufferLike>();
      let padding = 0;
      for await (const b of loader) {
        const views = b.format === "csr" ? [b.cells, b.indptr, b.indices, b.data] : [b.cells, b.values];
        for (const v of views) seen.add(v.buffer);
        if (b.padded === b.size) padding++;
        b.release();
      }
      const allocated = [...seen].reduce((n, buf) => n + buf.byteLength, 0);
      const m = loader.memory;
      const what = `${path}, ${run}`;
      assert.equal(padding, rank, `${what}: padding batches`);
      assert.ok(
        allocated <= m.batchBytes,
        `${what}: ${allocated} bytes of batch buffers, ${m.batchBytes} reserved`,
      );
      assert.ok(m.peakBytes <= m.capBytes, `${what}: ${m.peakBytes} held at once, cap ${m.capBytes}`);
    }
  }
});

test("an elastic loader broken out of goes on from there when iterated again, padding batch included", async () => {
  const { ds, m } = await fixture();
  const before = await world(ds, m, 3, BASE, 5);
  for (let rank = 0; rank < 2; rank++) {
    const opts = { resume: before[0]!.state, rank, worldSize: 2 };
    const whole = await rankRun(ds, m, opts);
    for (const stop of [1, whole.got.length - 2, whole.got.length - 1]) {
      const loader = await createLoader(ds, opts);
      const got: number[][] = [];
      for (let pass = 0; pass < 2; pass++)
        for await (const b of loader) {
          got.push([b.globalIndex!, ...b.cells]);
          b.release();
          if (pass === 0 && got.length === stop) break;
        }
      assert.deepEqual(
        got,
        whole.got.map((b) => [b.global, ...b.cells]),
        `rank ${rank}, broken after ${stop}`,
      );
    }
  }
});
