/**
 * convertToStore, `deltacells convert --format sporadik`'s writer: writeStoreFromRowBlocks with
 * the checks a conversion makes before the first row (stale temporary folders, temporary space, a
 * known nonzero count over the bound) and while the rows come (the bound), and a folder it made
 * removed after a failure.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FolderStore, MemoryStore } from "@deltacells/storage/node";
import {
  convertToStore,
  describe,
  isSporadikError,
  type RowBlock,
  type StaleSpill,
  type TemporarySpace,
  withFileParts,
} from "../src/node.js";
import { SPILL_PREFIX } from "../src/spill-files.js";
import { tempDir } from "./helpers.js";

/** `nRows` rows of `perRow` nonzeros each (columns 0 .. perRow-1, value 1), in blocks of 10 rows. */
function* rows(nRows: number, perRow: number): Generator<RowBlock> {
  for (let r = 0; r < nRows; r += 10) {
    const n = Math.min(10, nRows - r);
    const indptr = Int32Array.from({ length: n + 1 }, (_, i) => i * perRow);
    const indices = Int32Array.from({ length: n * perRow }, (_, k) => k % perRow);
    yield { nRows: n, indptr, indices, data: new Int32Array(n * perRow).fill(1) };
  }
}

test("a conversion writes the store, sweeps a killed run's temporary folder and announces its space first", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const tmp = join(dir, "tmp");
    const stale = join(tmp, `${SPILL_PREFIX}killed`);
    mkdirSync(stale, { recursive: true });
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    writeFileSync(join(stale, "owner.json"), JSON.stringify({ pid: dead, host: hostname() }));
    const events: string[] = [];
    let space: TemporarySpace | undefined;
    const swept: StaleSpill[] = [];
    const out = join(dir, "out.zarr");
    const store = withFileParts(new FolderStore(out), out, { deferSync: true });
    const result = await convertToStore(
      store,
      (function* () {
        events.push("first row read");
        yield* rows(40, 3);
      })(),
      {
        source: "memory",
        shape: [40, 5],
        nnzAtMost: 120,
        tmpDir: tmp,
        folder: out,
        removeOnFailure: true,
        onStaleSpill: (s) => {
          swept.push(s);
          events.push("swept");
        },
        onTemporarySpace: (t) => {
          space = t;
          events.push("space");
        },
      },
    );
    assert.deepEqual(events, ["swept", "space", "first row read"]);
    assert.deepEqual(
      swept.map((s) => [s.path, s.removed]),
      [[stale, true]],
    );
    assert.ok(!existsSync(stale));
    assert.equal(space?.folder, tmp);
    assert.equal(space?.bytes, 120 * space!.bytesPerNonzero);
    assert.equal(result.nnz, 120);
    assert.equal(result.temporary.folder, tmp);
    const info = await describe(new FolderStore(out));
    assert.deepEqual(info.shape, [40, 5]);
    assert.deepEqual(readdirSync(tmp), [], "no temporary folder left");
  } finally {
    cleanup();
  }
});

test("a known nonzero count over maxNnz is refused before any row is read, in the caller's words", async () => {
  let read = false;
  const store = new MemoryStore();
  await assert.rejects(
    convertToStore(
      store,
      (function* () {
        read = true;
        yield* rows(10, 2);
      })(),
      { source: "ds", shape: [10, 5], nnz: 20, maxNnz: 19, optionNames: { maxNnz: "--max-nnz" } },
    ),
    (e: unknown) =>
      isSporadikError(e, "TooManyNonzeros") &&
      e.expected === 19 &&
      e.found === 20 &&
      /^ds holds 20 nonzeros, above the bound of 19 set with --max-nnz\..* Drop --max-nnz /.test(e.message),
  );
  assert.equal(read, false);
  assert.deepEqual(await store.list(), []);
});

test("rows passing maxNnz stop the conversion early, and a folder the run made is removed", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const out = join(dir, "new.zarr");
    let blocksRead = 0;
    await assert.rejects(
      convertToStore(
        new FolderStore(out),
        (function* () {
          for (const b of rows(100, 4)) {
            blocksRead++;
            yield b;
          }
        })(),
        { source: "in.h5ad", shape: [100, 5], maxNnz: 50, folder: out, removeOnFailure: true, tmpDir: dir },
      ),
      (e: unknown) =>
        isSporadikError(e, "TooManyNonzeros") &&
        /^in\.h5ad holds at least 80 nonzeros, above the bound of 50 set with maxNnz/.test(e.message),
    );
    assert.equal(blocksRead, 2, "stopped at the block that passed the bound");
    assert.ok(!existsSync(out));
    // A folder that was there before is left as it is.
    const kept = join(dir, "kept");
    mkdirSync(kept);
    writeFileSync(join(kept, "note"), "mine");
    await assert.rejects(
      convertToStore(new FolderStore(kept), rows(100, 4), {
        source: "in.h5ad",
        shape: [100, 5],
        maxNnz: 50,
        folder: kept,
        removeOnFailure: false,
        tmpDir: dir,
      }),
      { _tag: "TooManyNonzeros" },
    );
    assert.ok(existsSync(join(kept, "note")));
  } finally {
    cleanup();
  }
});

test("temporary space the disk does not have is refused before any row is read, nothing written", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const store = new MemoryStore();
    let read = false;
    await assert.rejects(
      convertToStore(
        store,
        (function* () {
          read = true;
          yield* rows(10, 2);
        })(),
        // more nonzeros than any test disk holds at 8 bytes each
        {
          source: "big",
          shape: [2 ** 40, 2],
          nnzAtMost: 2 ** 52,
          tmpDir: dir,
          optionNames: { tmpDir: "--tmp-dir" },
        },
      ),
      (e: unknown) =>
        isSporadikError(e, "NoTempSpace") &&
        e.object === dir &&
        (e.expected as number) > (e.found as number) &&
        /Nothing was written\. Point --tmp-dir at a disk with room\.$/.test(e.message),
    );
    assert.equal(read, false);
    assert.deepEqual(await store.list(), []);
  } finally {
    cleanup();
  }
});
