/**
 * The lifetime of an HDF5 file read on its worker thread (hdf5-thread.ts): once closed, a tree
 * refuses every read at once. Its worker, kept for the next file, no longer answers to it: a read
 * sent to it after close() was never answered, and the worker, held for that read, kept the
 * process alive for ever (a test file that never exits).
 */

import assert from "node:assert/strict";
import { once } from "node:events";
import { join } from "node:path";
import { test } from "node:test";
import { Worker } from "node:worker_threads";
import { openHdf5 } from "../src/hdf5-thread.js";
import { AnndataError } from "../src/index.js";
import { openInput } from "../src/node.js";
import type { TreeArray } from "../src/tree.js";
import { DATA } from "./helpers.js";

const CSR = join(DATA, "anndata", "csr.h5ad");
const DENSE = join(DATA, "anndata", "dense.h5ad");

/** How `p` stands once the current task and its microtasks are done: a refusal must be immediate. */
async function stateAfterThisTurn(p: Promise<unknown>): Promise<"resolved" | "rejected" | "pending"> {
  const turn = new Promise<"pending">((ok) => setImmediate(() => ok("pending")));
  return Promise.race([
    p.then(
      () => "resolved" as const,
      () => "rejected" as const,
    ),
    turn,
  ]);
}

function refusedAsClosed(path: string, object: string) {
  return (err: unknown) => {
    assert.ok(err instanceof AnndataError, `an AnndataError, got ${String(err)}`);
    assert.equal(err._tag, "InvalidArgument");
    assert.equal(err.object, object === "" ? path : `${path}/${object}`);
    assert.equal(err.found, "closed");
    assert.match(err.message, /the file was closed/);
    assert.ok(err.message.startsWith(`${path}: `), "the message names the file");
    return true;
  };
}

test("a read after close() is refused at once, and the worker reads the next file correctly", async () => {
  const tree = await openHdf5(CSR);
  const data = (await tree.get("X/data")) as TreeArray;
  const before = await data.read(0, 5);
  await tree.close();

  // The worker now idles, kept for the next file: open one on it before the late reads.
  const next = await openHdf5(DENSE);
  try {
    const late = data.read(0, 5);
    assert.equal(await stateAfterThisTurn(late), "rejected");
    await assert.rejects(late, refusedAsClosed(CSR, "X/data"));
    await assert.rejects(tree.get("X"), refusedAsClosed(CSR, "X"));
    // The late reads did not disturb the file the worker holds now.
    const x = (await next.get("X")) as TreeArray;
    assert.deepEqual(x.shape, [57, 41]);
  } finally {
    await next.close();
  }
  // And the first file, opened again, reads what it read before.
  const again = await openHdf5(CSR);
  try {
    assert.deepEqual(await ((await again.get("X/data")) as TreeArray).read(0, 5), before);
  } finally {
    await again.close();
  }
});

test("row blocks asked for after an input is closed are refused, not waited for", async () => {
  const src = await openInput(CSR);
  const blocks = src.rowBlocks({ blockCells: 10 })[Symbol.asyncIterator]();
  await src.close();
  const first = blocks.next();
  assert.equal(await stateAfterThisTurn(first), "rejected");
  await assert.rejects(first, (err: unknown) => {
    assert.ok(err instanceof AnndataError && err._tag === "InvalidArgument", String(err));
    assert.match(err.message, /the file was closed/);
    return true;
  });
});

test("an idle worker that dies is not handed the next file: that file opens on a fresh one", async () => {
  // The worker reading CSR, caught as the tree sends it the file (hdf5-thread.ts keeps it private).
  const post = Worker.prototype.postMessage;
  let worker: Worker | undefined;
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker["postMessage"]>) {
    worker = this;
    return post.apply(this, args);
  };
  let tree: Awaited<ReturnType<typeof openHdf5>>;
  try {
    tree = await openHdf5(CSR);
  } finally {
    Worker.prototype.postMessage = post;
  }
  await tree.close();
  assert.ok(worker, "the worker was seen");
  // The worker idles, kept for the next file; it dies (as when h5wasm aborts or memory runs out).
  const exited = once(worker, "exit");
  await worker.terminate();
  await exited;
  // Handed the dead worker, the open waited for the watchdog (60 s) and failed as Stalled.
  const next = await openHdf5(DENSE);
  try {
    assert.deepEqual(((await next.get("X")) as TreeArray).shape, [57, 41]);
  } finally {
    await next.close();
  }
});
