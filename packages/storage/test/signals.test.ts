/** The AbortSignal helpers: they settle like their promise and leave no listener behind. */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { sleep } from "../src/signals.js";

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
