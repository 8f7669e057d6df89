/**
 * The atlas writes into a location, from library code (the CLI's `convert` of several inputs,
 * `append` and `finalize` are tested with their flags in packages/cli): the same bytes as the
 * store-level functions, under the target's writer lock (refused while another writer holds it,
 * before any input is opened, and released however they end), with no staging, records or lock
 * left in the folder.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import {
  type AtlasPlanOptions,
  acquireWriterLock,
  appendToDatasetAt,
  buildAtlasAt,
  type DatasetSource,
  finalizeAtlasAt,
  isDeltacellsError,
  openDataset,
  planStep,
  scanStep,
  taskStep,
  validateDataset,
} from "../src/node.js";
import {
  atlasInput,
  buildOnce,
  category,
  cells,
  compress,
  encoder,
  genes,
  objects,
  refs,
} from "./atlas-fixtures.js";

type Input = DatasetSource & { opened: number };
const OPTS = { tileSize: 4, obs: { tilesPerFile: 2 } };

const root = mkdtempSync(join(tmpdir(), "deltacells-atlas-at-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `t${n++}`);

function inputA(): Input {
  return atlasInput("data/a.h5ad", 21, genes(0, 9), 1, {
    obs: cells("a", 21, [category("cell_type", 21, (i) => i % 2, ["B", "T"])]),
  });
}
function inputB(): Input {
  return atlasInput("data/b.h5ad", 10, genes(2, 7), 2, {
    obs: cells("b", 10, [category("cell_type", 10, () => 1, ["B", "T"])]),
  });
}

/** A folder's files, by key (`/`-separated), as `objects` gives a memory store's. */
function files(dir: string): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(relative(dir, p).split("\\").join("/"), new Uint8Array(readFileSync(p)));
    }
  };
  walk(dir);
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The folder's entries a writer leaves only when it did not finish (staging, records, lock). */
const leftovers = (dir: string) => readdirSync(dir).filter((e) => e.startsWith(".deltacells"));

test("an atlas built at a folder is the store-level build's bytes, with no lock, staging or records left", async () => {
  const out = fresh();
  const result = await buildAtlasAt(out, refs([inputA(), inputB()]), { encoder, compress, ...OPTS });
  assert.equal(result.manifest.n_cells, 31);
  assert.ok(result.store.stats.requests.set > 0, "the target counted the writes");
  const expected = objects(await buildOnce([inputA(), inputB()], OPTS));
  assert.deepEqual(files(out), expected);
  assert.deepEqual(leftovers(out), []);
});

test("an atlas whose output is one of its inputs is refused before any input is opened", async () => {
  const out = fresh();
  const inputs = [inputA(), { ...inputB(), location: out }];
  await assert.rejects(
    buildAtlasAt(out, refs(inputs), { encoder, compress }),
    (e) => isDeltacellsError(e, "TargetIsInput") && /one of the inputs/.test(e.message),
  );
  assert.deepEqual(
    inputs.map((i) => i.opened),
    [0, 0],
  );
});

test("a target another writer holds is refused by each atlas write before it opens an input, and its lock kept", async () => {
  const out = fresh();
  await buildAtlasAt(out, refs([inputA()]), { encoder, compress, ...OPTS });
  const held = await acquireWriterLock(new FolderStore(out), out, { folder: out, writer: "someone else" });
  try {
    const inputs = [inputB()];
    const locked = (e: unknown) => isDeltacellsError(e, "TargetLocked") && /someone else/.test(String(e));
    await assert.rejects(buildAtlasAt(out, refs(inputs), { encoder, compress, overwrite: true }), locked);
    await assert.rejects(appendToDatasetAt(out, refs(inputs), { encoder, compress }), locked);
    await assert.rejects(finalizeAtlasAt(out), locked);
    assert.equal(inputs[0]!.opened, 0);
    assert.deepEqual(leftovers(out), [".deltacells-lock"]);
  } finally {
    await held.release();
  }
});

test("cells appended at a folder give a valid dataset, the append's staging removed and the lock released", async () => {
  const out = fresh();
  await buildAtlasAt(out, refs([inputA()]), { encoder, compress, ...OPTS });
  let after = -1;
  const result = await appendToDatasetAt(out, refs([inputB()]), {
    encoder,
    compress,
    afterAppend: async (store) => {
      after = (await store.list()).filter((k) => k === ".deltacells-lock").length;
    },
  });
  assert.equal(after, 1, "afterAppend runs under the lock");
  assert.equal(result.cells, 10);
  assert.deepEqual(leftovers(out), []);
  const ds = await openDataset(out);
  assert.equal(ds.nCells, 31);
  assert.equal((await validateDataset(ds)).problems.length, 0);
  await ds.close();
});

test("an atlas built by tasks in a folder and finalized there has its records removed; finalized again, nothing changes", async () => {
  const out = fresh();
  const store = new FolderStore(out);
  const inputs = [inputA(), inputB()];
  const options: AtlasPlanOptions = { ...OPTS, paths: inputs.map((s) => s.location), tasks: 2 };
  for (let i = 0; i < inputs.length; i++) await scanStep(store, options, i, inputs[i]!);
  const plan = await planStep(store, options, compress);
  const sources = refs(inputs);
  for (let t = 0; t < plan.tasks.length; t++)
    await taskStep(store, t, { open: (_, i) => sources[i]!.open(), encoder, compress });
  const done = await finalizeAtlasAt(out);
  assert.equal(done.finalized, true);
  assert.deepEqual(leftovers(out), []);
  assert.deepEqual(files(out), objects(await buildOnce([inputA(), inputB()], OPTS)));
  const again = await finalizeAtlasAt(out);
  assert.equal(again.finalized, false);
  assert.deepEqual(leftovers(out), []);
});
