/**
 * The AbortSignal helpers: they settle like their promise, leave no listener behind, and leave no
 * rejection unhandled (which fails a test run and ends a user's Node process).
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { raceAbort, sleep } from "../src/signals.js";
import { withStallTimeout } from "../src/stall.js";

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
