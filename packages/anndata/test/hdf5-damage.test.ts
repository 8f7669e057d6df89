/**
 * Damaged HDF5 files: every HDF5 failure (an error stack, a WebAssembly trap, an abort of the
 * module) is a tagged error naming the file and the object, never an empty group; a read that
 * makes no progress is stopped by the watchdog.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { AnndataError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { DATA } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "hdf5-damage-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const CSR = join(DATA, "anndata", "csr.h5ad");

/**
 * csr.h5ad with bytes changed at `offset`; `expect` is what must be there first (the offsets
 * are of this fixture's layout, found with h5py: h5py.h5o.get_info(f["var"].id).addr = 61600,
 * its symbol-table B-tree right after its 40-byte object header).
 */
function damaged(name: string, offset: number, expect: Uint8Array | undefined, change: (b: Buffer) => void) {
  const bytes = Buffer.from(readFileSync(CSR));
  if (expect) assert.deepEqual(bytes.subarray(offset, offset + expect.length), Buffer.from(expect));
  change(bytes.subarray(offset));
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

async function readAll(path: string, opts = {}): Promise<string[]> {
  const src = await openInput(path, opts);
  try {
    const genes = (await src.var()).index;
    await src.obs();
    for await (const _ of src.rowBlocks()) {
      // reading is the point
    }
    return genes;
  } finally {
    await src.close();
  }
}

function refusedNaming(path: string, object: string, pattern: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof AnndataError, `a tagged AnndataError, got ${String(err)}`);
    assert.equal(err._tag, "MalformedInput");
    assert.equal(err.object, `${path}/${object}`);
    assert.match(err.message, pattern);
    assert.ok(err.message.startsWith(`${path}: `), "the message names the file");
    assert.doesNotMatch(err.message, /HDF5-DIAG/, "one line, not HDF5's stack");
    return true;
  };
}

test("the reference file reads (the damage below is what fails)", async () => {
  const genes = await readAll(CSR);
  assert.equal(genes[0], "GENE0");
});

test("a var group whose B-tree is damaged is refused naming var, not read as a var without genes", async () => {
  const path = damaged("var-btree.h5ad", 61640, new TextEncoder().encode("TREE"), (b) => b.write("XXXX"));
  await assert.rejects(
    readAll(path),
    refusedNaming(path, "var", /could not read var: wrong B-tree signature/),
  );
});

test("a var group whose object header is damaged is refused naming var", async () => {
  const path = damaged("var-header.h5ad", 61600, Uint8Array.of(1, 0, 7, 0), (b) => b.fill(0xff, 0, 64));
  await assert.rejects(readAll(path), refusedNaming(path, "var", /could not read var: bad object header/));
});

test("an abort of the WebAssembly module is a tagged error naming the file, and the next file still reads", async () => {
  // four bytes of var's attribute messages flipped: HDF5 calls abort() (h5wasm printed
  // "Aborted(native code called abort())" untagged, and its module was dead afterwards)
  const path = damaged("var-abort.h5ad", 62408, undefined, (b) => {
    for (let k = 0; k < 4; k++) b[k] = (b[k] as number) ^ 0xff;
  });
  await assert.rejects(readAll(path), refusedNaming(path, "var", /h5wasm\) aborted while reading var/));
  assert.equal((await readAll(CSR))[0], "GENE0");
});

test("an HDF5 read that makes no progress is stopped after the timeout, naming the file", async () => {
  // A FIFO nobody writes to: opening it blocks, as a read from a hung disk or a looping HDF5 does.
  const fifo = join(dir, "stalled.h5ad");
  const mk = spawn("mkfifo", [fifo]);
  await new Promise((resolve) => mk.on("exit", resolve));
  const started = performance.now();
  await assert.rejects(openInput(fifo, { format: "h5ad", hdf5Timeout: 1 }), (err: unknown) => {
    assert.ok(err instanceof AnndataError);
    assert.equal(err._tag, "Stalled");
    assert.ok(err.object?.startsWith(fifo), "the error names the file");
    assert.match(err.message, /made no progress .* for 1 s and was stopped/);
    return true;
  });
  const seconds = (performance.now() - started) / 1000;
  // let the blocked thread go, if it still waits: a writer opens and closes the FIFO
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // no reader left
  }
  // The watchdog stopped it (the message names its 1 s limit), not the FIFO giving way: never
  // sooner than the limit. No upper bound: it would fail on a loaded machine.
  assert.ok(seconds >= 1, `stopped in ${seconds.toFixed(1)} s`);
});
