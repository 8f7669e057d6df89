import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  HttpStatusError,
  HttpStore,
  isStorageError,
  type ReadableStore,
  RetriesExhaustedError,
  StorageError,
  type StoreOptions,
  withCoalescing,
  withConcurrencyLimit,
  withRetries,
  withStats,
} from "@deltacells/storage";
import { ProbeStore } from "./helpers/counting.js";

function probe(size = 1000): ProbeStore {
  const s = new ProbeStore();
  s.objects.set(
    "obj",
    new Uint8Array(size).map((_, i) => (i * 7) % 256),
  );
  return s;
}

const expected = (s: ProbeStore, offset: number, length: number) =>
  s.objects.get("obj")!.slice(offset, offset + length);

describe("withStats", () => {
  test("counts calls per operation, bytes read and written, missing reads and errors", async () => {
    const s = withStats(probe());
    await s.get("obj");
    await s.getRange("obj", { offset: 10, length: 20 });
    await s.getRange("obj", { suffixLength: 5 });
    await s.get("missing");
    await s.set("new", new Uint8Array(42));
    await s.list();
    await s.delete("new");
    await assert.rejects(s.getRange("obj", { offset: 999, length: 2 }));
    const st = s.stats;
    assert.deepEqual(st.requests, { get: 2, getRange: 3, set: 1, delete: 1, list: 1 });
    assert.equal(st.bytesRead, 1000 + 20 + 5);
    assert.equal(st.bytesWritten, 42);
    assert.equal(st.missing, 1);
    assert.equal(st.errors, 1);
    assert.equal(s.totalRequests, 8);
    assert.equal(
      s.format(),
      "8 requests (get 2, getRange 3, set 1, delete 1, list 1), read 1.00 KiB, written 42 B, 1 missing, 1 errors",
    );
    s.reset();
    assert.equal(s.totalRequests, 0);
    assert.equal(s.stats.bytesRead, 0);
  });

  test("wraps a read-only store: reads work, writes are refused clearly", async () => {
    const inner = probe();
    const readOnly: ReadableStore = {
      get: (k, o) => inner.get(k, o),
      getRange: (k, r, o) => inner.getRange(k, r, o),
    };
    const s = withStats(readOnly);
    assert.deepEqual(await s.getRange("obj", { offset: 1, length: 2 }), expected(inner, 1, 2));
    await assert.rejects(s.set("x", new Uint8Array(1)), (e: unknown) => isStorageError(e, "ReadOnly"));
  });

  test("a listing a read-only store refuses (plain HTTP) is neither a request nor an error", async () => {
    const s = withStats(new HttpStore("http://127.0.0.1:9/ds"));
    await assert.rejects(s.list("tiles/"), (e: unknown) => isStorageError(e, "ReadOnly"));
    assert.equal(s.totalRequests, 0);
    assert.equal(s.stats.errors, 0);
  });
});

describe("withRetries", () => {
  const transient = () => new HttpStatusError("injected 503", { status: 503, object: "u" });

  test("retries transient failures and returns the inner answer", async () => {
    const inner = probe();
    inner.failures = [transient(), new StorageError("reset", { tag: "Network" })];
    const delays: number[] = [];
    const s = withRetries(inner, {
      attempts: 3,
      baseDelayMs: 10,
      random: () => 0.5,
      onRetry: (i) => delays.push(i.delayMs),
    });
    assert.deepEqual(await s.getRange("obj", { offset: 3, length: 4 }), expected(inner, 3, 4));
    assert.equal(inner.calls.length, 3);
    assert.deepEqual(delays, [5, 10], "full jitter over an exponentially growing window");
  });

  test("the backoff window is capped at maxDelayMs", async () => {
    const inner = probe();
    inner.failures = [transient(), transient(), transient(), transient()];
    const delays: number[] = [];
    const s = withRetries(inner, {
      attempts: 5,
      baseDelayMs: 1,
      maxDelayMs: 3,
      random: () => 0.999,
      onRetry: (i) => delays.push(i.delayMs),
    });
    await s.get("obj");
    assert.deepEqual(
      delays.map((d) => Math.round(d)),
      [1, 2, 3, 3],
    );
  });

  test("gives up after the bounded attempts with every cause", async () => {
    const inner = probe();
    inner.failures = [transient(), transient(), transient()];
    const s = withRetries(inner, { attempts: 3, baseDelayMs: 0 });
    await assert.rejects(
      s.get("obj"),
      (err: unknown) => err instanceof RetriesExhaustedError && err.attempts === 3 && err.causes.length === 3,
    );
    assert.equal(inner.calls.length, 3);
  });

  test("does not retry a 404-like client error or a non-storage error", async () => {
    for (const failure of [new HttpStatusError("nope", { status: 400, object: "u" }), new TypeError("bug")]) {
      const inner = probe();
      inner.failures = [failure];
      await assert.rejects(withRetries(inner, { baseDelayMs: 0 }).get("obj"), (e) => e === failure);
      assert.equal(inner.calls.length, 1);
    }
  });

  test("retries list but passes writes through once", async () => {
    const inner = probe();
    const s = withRetries(inner, { baseDelayMs: 0 });
    await s.set("a", new Uint8Array([1]));
    assert.deepEqual(await s.list(), ["a", "obj"]);
    await s.delete("a");
    assert.deepEqual(await s.list(), ["obj"]);
  });
});

describe("withConcurrencyLimit", () => {
  test("never lets more than the limit run at once, and runs them all", async () => {
    const inner = probe();
    inner.delayMs = 10;
    const s = withConcurrencyLimit(inner, 3);
    const reads = Array.from({ length: 20 }, (_, i) => s.getRange("obj", { offset: i, length: 10 }));
    assert.equal(s.inFlight, 3);
    assert.equal(s.queued, 17);
    const got = await Promise.all(reads);
    for (const [i, g] of got.entries()) assert.deepEqual(g, expected(inner, i, 10));
    assert.equal(inner.maxInFlight, 3);
    assert.equal(inner.calls.length, 20);
    assert.equal(s.inFlight, 0);
  });

  test("a queued call whose signal aborts leaves the queue at once", async () => {
    const inner = probe();
    inner.delayMs = 50;
    const s = withConcurrencyLimit(inner, 1);
    const first = s.get("obj");
    const controller = new AbortController();
    const second = s.get("obj", { signal: controller.signal });
    controller.abort();
    await assert.rejects(second, { name: "AbortError" });
    assert.equal(s.queued, 0);
    await first;
    assert.equal(inner.calls.length, 1);
  });

  test("a failing call frees its slot", async () => {
    const inner = probe();
    inner.failures = [new Error("boom")];
    const s = withConcurrencyLimit(inner, 1);
    await assert.rejects(s.get("obj"));
    assert.ok(await s.get("obj"));
  });
});

describe("withCoalescing", () => {
  test("adjacent and overlapping ranges issued together become one request, each caller getting its bytes", async () => {
    const inner = probe();
    const counted = withStats(inner);
    const s = withCoalescing(counted);
    const asks = [
      [100, 50],
      [150, 25], // adjacent
      [160, 40], // overlapping
      [0, 10], // separate: gap before 100
      [500, 1], // separate
    ] as const;
    const got = await Promise.all(asks.map(([offset, length]) => s.getRange("obj", { offset, length })));
    for (const [i, g] of got.entries()) assert.deepEqual(g, expected(inner, asks[i]![0], asks[i]![1]));
    assert.equal(counted.stats.requests.getRange, 3);
    assert.deepEqual(
      inner.calls
        .map((c) => c.range)
        .sort((a, b) => ("offset" in a! && "offset" in b! ? a.offset - b.offset : 0)),
      [
        { offset: 0, length: 10 },
        { offset: 100, length: 100 },
        { offset: 500, length: 1 },
      ],
    );
  });

  test("ranges on different keys, and ranges issued in different ticks, are not merged", async () => {
    const inner = probe();
    inner.objects.set("other", new Uint8Array(100));
    const s = withCoalescing(inner);
    await Promise.all([
      s.getRange("obj", { offset: 0, length: 10 }),
      s.getRange("other", { offset: 10, length: 10 }),
    ]);
    await s.getRange("obj", { offset: 10, length: 10 });
    assert.equal(inner.calls.length, 3);
  });

  test("calls from promise continuations of the same tick are merged", async () => {
    const inner = probe();
    const s = withCoalescing(inner);
    const a = s.getRange("obj", { offset: 0, length: 10 });
    const b = Promise.resolve().then(() => s.getRange("obj", { offset: 10, length: 10 }));
    assert.deepEqual(await Promise.all([a, b]), [expected(inner, 0, 10), expected(inner, 10, 10)]);
    assert.equal(inner.calls.length, 1);
  });

  test("a merged range that runs past the end falls back to one request each, so valid callers still succeed", async () => {
    const inner = probe(1000);
    const s = withCoalescing(inner);
    const [ok, bad] = await Promise.allSettled([
      s.getRange("obj", { offset: 980, length: 10 }),
      s.getRange("obj", { offset: 985, length: 30 }),
    ]);
    assert.deepEqual(ok, { status: "fulfilled", value: expected(inner, 980, 10) });
    assert.ok(bad.status === "rejected" && isStorageError(bad.reason, "RangeNotSatisfiable"));
  });

  test("a missing object is undefined for every merged caller", async () => {
    const s = withCoalescing(probe());
    assert.deepEqual(
      await Promise.all([
        s.getRange("nope", { offset: 0, length: 1 }),
        s.getRange("nope", { offset: 1, length: 1 }),
      ]),
      [undefined, undefined],
    );
  });

  test("one caller aborting rejects only that caller; the merged request goes on for the others", async () => {
    const inner = probe();
    // The merged request is held until a's abort has been seen: the order is the test's, not a clock's.
    let release = () => {};
    inner.gate = new Promise((resolve) => (release = resolve));
    const s = withCoalescing(inner);
    const controller = new AbortController();
    const a = assert.rejects(s.getRange("obj", { offset: 0, length: 10 }, { signal: controller.signal }), {
      name: "AbortError",
    });
    const b = s.getRange("obj", { offset: 10, length: 10 });
    // The merge window is a timer (at least 1 ms), so wait on the clock, not on event-loop turns: a fast
    // machine runs a hundred turns before the timer is due.
    for (let i = 0; i < 500 && inner.calls.length === 0; i++) await new Promise((r) => setTimeout(r, 2));
    assert.equal(inner.calls.length, 1, "one merged request for both callers");
    controller.abort();
    await a;
    release();
    assert.deepEqual(await b, expected(inner, 10, 10));
    assert.equal(inner.calls.length, 1);
  });

  test("with maxGapBytes, ranges at most that far apart are one request; farther ones are not", async () => {
    const inner = probe();
    const s = withCoalescing(inner, { maxGapBytes: 16 });
    const asks = [
      [0, 10],
      [26, 10], // a gap of 16: merged
      [53, 5], // a gap of 17: not merged
      [58, 2], // touching the previous one
    ] as const;
    const got = await Promise.all(asks.map(([offset, length]) => s.getRange("obj", { offset, length })));
    for (const [i, g] of got.entries()) assert.deepEqual(g, expected(inner, asks[i]![0], asks[i]![1]));
    assert.deepEqual(
      inner.calls.map((c) => c.range),
      [
        { offset: 0, length: 36 },
        { offset: 53, length: 7 },
      ],
    );
  });

  test("calls pinned to a version merge only with the same pin, and the merged request carries it", async () => {
    const inner = probe();
    const pins: (number | undefined)[] = [];
    const recorded: ReadableStore = {
      get: (k, o) => inner.get(k, o),
      getRange: (k, r, o) => {
        pins.push(o?.unchangedSince);
        return inner.getRange(k, r, o);
      },
    };
    const s = withCoalescing(recorded);
    const got = await Promise.all([
      s.getRange("obj", { offset: 0, length: 10 }, { unchangedSince: 5 }),
      s.getRange("obj", { offset: 10, length: 10 }, { unchangedSince: 5 }),
      s.getRange("obj", { offset: 20, length: 10 }, { unchangedSince: 6 }),
      s.getRange("obj", { offset: 30, length: 10 }),
    ]);
    for (const [i, g] of got.entries()) assert.deepEqual(g, expected(inner, i * 10, 10));
    assert.deepEqual(
      inner.calls.map((c) => c.range),
      [
        { offset: 0, length: 20 },
        { offset: 20, length: 10 },
        { offset: 30, length: 10 },
      ],
    );
    assert.deepEqual(pins, [5, 6, undefined]);
  });

  test("the wrappers compose, and stay zarrita-compatible (get, getRange, set with /-keys)", async () => {
    const inner = probe();
    const s = withStats(withCoalescing(withConcurrencyLimit(withRetries(inner, { baseDelayMs: 0 }), 2)));
    await s.set("/group/zarr.json", new TextEncoder().encode("{}"));
    assert.equal(new TextDecoder().decode(await s.get("/group/zarr.json")), "{}");
    const parts = await Promise.all(
      [0, 1, 2, 3].map((i) => s.getRange("/obj", { offset: i * 10, length: 10 })),
    );
    assert.deepEqual(
      parts.flatMap((p) => [...p!]),
      [...expected(inner, 0, 40)],
    );
    assert.equal(inner.calls.filter((c) => c.op === "getRange").length, 1);
  });
});

describe("optional methods through the wrappers (getInto, setParts)", () => {
  /** A store with `getInto` and `setParts` that records them; `failFirst` makes the first getInto fail transiently. */
  class PartsStore extends ProbeStore {
    allocations = 0;
    parts: { key: string; byteLength: number; got: number }[] = [];
    failFirst = false;
    getInto(key: string, allocate: (size: number) => Uint8Array, opts?: StoreOptions) {
      this.calls.push({ op: "getInto", key });
      const bytes = this.objects.get(key);
      if (bytes === undefined) return Promise.resolve(undefined);
      const space = allocate(bytes.length);
      this.allocations++;
      space.set(bytes.subarray(0, this.failFirst ? 1 : bytes.length));
      if (this.failFirst) {
        this.failFirst = false;
        return Promise.reject(new StorageError("reset half-way", { tag: "Network" }));
      }
      opts?.signal?.throwIfAborted();
      return Promise.resolve(space.subarray(0, bytes.length));
    }
    async setParts(key: string, byteLength: number, parts: AsyncIterable<Uint8Array>) {
      let got = 0;
      for await (const p of parts) got += p.length;
      this.parts.push({ key, byteLength, got });
    }
  }
  async function* twoParts() {
    yield new Uint8Array(3);
    yield new Uint8Array(4);
  }
  const wrappers = {
    withStats: (s: ProbeStore) => withStats(s),
    withRetries: (s: ProbeStore) => withRetries(s, { baseDelayMs: 0 }),
    withConcurrencyLimit: (s: ProbeStore) => withConcurrencyLimit(s, 1),
    withCoalescing: (s: ProbeStore) => withCoalescing(s),
  };
  type Optional = { getInto?: PartsStore["getInto"]; setParts?: PartsStore["setParts"] };

  for (const [name, wrap] of Object.entries(wrappers)) {
    test(`${name} has getInto and setParts exactly when its inner store does, and passes them on`, async () => {
      assert.equal((wrap(probe()) as Optional).getInto, undefined, "a store without getInto");
      assert.equal((wrap(probe()) as Optional).setParts, undefined, "a store without setParts");
      const inner = new PartsStore();
      inner.objects.set("obj", new Uint8Array([1, 2, 3, 4, 5]));
      const s = wrap(inner) as Optional;
      const shared = new Uint8Array(new SharedArrayBuffer(16), 8);
      const got = await s.getInto!("obj", () => shared);
      // The inner store's own answer: a view of the caller's (shared) memory, no copy on the way.
      assert.equal(got!.buffer, shared.buffer);
      assert.equal(got!.byteOffset, 8);
      assert.deepEqual([...got!], [1, 2, 3, 4, 5]);
      assert.equal(await s.getInto!("missing", () => shared), undefined);
      await s.setParts!("big", 7, twoParts());
      assert.deepEqual(inner.parts, [{ key: "big", byteLength: 7, got: 7 }]);
      assert.deepEqual(
        inner.calls.map((c) => c.op),
        ["getInto", "getInto"],
        "one inner call each, not a get",
      );
    });
  }

  test("withStats counts getInto as a get and setParts as a set, with their bytes", async () => {
    const inner = new PartsStore();
    inner.objects.set("obj", new Uint8Array(10));
    const s = withStats(inner);
    await s.getInto!("obj", (n) => new Uint8Array(n));
    await s.getInto!("missing", (n) => new Uint8Array(n));
    await s.setParts!("big", 7, twoParts());
    const st = s.stats;
    assert.deepEqual(st.requests, { get: 2, getRange: 0, set: 1, delete: 0, list: 0 });
    assert.equal(st.bytesRead, 10);
    assert.equal(st.bytesWritten, 7);
    assert.equal(st.missing, 1);
  });

  test("withStats passes setFile on (only when its inner store has it), counted as a set of the bytes written", async () => {
    type FileStore = { setFile?: (key: string, write: (path: string) => Promise<number>) => Promise<void> };
    assert.equal((withStats(probe()) as FileStore).setFile, undefined);
    const landed: string[] = [];
    const inner = Object.assign(probe(), {
      async setFile(key: string, write: (path: string) => Promise<number>) {
        landed.push(`${key}:${await write(`/folder/${key}`)}`);
      },
    });
    const s = withStats(inner) as ReturnType<typeof withStats> & FileStore;
    await s.setFile!("c/0", async (path) => (path === "/folder/c/0" ? 11 : 0));
    assert.deepEqual(landed, ["c/0:11"]);
    assert.equal(s.stats.requests.set, 1);
    assert.equal(s.stats.bytesWritten, 11);
  });

  test("withStats passes flush on (only when its inner store has it): a folder's deferred syncs still run before the block", async () => {
    type Flushing = { flush?: () => Promise<void> };
    assert.equal((withStats(probe()) as Flushing).flush, undefined);
    let flushed = 0;
    const inner = Object.assign(probe(), {
      async flush() {
        flushed++;
      },
    });
    const s = withStats(inner) as ReturnType<typeof withStats> & Flushing;
    await s.flush!();
    assert.equal(flushed, 1);
    assert.deepEqual(s.stats.requests, { get: 0, getRange: 0, set: 0, delete: 0, list: 0 }, "not a request");
  });

  test("withRetries retries a getInto into the memory it was given: allocate is called once", async () => {
    const inner = new PartsStore();
    inner.objects.set("obj", new Uint8Array([9, 8, 7]));
    inner.failFirst = true;
    const s = withRetries(inner, { baseDelayMs: 0 });
    let allocated = 0;
    const shared = new Uint8Array(new SharedArrayBuffer(3));
    const got = await s.getInto!("obj", () => {
      allocated++;
      return shared;
    });
    assert.equal(inner.allocations, 2, "two attempts");
    assert.equal(allocated, 1);
    assert.equal(got!.buffer, shared.buffer);
    assert.deepEqual([...got!], [9, 8, 7]);
  });

  test("withConcurrencyLimit counts a getInto against the limit", async () => {
    const inner = new PartsStore();
    inner.objects.set("obj", new Uint8Array(4));
    inner.delayMs = 1;
    const s = withConcurrencyLimit(inner, 1);
    const running = [s.get("obj"), s.getInto!("obj", (n) => new Uint8Array(n))];
    assert.equal(s.inFlight, 1);
    assert.equal(s.queued, 1, "getInto waits for the get's slot");
    await Promise.all(running);
  });
});
