/**
 * HDF5 files read in a worker thread under a watchdog. Node-only.
 *
 * HDF5 spins for ever on some damaged files (h5py too), and h5wasm aborts its whole WebAssembly
 * module on others: in the calling thread either would hang the process or leave a dead module
 * behind. Here every call of the {@link Tree} is a message to a worker that owns h5wasm and the
 * file; when a request gets no answer for `timeoutSeconds`, the worker is terminated and the
 * read fails with a `Stalled` {@link AnndataError} naming the file and the object. Values come back
 * moved, not copied, so a conversion costs one message per array read, not a copy of the data.
 *
 * One worker whose file closed cleanly is kept (not keeping the process alive) for the next file,
 * so detecting a format and then opening the file start h5wasm once; one that dies while it
 * idles is forgotten, and the next file starts a fresh one. A worker that reported any error is
 * not reused: HDF5 may hold the damaged file open after a failed call.
 *
 * @module
 */

import type { Worker } from "node:worker_threads";
import { startWorker } from "@deltacells/storage/internal/node";
import { AnndataError, objectIn, UnsupportedFilterError } from "./errors.js";
import type { HdfCall, HdfReply, HdfRequest, NodeInfo, WireError } from "./hdf5-wire.js";
import type { CompoundField, ElementKind, Tree, TreeArray, TreeGroup, TreeNode } from "./tree.js";
import type { NumericValues } from "./types.js";

/** Seconds without an answer from HDF5 after which reading stops, unless told otherwise. */
export const DEFAULT_HDF5_TIMEOUT = 60;

export interface Hdf5ThreadOptions {
  /** Whether filters that need h5wasm-plugins count as decodable (see hdf5-tree.ts). */
  plugins?: boolean;
  /**
   * Seconds one HDF5 call (a group listing, one hyperslab read) may take before the file is
   * given up as hanging (default {@link DEFAULT_HDF5_TIMEOUT}; 0 waits for ever).
   */
  timeoutSeconds?: number;
}

/** A worker and whether it has loaded (the watchdog starts counting only then). */
interface Thread {
  worker: Worker;
  ready: Promise<void>;
}

/** A worker on hdf5-worker (its TypeScript source under the `source` condition). */
function startThread(): Thread {
  const worker = startWorker(new URL("./hdf5-worker.js", import.meta.url));
  const ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: HdfReply) => {
      if (!("ready" in m)) return;
      worker.off("message", onMessage);
      worker.off("error", reject);
      resolve();
    };
    worker.on("message", onMessage);
    worker.once("error", reject);
  });
  ready.catch(() => undefined); // reported by the tree's own error listener
  return { worker, ready };
}

/** A worker whose last file closed without any error, ready for the next one. */
let idle: { thread: Thread; unwatch(): void } | undefined;

/**
 * Keeps `thread` for the next file. A worker that exits or fails while it idles is forgotten: the
 * next file would otherwise be sent to a dead worker and wait for the watchdog (no tree listens
 * for its exit then).
 */
function keepIdle(thread: Thread): void {
  const { worker } = thread;
  const forget = () => {
    unwatch();
    if (idle?.thread === thread) idle = undefined;
    void worker.terminate();
  };
  const unwatch = () => {
    worker.off("exit", forget);
    worker.off("error", forget);
  };
  worker.on("exit", forget);
  worker.on("error", forget);
  worker.unref();
  idle = { thread, unwatch };
}

/** The idle worker, if any, no longer watched as idle (its tree listens to it from now). */
function takeIdle(): Thread | undefined {
  const kept = idle;
  idle = undefined;
  kept?.unwatch();
  return kept?.thread;
}

/** Opens an HDF5 file read-only, read by a worker thread under a watchdog. */
export async function openHdf5(path: string, opts: Hdf5ThreadOptions = {}): Promise<Tree> {
  const thread = takeIdle() ?? startThread();
  const tree = new ThreadTree(path, thread, opts.timeoutSeconds ?? DEFAULT_HDF5_TIMEOUT);
  try {
    await tree.call({ op: "open", path, plugins: opts.plugins ?? true }, "");
  } catch (err) {
    await tree.close();
    throw err;
  }
  return tree;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  object: string;
}

class ThreadTree implements Tree {
  private readonly pending = new Map<number, Pending>();
  private ids = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Set once the worker is gone: every later call fails with it. */
  private dead: Error | undefined;
  /** Whether any call failed: the worker is then not reused. */
  private tainted = false;
  private closed = false;

  private readonly worker: Worker;
  private loaded = false;

  constructor(
    readonly location: string,
    private readonly thread: Thread,
    private readonly timeoutSeconds: number,
  ) {
    const worker = thread.worker;
    this.worker = worker;
    worker.on("message", this.onMessage);
    worker.on("error", this.onError);
    worker.on("exit", this.onExit);
    void thread.ready.then(
      () => {
        this.loaded = true;
        this.arm();
      },
      () => undefined,
    );
  }

  private readonly onMessage = (reply: HdfReply) => this.answered(reply);
  private readonly onError = (err: Error) =>
    this.stop(
      new AnndataError(`${this.location}: the HDF5 reader thread failed: ${err.message}.`, {
        tag: "MalformedInput",
        object: this.location,
        cause: err,
      }),
    );
  private readonly onExit = (code: number) =>
    this.stop(
      new AnndataError(`${this.location}: the HDF5 reader thread exited (code ${code}).`, {
        tag: "MalformedInput",
        object: this.location,
      }),
    );

  /**
   * Sends one request; the watchdog runs while any request is unanswered. After `close()` every
   * call is refused at once: this tree no longer listens to the worker (which may be reading the
   * next file already), so a request sent then would never be answered, and the worker, held for
   * it, would keep the process alive for ever.
   */
  call(req: HdfCall, object: string): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.closed) {
      const what = object === "" ? "anything" : object;
      return Promise.reject(
        new AnndataError(
          `${this.location}: the file was closed, so ${what} cannot be read from it; open the input again to read it.`,
          { tag: "InvalidArgument", object: objectIn(this.location, object || undefined), found: "closed" },
        ),
      );
    }
    return this.send(req, object);
  }

  private send(req: HdfCall, object: string): Promise<unknown> {
    const id = ++this.ids;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, object });
      if (this.pending.size === 1) {
        this.worker.ref();
        this.arm();
      }
      this.worker.postMessage({ ...req, id } satisfies HdfRequest);
    });
  }

  private arm(): void {
    clearTimeout(this.timer);
    if (this.loaded && this.timeoutSeconds > 0 && this.pending.size > 0) {
      this.timer = setTimeout(() => this.stalled(), this.timeoutSeconds * 1000);
    }
  }

  private answered(reply: HdfReply): void {
    if ("ready" in reply) return;
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    this.arm(); // progress: the clock restarts for what is still pending
    if (this.pending.size === 0) this.worker.unref();
    if ("error" in reply) {
      this.tainted = true;
      p.reject(rebuild(this.location, reply.error));
    } else {
      p.resolve(reply.value);
    }
  }

  private stalled(): void {
    const object = [...this.pending.values()][0]?.object ?? "";
    const what = object === "" ? "the file" : object;
    this.stop(
      new AnndataError(
        `${this.location}: HDF5 made no progress reading ${what} for ${this.timeoutSeconds} s and was stopped; ` +
          "the file is probably damaged (HDF5 loops on some damaged files, h5py too). Check it with h5py, " +
          "or allow more time if it sits on a very slow disk.",
        {
          tag: "Stalled",
          object: objectIn(this.location, object),
          hint: { kind: "raise-timeout", option: "hdf5Timeout", seconds: this.timeoutSeconds },
        },
      ),
    );
  }

  /** The worker is gone (or must go): fail everything pending and everything to come. */
  private stop(err: AnndataError): void {
    if (this.dead) return;
    this.dead = err;
    clearTimeout(this.timer);
    void this.worker.terminate();
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  async get(path: string): Promise<TreeNode | undefined> {
    const info = (await this.call({ op: "get", path }, path)) as NodeInfo | null;
    if (info === null) return undefined;
    return info.kind === "group" ? new ThreadGroup(this, info.path) : new ThreadArray(this, info);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.dead) return;
    try {
      await this.send({ op: "close" }, "");
    } catch {
      this.tainted = true;
    }
    clearTimeout(this.timer);
    // only this tree's listeners: the Worker's own (which start its port) must stay
    this.worker.off("message", this.onMessage);
    this.worker.off("error", this.onError);
    this.worker.off("exit", this.onExit);
    if (this.tainted || idle) {
      await this.worker.terminate();
    } else {
      keepIdle(this.thread);
    }
  }
}

function rebuild(location: string, w: WireError): Error {
  if (w.filter) {
    return new UnsupportedFilterError(w.message, {
      object: w.object ?? location,
      filterId: w.filter.id,
      filterName: w.filter.name,
      why: w.filter.why,
    });
  }
  if (w.tag) {
    return new AnndataError(w.message, {
      tag: w.tag,
      object: w.object,
      expected: w.expected,
      found: w.found,
      hint: w.hint,
      cause: w.cause === undefined ? undefined : new Error(w.cause),
    });
  }
  const printed = w.printed?.length ? ` (h5wasm printed: ${w.printed.join(" | ")})` : "";
  return new Error(`${location}: the HDF5 reader thread failed: ${w.message}${printed}`);
}

class ThreadGroup implements TreeGroup {
  readonly kind = "group" as const;
  constructor(
    private readonly tree: ThreadTree,
    readonly path: string,
  ) {}
  async attrs(): Promise<Record<string, unknown>> {
    return (await this.tree.call({ op: "attrs", path: this.path }, this.path)) as Record<string, unknown>;
  }
  async keys(): Promise<string[]> {
    return (await this.tree.call({ op: "keys", path: this.path }, this.path)) as string[];
  }
}

class ThreadArray implements TreeArray {
  readonly kind = "array" as const;
  readonly path: string;
  readonly shape: number[];
  readonly element: ElementKind;
  readonly itemSize: number;
  readonly fields?: CompoundField[];
  readonly dtype?: string;

  constructor(
    private readonly tree: ThreadTree,
    info: Extract<NodeInfo, { kind: "array" }>,
  ) {
    this.path = info.path;
    this.shape = info.shape;
    this.element = info.element;
    this.itemSize = info.itemSize;
    if (info.fields) this.fields = info.fields;
    if (info.dtype) this.dtype = info.dtype;
  }
  async attrs(): Promise<Record<string, unknown>> {
    return (await this.tree.call({ op: "attrs", path: this.path }, this.path)) as Record<string, unknown>;
  }
  async read(start?: number, end?: number): Promise<NumericValues> {
    return (await this.tree.call({ op: "read", path: this.path, start, end }, this.path)) as NumericValues;
  }
  async readStrings(start?: number, end?: number): Promise<string[]> {
    return (await this.tree.call({ op: "readStrings", path: this.path, start, end }, this.path)) as string[];
  }
  async readCompound(): Promise<Map<string, string[] | NumericValues>> {
    return (await this.tree.call({ op: "readCompound", path: this.path }, this.path)) as Map<
      string,
      string[] | NumericValues
    >;
  }
}
