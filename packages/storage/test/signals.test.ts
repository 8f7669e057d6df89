/**
 * The AbortSignal helpers: they settle like their promise, leave no listener behind, and leave no
 * rejection unhandled (which fails a test run and ends a user's Node process); many reads in
 * flight on one signal share one listener on it, so Node warns of no leak.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { withCoalescing } from "../src/coalesce.js";
import { MemoryStore } from "../src/memory.js";
import { withRetries } from "../src/retry.js";
import { onAbort, raceAbort, sleep } from "../src/signals.js";
import { withStallTimeout } from "../src/stall.js";
import type { RangeQuery, StoreOptions } from "../src/types.js";

test("sleep leaves no abort listener on a long-lived signal once it has waited", async () => {
  const controller = new AbortController();
  for (let i = 0; i < 3; i++) await sleep(1, controller.signal);
  assert.equal(getEventListeners(controller.signal, "abort").length, 0);
});

test("sleep rejects with the signal's reason when it aborts first, and leaves no listener", async () => {
  const controller = new AbortController();
  // An hour: the test ends only because the abort settles it (and clears the timer).
  const waiting = sleep(3_600_000, controller.signal);
  const reason = new Error("stop");
  controller.abort(reason);
  await assert.rejects(waiting, (err) => err === reason);
  assert.equal(getEventListeners(controller.signal, "abort").length, 0);
  await assert.rejects(sleep(1, controller.signal), (err) => err === reason);
});

/** A few turns of the event loop: a rejection nobody handles is reported by then, failing the test. */
async function turns(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

test("raceAbort on an aborted signal rejects with its reason, and the promise it drops may fail later", async () => {
  const controller = new AbortController();
  const reason = new Error("stop");
  controller.abort(reason);
  const late = new Promise((_, fail) => setImmediate(() => fail(new Error("the aborted read failed too"))));
  await assert.rejects(raceAbort(late, controller.signal), (err) => err === reason);
  await turns();
});

test("a stall-watched body read after the caller aborted rejects with the abort, and nothing is left unhandled", async () => {
  // A body that sends one chunk and then waits; the request's abort errors it, as fetch's does.
  const fetchStub = async (_input: unknown, init: RequestInit = {}) => {
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        init.signal?.addEventListener("abort", () => ctl.error(init.signal?.reason));
      },
      pull(ctl) {
        if (!sent) ctl.enqueue(new Uint8Array(4));
        sent = true;
        return new Promise(() => {});
      },
    });
    return new Response(body, { status: 200 });
  };
  const fetch = withStallTimeout(fetchStub as never, 3_600_000);
  const controller = new AbortController();
  const res = await fetch("http://127.0.0.1/data.bin", { signal: controller.signal });
  const reader = res.body!.getReader();
  assert.equal((await reader.read()).value?.length, 4);
  const reason = new Error("the user stopped");
  controller.abort(reason);
  await assert.rejects(reader.read(), (err) => err === reason);
  await turns();
});

/** A memory store whose reads wait until `open()`: they stay in flight as long as a test needs. */
class GatedStore extends MemoryStore {
  private opened: () => void = () => {};
  private readonly gate = new Promise<void>((resolve) => {
    this.opened = resolve;
  });
  open(): void {
    this.opened();
  }
  override async getRange(key: string, range: RangeQuery, opts?: StoreOptions) {
    await this.gate;
    return super.getRange(key, range, opts);
  }
}

/** The MaxListenersExceededWarning lines `run` leads Node to print, once their ticks have passed. */
async function leakWarnings(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const onWarning = (w: Error) => {
    if (w.name === "MaxListenersExceededWarning") seen.push(w.message);
  };
  process.on("warning", onWarning);
  try {
    await run();
    await turns();
  } finally {
    process.off("warning", onWarning);
  }
  return seen;
}

const READS = 64;
const listeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

test("many reads in flight on one signal share one abort listener, leave none behind, and make Node warn of no leak", async () => {
  const gated = new GatedStore();
  for (let i = 0; i < READS; i++) await gated.set(`k${i}`, new Uint8Array(8).fill(i));
  const controller = new AbortController();
  const signal = controller.signal;
  // Each read timed by its own attempt controller, tied to the caller's signal, and raced against it.
  const retried = withRetries(gated, { timeoutMs: 3_600_000 });
  const warnings = await leakWarnings(async () => {
    const reads = Array.from({ length: READS }, (_, i) =>
      retried.getRange(`k${i}`, { offset: 0, length: 8 }, { signal }),
    );
    await turns();
    assert.equal(listeners(signal), 1, "one listener, whatever the reads in flight");
    gated.open();
    const got = await Promise.all(reads);
    assert.deepEqual(
      got.map((b) => b![0]),
      Array.from({ length: READS }, (_, i) => i),
    );
  });
  assert.equal(listeners(signal), 0, "none left once the reads are answered");
  assert.deepEqual(warnings, []);
});

test("ranges merged into one read stop waiting on their signal once it is answered", async () => {
  const gated = new GatedStore();
  await gated.set(
    "tile",
    new Uint8Array(READS * 4).map((_, i) => i),
  );
  const controller = new AbortController();
  const signal = controller.signal;
  const merged = withCoalescing(gated);
  const warnings = await leakWarnings(async () => {
    const reads = Array.from({ length: READS }, (_, i) =>
      merged.getRange("tile", { offset: i * 4, length: 4 }, { signal }),
    );
    await turns();
    assert.equal(listeners(signal), 1);
    gated.open();
    const got = await Promise.all(reads);
    assert.deepEqual(
      got.map((b) => b![0]),
      Array.from({ length: READS }, (_, i) => (i * 4) % 256),
    );
  });
  assert.equal(listeners(signal), 0, "the merged read's own signal is detached from the callers'");
  assert.deepEqual(warnings, []);
});

test("an abort reaches every read waiting on the signal with its reason, and leaves no listener", async () => {
  const gated = new GatedStore();
  for (let i = 0; i < READS; i++) await gated.set(`k${i}`, new Uint8Array(8));
  const controller = new AbortController();
  const retried = withRetries(gated, { timeoutMs: 3_600_000 });
  const reads = Array.from({ length: READS }, (_, i) =>
    retried.getRange(`k${i}`, { offset: 0, length: 8 }, { signal: controller.signal }),
  );
  await turns();
  const reason = new Error("the stream stopped");
  controller.abort(reason);
  const settled = await Promise.allSettled(reads);
  assert.ok(settled.every((r) => r.status === "rejected" && r.reason === reason));
  assert.equal(listeners(controller.signal), 0);
  gated.open();
  await turns();
});

test("onAbort: each waiter is called once, one that stopped waiting is not, and an aborted signal calls none", () => {
  const controller = new AbortController();
  const calls: string[] = [];
  const same = () => calls.push("same");
  onAbort(controller.signal, same);
  onAbort(controller.signal, same);
  const stopped = onAbort(controller.signal, () => calls.push("stopped"));
  // Stopped by a waiter called before it, during the abort itself.
  let later: (() => void) | undefined;
  onAbort(controller.signal, () => {
    calls.push("first");
    later?.();
  });
  later = onAbort(controller.signal, () => calls.push("later"));
  stopped();
  controller.abort();
  assert.deepEqual(calls, ["same", "same", "first"]);
  assert.equal(listeners(controller.signal), 0);
  onAbort(controller.signal, () => calls.push("after"));
  assert.deepEqual(calls, ["same", "same", "first"]);
});
