/**
 * Atlases in one process and across tasks: the concatenated counts, matched by gene key; the
 * byte-for-byte equality of plan + N tasks + finalize with the one-process build; reruns and
 * duplicates of a task; finalize's refusals; what a task opens.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { ATLAS_PREFIX, taskKey } from "../src/atlas/layout.js";
import { tileKey } from "../src/dataset/manifest.js";
import {
  AtlasIncomplete,
  type AtlasPlanOptions,
  type DatasetSource,
  finalizeAtlas,
  isDeltacellsError,
  openDataset,
  planStep,
  readPlan,
  scanStep,
  taskStep,
  validateDataset,
} from "../src/index.js";
import {
  atlasInput,
  buildInSteps,
  buildOnce,
  category,
  cells,
  compress,
  encoder,
  genes,
  objects,
  refs,
} from "./atlas-fixtures.js";

/** Three inputs over overlapping gene sets, with cell tables (a missing column, int vs float, new categories). */
function threeInputs(seeks = false): (DatasetSource & { opened: number })[] {
  const a = atlasInput("data/a.h5ad", 23, genes(0, 9), 1, {
    seeks,
    obs: cells("a", 23, [
      category("cell_type", 23, (i) => i % 2, ["B", "T"]),
      { name: "n_genes", kind: "numeric", values: Int32Array.from({ length: 23 }, (_, i) => i) },
    ]),
    umap: 2,
  });
  const b = atlasInput("data/b.h5ad", 17, genes(4, 8), 2, {
    seeks,
    obs: cells("b", 17, [
      { name: "n_genes", kind: "numeric", values: Float32Array.from({ length: 17 }, (_, i) => i + 0.5) },
      category("cell_type", 17, (i) => (i % 3) - 1, ["NK", "T"]),
      { name: "donor", kind: "string", values: Array.from({ length: 17 }, (_, i) => `d${i % 2}`) },
    ]),
    umap: 2,
  });
  const c = atlasInput("data/c.h5ad", 31, genes(10, 5).concat(["G2"]), 3, {
    obs: cells("c", 31, [
      { name: "cell_type", kind: "category", codes: new Int32Array(31), categories: ["B"], ordered: false },
    ]),
    umap: 2,
  });
  return [a, b, c];
}

/** The cells of a dataset as gene name -> count per cell. */
async function cellsByName(store: MemoryStore): Promise<Map<string, number>[]> {
  const ds = await openDataset(store);
  const names = (await ds.geneNames())!;
  const rows = await ds.cells(0, ds.nCells);
  const out: Map<string, number>[] = [];
  for (let c = 0; c < ds.nCells; c++) {
    const m = new Map<string, number>();
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      m.set(names[rows.indices[k]!]!, rows.data[k]!);
    out.push(m);
  }
  await ds.close();
  return out;
}

/** The cells of the inputs, concatenated, as gene key -> count. */
async function inputCells(inputs: DatasetSource[]): Promise<Map<string, number>[]> {
  const out: Map<string, number>[] = [];
  for (const s of inputs) {
    const keys = (await s.var()).index;
    for await (const b of s.rowBlocks()) {
      for (let r = 0; r < b.nRows; r++) {
        const m = new Map<string, number>();
        for (let k = b.indptr[r]!; k < b.indptr[r + 1]!; k++) m.set(keys[b.indices[k]!]!, b.data[k]!);
        out.push(m);
      }
    }
  }
  return out;
}

test("three inputs with different genes become one dataset: each cell's counts by gene as in its input, genes in decreasing total", async () => {
  const inputs = threeInputs();
  const store = await buildOnce(inputs, { tileSize: 8 });
  assert.deepEqual(await cellsByName(store), await inputCells(inputs));
  const ds = await openDataset(store);
  assert.equal(ds.nCells, 71);
  assert.equal(ds.nGenes, 15); // G0..G11 from a and b, G10..G14 and G2 again from c
  assert.equal((await validateDataset(ds)).problems.length, 0);
  // decreasing totals over all inputs
  const names = (await ds.geneNames())!;
  const totals = new Map<string, number>();
  for (const cell of await inputCells(inputs))
    for (const [g, v] of cell) totals.set(g, (totals.get(g) ?? 0) + v);
  const inOrder = names.map((g) => totals.get(g)!);
  assert.deepEqual(
    inOrder,
    [...inOrder].sort((x, y) => y - x),
  );
  // var: the union, each gene's row from the first input that has it
  const table = (await ds.varTable())!;
  const lengths = table.columns.find((c) => c.name === "length")!;
  assert.equal(lengths.kind, "numeric");
  const g2 = names.indexOf("G2");
  const g13 = names.indexOf("G13");
  assert.equal(Number(lengths.values[g2]), 100 + 10 + 2); // from a (seed 1), not c
  assert.equal(Number(lengths.values[g13]), 100 + 30 + 3); // only in c: its 4th gene
  assert.equal(ds.manifest.metadata.source_column, "source");
  assert.deepEqual(
    (ds.manifest.metadata.inputs as { path: string; cells: number; first_cell: number }[]).map((i) => [
      i.path,
      i.cells,
      i.first_cell,
    ]),
    [
      ["data/a.h5ad", 23, 0],
      ["data/b.h5ad", 17, 23],
      ["data/c.h5ad", 31, 40],
    ],
  );
  await ds.close();
});

test("the obs of three inputs: a missing column is null, int and float become float, categories in first-seen order, the source column names each cell's input", async () => {
  const store = await buildOnce(threeInputs(), { tileSize: 8 });
  const ds = await openDataset(store);
  const schema = await ds.obsSchema();
  assert.deepEqual(
    schema.columns.map((c) => [c.name, c.kind, c.arrow_type, c.categories]),
    [
      ["obs_names", "string", "string", null],
      ["cell_type", "category", "int8", ["B", "T", "NK"]],
      ["n_genes", "numeric", "double", null],
      ["donor", "string", "string", null],
      ["source", "category", "int8", ["a", "b", "c"]],
      ["X_umap_0", "numeric", "float", null],
      ["X_umap_1", "numeric", "float", null],
    ],
  );
  const frame = await ds.obs();
  assert.deepEqual(
    frame.rows(21, 25).map((r) => r.slice(0, 5)),
    [
      ["a-21", "T", 21, null, "a"],
      ["a-22", "B", 22, null, "a"],
      ["b-0", null, 0.5, "d0", "b"],
      ["b-1", "NK", 1.5, "d1", "b"],
    ],
  );
  assert.deepEqual(frame.rows(70, 71)[0]!.slice(0, 5), ["c-30", "B", null, null, "c"]);
  await ds.close();
});

test("plan + N tasks + finalize equals the one-process build byte for byte, for N = 1, 2 and 7, whether inputs seek to a task's rows or not", async () => {
  const opts = { tileSize: 4, obs: { tilesPerFile: 2 } };
  const once = objects(await buildOnce(threeInputs(), opts));
  assert.ok([...once.keys()].filter((k) => k.startsWith("obs/obs_")).length >= 7);
  assert.ok(![...once.keys()].some((k) => k.startsWith(ATLAS_PREFIX)), "the build's records are removed");
  for (const [n, seeks] of [
    [1, false],
    [2, true],
    [7, false],
    [7, true],
  ] as const) {
    const steps = objects(await buildInSteps(threeInputs(seeks), n, opts));
    assert.deepEqual([...steps.keys()], [...once.keys()], `N = ${n}: the same objects`);
    for (const [key, bytes] of once) assert.deepEqual(steps.get(key), bytes, `N = ${n}: ${key}`);
  }
});

test("the tasks share the tiles in whole obs shards, balanced, and a task opens only the inputs its cells come from", async () => {
  const inputs = threeInputs();
  const store = new MemoryStore();
  const options: AtlasPlanOptions = {
    paths: inputs.map((s) => s.location),
    tasks: 3,
    tileSize: 4,
    obs: { tilesPerFile: 2 },
  };
  for (let i = 0; i < 3; i++) await scanStep(store, options, i, inputs[i]!);
  const plan = await planStep(store, options, compress);
  const ranges = plan.tasks.map((t) => t.tiles);
  // contiguous, whole shards of 2 tiles, every one of the 18 tiles, no task empty
  assert.deepEqual(ranges.flat(), [0, ranges[0]![1], ranges[1]![0], ranges[1]![1], ranges[2]![0], 18]);
  assert.ok(
    ranges.every(([a, b]) => a % 2 === 0 && b > a && (b % 2 === 0 || b === 18)),
    JSON.stringify(ranges),
  );
  assert.deepEqual(
    plan.tasks[2]!.rows.map((r) => r.input),
    [2],
    JSON.stringify(plan.tasks),
  );
  for (const s of inputs) s.opened = 0;
  const sources = refs(inputs);
  await taskStep(store, 2, { open: (_, i) => sources[i]!.open(), encoder, compress });
  assert.deepEqual(
    inputs.map((s) => s.opened),
    [0, 0, 1],
  );
});

test("a task run twice, killed and run again, or run by two copies at once writes the same bytes: harmless", async () => {
  const opts = { tileSize: 4, obs: { tilesPerFile: 2 } };
  const once = objects(await buildOnce(threeInputs(), opts));
  const inputs = threeInputs();
  const store = await buildInSteps(inputs, 3, { ...opts, order: [0, 2], finalize: false });
  const sources = refs(inputs);
  const run = (target: MemoryStore = store) =>
    taskStep(target, 1, { open: (_, i) => sources[i]!.open(), encoder, compress });
  // killed mid-way: its store fails after its first tile is written
  const dying = Object.assign(Object.create(store) as MemoryStore, {
    set: async (key: string, value: Uint8Array) => {
      if (key.startsWith("tiles/") && [...store.objects.keys()].some((k) => k === tileKey(6)))
        throw new Error("killed");
      return store.set(key, value);
    },
  });
  await assert.rejects(run(dying), /killed/);
  assert.ok(
    store.objects.has(tileKey(6)) && !store.objects.has(taskKey(1)),
    "a killed task leaves no completion record",
  );
  await assert.rejects(
    finalizeAtlas(store),
    (err: unknown) => err instanceof AtlasIncomplete && err.problems[0]!.task === 1,
  );
  // run again, twice at once, then once more
  await Promise.all([run(), run()]);
  await run();
  await finalizeAtlas(store);
  const steps = objects(store);
  assert.deepEqual([...steps.keys()], [...once.keys()]);
  for (const [key, bytes] of once) assert.deepEqual(steps.get(key), bytes, key);
});

test("finalize refuses while a task is missing or its objects are not those of its record, naming them; nothing is written", async () => {
  const opts = { tileSize: 4, obs: { tilesPerFile: 2 } };
  const store = await buildInSteps(threeInputs(), 4, { ...opts, order: [0, 1, 3], finalize: false });
  const before = objects(store);
  await assert.rejects(finalizeAtlas(store), (err: unknown) => {
    assert.ok(err instanceof AtlasIncomplete);
    assert.deepEqual(
      err.problems.map((p) => [p.task, p.problem]),
      [[2, "missing"]],
    );
    assert.match(err.message, /1 of the 4 tasks is not done/);
    assert.match(
      err.message,
      /task 2: no completion record \(not run, or not finished\)\. Run it again: tasks 2 of the plan/,
    );
    return true;
  });
  assert.deepEqual(objects(store), before, "nothing written");
  // a tile rewritten by another run: same size, other bytes
  const plan = (await readPlan(store))!;
  assert.ok(plan.tasks[1]!.tiles[1] > plan.tasks[1]!.tiles[0], JSON.stringify(plan.tasks));
  const key = tileKey(plan.tasks[1]!.tiles[0]);
  const tile = store.objects.get(key)!.slice();
  tile[tile.length - 1]! ^= 0xff;
  tile[56]! ^= 0x01; // its CRC field too, as a different tile would have
  store.objects.set(key, tile);
  await assert.rejects(finalizeAtlas(store), (err: unknown) => {
    assert.ok(err instanceof AtlasIncomplete);
    assert.deepEqual(
      err.problems.map((p) => [p.task, p.problem]),
      [
        [1, "inconsistent"],
        [2, "missing"],
      ],
    );
    assert.match(err.problems[0]!.reason, /is not the tile its record lists/);
    return true;
  });
  assert.equal(store.objects.has("manifest.json"), false);
});

test("finalize run again after a success changes nothing; a task after finalize is refused", async () => {
  const inputs = threeInputs();
  const store = await buildInSteps(inputs, 2, { tileSize: 8 });
  const before = objects(store);
  const again = await finalizeAtlas(store);
  assert.equal(again.finalized, false);
  assert.deepEqual(objects(store), before);
  const late = new MemoryStore();
  for (const [k, v] of objects(store)) late.objects.set(k, v);
  const options: AtlasPlanOptions = { paths: inputs.map((s) => s.location), tasks: 2, tileSize: 8 };
  for (let i = 0; i < 3; i++) await scanStep(late, options, i, inputs[i]!);
  await planStep(late, options, compress).catch(() => undefined);
  late.objects.set("manifest.json", before.get("manifest.json")!);
  const sources = refs(inputs);
  await assert.rejects(
    taskStep(late, 0, { open: (_, i) => sources[i]!.open(), encoder, compress }),
    (err: unknown) =>
      isDeltacellsError(err, "InvalidInput") && /finalized already/.test((err as Error).message),
  );
});

test("an input whose genes changed since the plan is refused by the task that reads it", async () => {
  const inputs = threeInputs();
  const store = await buildInSteps(inputs, 1, { tileSize: 8, finalize: false, order: [] });
  const changed = [...inputs];
  changed[1] = atlasInput("data/b.h5ad", 17, genes(5, 8), 2, { obs: cells("b", 17, []) });
  const sources = refs(changed);
  await assert.rejects(
    taskStep(store, 0, { open: (_, i) => sources[i]!.open(), encoder, compress }),
    /data\/b\.h5ad: its genes are not those it had when the plan was made/,
  );
});

test("more tasks than obs shards: the extra tasks write nothing and succeed, and the result is the same", async () => {
  const opts = { tileSize: 8, obs: { tilesPerFile: 100 } }; // 71 cells: 9 tiles, in one shard
  const once = objects(await buildOnce(threeInputs(), opts));
  const store = await buildInSteps(threeInputs(), 3, { ...opts, finalize: false });
  const plan = (await readPlan(store))!;
  const ranges = plan.tasks.map((t) => t.tiles);
  assert.deepEqual(
    ranges.filter(([a, b]) => b > a),
    [[0, 9]],
    JSON.stringify(ranges),
  );
  await finalizeAtlas(store);
  assert.deepEqual(objects(store), once);
});
