/**
 * The worker thread behind {@link openHdf5} (hdf5-thread.ts): it owns one h5wasm module and one
 * open file, and answers the main thread's tree requests. HDF5 runs here so that a loop inside it
 * (some damaged files make HDF5 spin for ever, h5py too) or an abort of the WebAssembly module
 * takes down this thread only: the main thread's watchdog terminates it and reports the file.
 *
 * @module
 */

import { parentPort } from "node:worker_threads";
import { AnndataError, UnsupportedFilterError } from "./errors.js";
import { openHdf5InThread } from "./hdf5-tree.js";
import type { HdfReply, HdfRequest, NodeInfo, WireError } from "./hdf5-wire.js";
// first: h5wasm binds console.error when it loads
import { recentlyPrinted } from "./hdf5-worker-console.js";
import type { Tree, TreeNode } from "./tree.js";

const port = parentPort;
if (!port) throw new Error("hdf5-worker.ts runs as a worker thread only");

let tree: Tree | undefined;
const nodes = new Map<string, TreeNode>();

function info(node: TreeNode | undefined): NodeInfo | null {
  if (node === undefined) return null;
  if (node.kind === "group") return { kind: "group", path: node.path };
  return {
    kind: "array",
    path: node.path,
    shape: node.shape,
    element: node.element,
    itemSize: node.itemSize,
    ...(node.fields ? { fields: node.fields } : {}),
    ...(node.dtype ? { dtype: node.dtype } : {}),
  };
}

function wire(err: unknown): WireError {
  if (err instanceof UnsupportedFilterError) {
    return {
      tag: err._tag,
      message: err.message,
      object: err.object,
      filter: { id: err.filterId, name: err.filterName, why: err.why },
    };
  }
  if (err instanceof AnndataError) {
    return {
      tag: err._tag,
      message: err.message,
      object: err.object,
      expected: err.expected,
      found: err.found,
      hint: err.hint,
      cause: err.cause instanceof Error ? err.cause.message : undefined,
    };
  }
  // every h5wasm failure is turned into an AnndataError by the tree; anything else is a bug here
  return { message: err instanceof Error ? err.message : String(err), printed: recentlyPrinted() };
}

async function answer(req: HdfRequest): Promise<{ value: unknown; transfer: ArrayBuffer[] }> {
  if (req.op === "open") {
    tree = await openHdf5InThread(req.path, { plugins: req.plugins });
    return { value: null, transfer: [] };
  }
  if (!tree) throw new Error("no file is open");
  if (req.op === "close") {
    await tree.close();
    tree = undefined;
    nodes.clear();
    return { value: null, transfer: [] };
  }
  if (req.op === "get") {
    const node = await tree.get(req.path);
    if (node) nodes.set(req.path, node);
    return { value: info(node), transfer: [] };
  }
  const node = nodes.get(req.path) ?? (await tree.get(req.path));
  if (!node) throw new Error(`no node ${req.path}`);
  switch (req.op) {
    case "attrs":
      return { value: await node.attrs(), transfer: [] };
    case "keys":
      if (node.kind !== "group") throw new Error(`${req.path} is not a group`);
      return { value: await node.keys(), transfer: [] };
    case "read": {
      if (node.kind !== "array") throw new Error(`${req.path} is not an array`);
      const v = await node.read(req.start, req.end);
      // moved, not copied, when the values own their buffer (h5wasm copies out of its memory)
      const own = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength;
      return { value: v, transfer: own ? [v.buffer as ArrayBuffer] : [] };
    }
    case "readStrings":
      if (node.kind !== "array") throw new Error(`${req.path} is not an array`);
      return { value: await node.readStrings(req.start, req.end), transfer: [] };
    case "readCompound":
      if (node.kind !== "array") throw new Error(`${req.path} is not an array`);
      return { value: await node.readCompound(), transfer: [] };
  }
}

port.on("message", (req: HdfRequest) => {
  answer(req).then(
    ({ value, transfer }) => port.postMessage({ id: req.id, value } satisfies HdfReply, transfer),
    (err: unknown) => port.postMessage({ id: req.id, error: wire(err) } satisfies HdfReply),
  );
});

// loaded: from now on the main thread's watchdog counts (loading is not HDF5's time)
port.postMessage({ ready: true } satisfies HdfReply);
