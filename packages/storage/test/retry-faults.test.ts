// The retry wrapper against a real static server behind a fault-injecting proxy: every fault
// either heals with the exact bytes or ends in a clear error, and no wrong byte ever comes back.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  HttpStatusError,
  HttpStore,
  isStorageError,
  RetriesExhaustedError,
  withRetries,
  withStats,
} from "@deltacells/storage";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import { type Fault, FaultProxy } from "./helpers/fault-proxy.js";

const data = randomBytes(200_000);
let dir: string;
let serve: RunningServer;
let proxy: FaultProxy;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "dc-retry-"));
  await writeFile(join(dir, "data.bin"), data);
  serve = await startServe(dir);
  proxy = await FaultProxy.start(serve.url);
});

after(async () => {
  await proxy?.stop();
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

const fast = { baseDelayMs: 1, maxDelayMs: 5 };

describe("reads retried through a fault-injecting proxy", () => {
  const cases: [string, Fault[]][] = [
    ["503s", ["503", "503"]],
    ["a 429", ["429"]],
    ["connection resets", ["reset", "reset"]],
    ["truncated bodies", ["truncate", "truncate"]],
    ["a mix of every fault", ["503", "reset", "truncate"]],
  ];
  for (const [name, faults] of cases) {
    test(`a read recovers from ${name} with exactly the right bytes`, async () => {
      const store = withRetries(new HttpStore(proxy.url), { attempts: 4, ...fast });
      proxy.reset([...faults]);
      const got = await store.getRange("data.bin", { offset: 1000, length: 150_000 });
      assert.ok(got !== undefined && Buffer.compare(Buffer.from(got), data.subarray(1000, 151_000)) === 0);
      assert.equal(proxy.seen.length, faults.length + 1);
      proxy.reset(["truncate", "503"]);
      const whole = await store.get("data.bin");
      assert.ok(whole !== undefined && Buffer.compare(Buffer.from(whole), data) === 0);
    });
  }

  test("a suffix read recovers too", async () => {
    const store = withRetries(new HttpStore(proxy.url), { attempts: 3, ...fast });
    proxy.reset(["truncate", "reset"]);
    assert.deepEqual(
      await store.getRange("data.bin", { suffixLength: 70_000 }),
      new Uint8Array(data.subarray(-70_000)),
    );
  });

  test("an attempt that never answers is cut by the per-attempt timeout and the next one succeeds", async () => {
    const store = withRetries(new HttpStore(proxy.url), { attempts: 3, timeoutMs: 1500, ...fast });
    // The first attempt is never answered: only the per-attempt timeout lets the read go on (1.5 s:
    // a healthy answer on a loaded CI machine must fit in it).
    proxy.reset(["stall"]);
    assert.deepEqual(
      await store.getRange("data.bin", { offset: 5, length: 5 }),
      new Uint8Array(data.subarray(5, 10)),
    );
    assert.equal(proxy.seen[0]?.fault, "stall");
    assert.equal(proxy.seen.at(-1)?.fault, "pass");
  });

  test("after the bounded attempts it gives up with RetriesExhausted, saying how many and why", async () => {
    const inner = withStats(new HttpStore(proxy.url));
    const store = withRetries(inner, { attempts: 3, ...fast });
    proxy.reset(["503", "reset", "truncate", "pass"]);
    await assert.rejects(store.getRange("data.bin", { offset: 0, length: 100_000 }), (err: unknown) => {
      assert.ok(err instanceof RetriesExhaustedError);
      assert.equal(err.attempts, 3);
      assert.equal(err.causes.length, 3);
      assert.match(err.message, /failed 3 times/);
      // One line naming the last failure; every attempt's error is in `causes`.
      assert.doesNotMatch(err.message, /\n/);
      assert.match(err.message, /last: .*(truncated body|terminated|other side closed)/);
      assert.match(String((err.causes[0] as Error).message), /answered 503/);
      return true;
    });
    assert.equal(inner.stats.requests.getRange, 3, "exactly three attempts reached the server");
  });

  test("a timeout on every attempt also ends in RetriesExhausted", async () => {
    const store = withRetries(new HttpStore(proxy.url), { attempts: 2, timeoutMs: 100, ...fast });
    proxy.reset([], { delayMs: 1000 });
    await assert.rejects(store.get("data.bin"), (err: unknown) => {
      assert.ok(err instanceof RetriesExhaustedError);
      assert.ok(err.causes.every((c) => isStorageError(c, "Timeout")));
      return true;
    });
    proxy.reset();
  });

  test("a 403 is not retried", async () => {
    const store = withRetries(new HttpStore(proxy.url), { attempts: 4, ...fast });
    proxy.reset(["403"]);
    await assert.rejects(
      store.get("data.bin"),
      (err: unknown) => err instanceof HttpStatusError && err.status === 403,
    );
    assert.equal(proxy.seen.length, 1);
  });

  test("a missing object is undefined at once, and an unsatisfiable range is not retried", async () => {
    const store = withRetries(new HttpStore(proxy.url), { attempts: 4, ...fast });
    proxy.reset();
    assert.equal(await store.get("nope.bin"), undefined);
    await assert.rejects(store.getRange("data.bin", { offset: 200_000, length: 1 }), (e: unknown) =>
      isStorageError(e, "RangeNotSatisfiable"),
    );
    assert.equal(proxy.seen.length, 2);
  });

  test("an abort during the backoff wait stops at once with the abort reason", async () => {
    const controller = new AbortController();
    const store = withRetries(new HttpStore(proxy.url), {
      attempts: 5,
      // A wait of 24 days (setTimeout's longest): only the abort can end it, no clock involved.
      baseDelayMs: 2 ** 31 - 1,
      maxDelayMs: 2 ** 31 - 1,
      random: () => 1,
      // Aborted once the wait has begun (it starts right after onRetry).
      onRetry: () => setImmediate(() => controller.abort()),
    });
    proxy.reset([], "503");
    await assert.rejects(store.get("data.bin", { signal: controller.signal }), { name: "AbortError" });
    assert.equal(proxy.seen.length, 1);
    proxy.reset();
  });

  test("under random faults, every read returns the right bytes or a storage error, never wrong bytes", async () => {
    const store = withRetries(new HttpStore(proxy.url), { attempts: 3, ...fast });
    const faults: Fault[] = ["pass", "pass", "503", "429", "reset", "truncate", { delayMs: 5 }];
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    proxy.reset([]);
    let ok = 0;
    let failed = 0;
    for (let i = 0; i < 60; i++) {
      proxy.plan = Array.from({ length: 3 }, () => faults[Math.floor(rand() * faults.length)]!);
      const offset = Math.floor(rand() * 150_000);
      const length = 1 + Math.floor(rand() * 49_999);
      try {
        const got = await store.getRange("data.bin", { offset, length });
        assert.ok(
          got !== undefined && Buffer.compare(Buffer.from(got), data.subarray(offset, offset + length)) === 0,
        );
        ok++;
      } catch (err) {
        assert.ok(err instanceof RetriesExhaustedError, String(err));
        failed++;
      }
    }
    assert.ok(ok > 40, `only ${ok} of 60 reads succeeded (${failed} gave up)`);
    proxy.reset();
  });
});
