/**
 * convertToDataset and openTarget, from library code (the CLI's `convert` is tested with its
 * flags in packages/cli): the target refused before the source is opened, the source closed and
 * the lock released however the conversion ends, an old dataset kept until the new one is
 * complete, messages in the caller's words for its options.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { InputInventory } from "@deltacells/storage";
import {
  type ClosableSource,
  convertToDataset,
  encodeTile,
  isDeltacellsError,
  openDataset,
  openTarget,
  zstdCompressor,
} from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

const root = mkdtempSync(join(tmpdir(), "deltacells-convert-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `t${n++}`);

const write = {
  encoder: {
    encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 1 }),
  },
  compress: zstdCompressor(1),
  tileSize: 4,
};

/** A source of `nCells` cells that counts its openings and closings. */
function source(nCells: number, seed = 1) {
  const calls = { opened: 0, closed: 0 };
  const open = async (): Promise<ClosableSource> => {
    calls.opened++;
    return { ...memorySource(randomMatrix(nCells, 6, seed)), close: async () => void calls.closed++ };
  };
  return { calls, open };
}

test("a conversion writes the dataset, closes its source and leaves no lock or staging", async () => {
  const out = fresh();
  const { calls, open } = source(10);
  const result = await convertToDataset(out, open, write);
  assert.equal(result.manifest.n_cells, 10);
  assert.deepEqual(calls, { opened: 1, closed: 1 });
  assert.ok(result.store.stats.requests.set > 0, "the store counted the writes");
  assert.equal((await openDataset(out)).nCells, 10);
  assert.deepEqual(
    readdirSync(out).filter((f) => f.startsWith(".deltacells")),
    [],
  );
});

test("a target that cannot be written is refused before the source is opened", async () => {
  const out = fresh();
  mkdirSync(out);
  writeFileSync(join(out, "notes.txt"), "mine");
  const { calls, open } = source(10);
  await assert.rejects(
    convertToDataset(out, open, { ...write, overwrite: true }),
    (e: unknown) =>
      isDeltacellsError(e, "TargetNotEmpty") && /which overwrite: true never deletes/.test(e.message),
  );
  assert.deepEqual(calls, { opened: 0, closed: 0 });
  assert.deepEqual(readdirSync(out), ["notes.txt"]);
  await assert.rejects(convertToDataset(out, open, { ...write, input: out }), { _tag: "TargetIsInput" });
});

test("a failed conversion keeps the old dataset, closes the source and releases the lock", async () => {
  const out = fresh();
  await convertToDataset(out, source(8).open, write);
  const { calls, open } = source(12, 2);
  const failing = async () => {
    const s = await open();
    return {
      ...s,
      async *rowBlocks(o?: { blockCells?: number }) {
        yield* s.rowBlocks(o);
        throw new Error("the input went away");
      },
    };
  };
  await assert.rejects(convertToDataset(out, failing, { ...write, overwrite: true }), /the input went away/);
  assert.deepEqual(calls, { opened: 1, closed: 1 });
  assert.equal((await openDataset(out)).nCells, 8, "the old dataset, as it was");
  assert.deepEqual(
    readdirSync(out).filter((f) => f.startsWith(".deltacells")),
    [],
  );
  // A source that cannot be opened: nothing is written and the lock is released.
  await assert.rejects(
    convertToDataset(
      out,
      async () => {
        throw new Error("no such input");
      },
      { ...write, overwrite: true },
    ),
    /no such input/,
  );
  assert.ok(!existsSync(join(out, ".deltacells-lock")));
  assert.equal(
    (await convertToDataset(out, source(5).open, { ...write, overwrite: true })).manifest.n_cells,
    5,
  );
});

test("a target held by another writer is refused, naming the caller's option for breaking the lock", async () => {
  const out = fresh();
  const first = await openTarget(out, { writer: "atlas plan" });
  try {
    await assert.rejects(
      openTarget(out, { optionNames: { breakLock: "--break-lock" } }),
      (e: unknown) =>
        isDeltacellsError(e, "TargetLocked") &&
        /by atlas plan \(pid \d+/.test(e.message) &&
        /\), or run the command again with --break-lock\./.test(e.message),
    );
  } finally {
    await first.lock.release();
  }
  const second = await openTarget(out);
  await second.lock.release();
  assert.ok(!existsSync(join(out, ".deltacells-lock")));
});

test("leftOut lists what the source's inventory holds besides the dataset; an inventory that fails costs the note, not the dataset", async () => {
  const inventory: InputInventory = {
    matrices: ["layers/counts"],
    groups: [{ name: "uns", keys: ["neighbors"] }],
    obsm: [{ key: "X_pca", kind: "dense", shape: [10, 50] }],
  };
  const open = async (): Promise<ClosableSource> => ({
    ...memorySource(randomMatrix(10, 6, 3)),
    inventory: async () => inventory,
    close: async () => {},
  });
  const listed = await convertToDataset(fresh(), open, write);
  assert.deepEqual(
    listed.leftOut.map((p) => [p.part, p.keep?.kind ?? null]),
    [
      ["obsm/X_pca", null], // memorySource has no obs, so no embedding could be kept
      ["layers/counts", "matrix"],
      ["uns", null],
    ],
  );
  const out = fresh();
  const failing = async (): Promise<ClosableSource> => ({
    ...memorySource(randomMatrix(10, 6, 3)),
    inventory: () => Promise.reject(new Error("no listing over HTTP")),
    close: async () => {},
  });
  const result = await convertToDataset(out, failing, write);
  assert.deepEqual(result.leftOut, []);
  assert.equal((await openDataset(out)).nCells, 10);
});
