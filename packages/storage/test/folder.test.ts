import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Worker } from "node:worker_threads";
import { FolderStore, type FolderStoreOptions, isStorageError, openStore } from "@deltacells/storage/node";
import { coreWait } from "../src/core-wait.js";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "dc-folder-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function freshStore(name: string, opts?: FolderStoreOptions): Promise<FolderStore> {
  const dir = join(root, name);
  await mkdir(dir);
  return new FolderStore(dir, opts);
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => e.name);
}

describe("a folder store", () => {
  test("reads back what was written, whole and by ranges, and missing keys are undefined", async () => {
    const s = await freshStore("basic");
    const bytes = new Uint8Array(1000).map((_, i) => i % 256);
    await s.set("/a/b/c.bin", bytes);
    assert.deepEqual(await s.get("a/b/c.bin"), bytes);
    assert.deepEqual(await s.getRange("a/b/c.bin", { offset: 998, length: 2 }), bytes.slice(998));
    assert.deepEqual(await s.getRange("a/b/c.bin", { suffixLength: 3 }), bytes.slice(997));
    assert.equal(await s.get("a/b/missing.bin"), undefined);
    assert.equal(await s.get("a/b/c.bin/below"), undefined);
    assert.equal(await s.getRange("missing", { offset: 0, length: 1 }), undefined);
    await assert.rejects(s.getRange("a/b/c.bin", { offset: 999, length: 2 }), (e: unknown) =>
      isStorageError(e, "RangeNotSatisfiable"),
    );
  });

  test("whole reads are exact around the blocking-read limit, blocking or not, and each answer is its own", async () => {
    const s = await freshStore("blocking", { blockingReads: true });
    const sizes = [0, 1, 4096, (1 << 18) - 1, 1 << 18, (1 << 18) + 1, 3 << 20];
    for (const [i, size] of sizes.entries()) await s.set(`k${i}`, pattern(size, i));
    await mkdir(join(s.root, "adir"));
    const base = openFds();
    for (const store of [s, new FolderStore(s.root)]) {
      // All at once, blocking and thread-pool reads mixed: no answer may alias another's bytes.
      const got = await Promise.all(sizes.map((_, i) => store.get(`k${i}`)));
      for (const [i, size] of sizes.entries())
        assert.deepEqual(got[i], pattern(size, i), `object of ${size} bytes`);
      assert.equal(await store.get("k404"), undefined);
      await assert.rejects(store.get("adir"), (e: unknown) => isStorageError(e, "StorageError"));
      await settled(store);
    }
    assert.equal(openFds(), base, "descriptors leaked");
  });

  test("getInto reads whole objects into the caller's memory (shared too), once sized", async () => {
    const s = await freshStore("into");
    const sizes = [0, 1, 4096, 3 << 20];
    for (const [i, size] of sizes.entries()) await s.set(`k${i}`, pattern(size, i));
    await mkdir(join(s.root, "adir"));
    const base = openFds();
    const asked: number[] = [];
    const got = await Promise.all(
      sizes.map((_, i) =>
        s.getInto(`k${i}`, (size) => {
          asked.push(size);
          // Larger than asked, at an offset: the answer is a view of exactly the object.
          return new Uint8Array(new SharedArrayBuffer(size + 24), 8);
        }),
      ),
    );
    assert.deepEqual(
      [...asked].sort((a, b) => a - b),
      sizes,
    );
    for (const [i, size] of sizes.entries()) {
      assert.ok(got[i]!.buffer instanceof SharedArrayBuffer);
      assert.equal(got[i]!.byteOffset, 8);
      assert.deepEqual(new Uint8Array(got[i]!), pattern(size, i), `object of ${size} bytes`);
    }
    let calls = 0;
    assert.equal(
      await s.getInto("k404", () => {
        calls++;
        return new Uint8Array(0);
      }),
      undefined,
    );
    assert.equal(calls, 0, "nothing allocated for a missing object");
    await assert.rejects(
      s.getInto("k3", () => new Uint8Array(10)),
      (e: unknown) => isStorageError(e),
    );
    await assert.rejects(
      s.getInto("adir", (n) => new Uint8Array(n)),
      (e: unknown) => isStorageError(e),
    );
    await settled(s);
    assert.equal(openFds(), base, "descriptors leaked");
  });

  test("with blockingReads, a getInto refused for its key gives its descriptor slot back", async () => {
    // The key was checked after the slot was taken and the throw skipped giving it back: with one
    // slot, every later read waited for ever.
    const s = await freshStore("into-bad-key", { blockingReads: true, maxOpenFiles: 1 });
    await s.set("k", pattern(10, 1));
    const allocate = (n: number) => new Uint8Array(n);
    await assert.rejects(s.getInto("../outside", allocate), { _tag: "InvalidKey" });
    assert.deepEqual(await s.getInto("k", allocate), pattern(10, 1));
  });

  test("with blockingReads, getInto of an object up to 2 MiB reads on this thread, exactly, and still refuses a changed object", async () => {
    const s = await freshStore("into-blocking", { blockingReads: true });
    const sizes = [0, 1, 4096, (1 << 21) - 1, 1 << 21, (1 << 21) + 1, 3 << 20];
    for (const [i, size] of sizes.entries()) await s.set(`k${i}`, pattern(size, i));
    const base = openFds();
    for (const [i, size] of sizes.entries()) {
      let asked = -1;
      const reading = s.getInto(`k${i}`, (n) => {
        asked = n;
        return new Uint8Array(new SharedArrayBuffer(n + 8), 8);
      });
      // Read before getInto returned (blocking) up to the limit; past it, through the thread pool.
      assert.equal(asked, size <= 1 << 21 ? size : -1, `object of ${size} bytes`);
      const got = await reading;
      assert.equal(got!.byteOffset, 8);
      assert.deepEqual(new Uint8Array(got!), pattern(size, i), `object of ${size} bytes`);
    }
    assert.equal(await s.getInto("k404", () => new Uint8Array(0)), undefined);
    await assert.rejects(
      s.getInto("k3", () => new Uint8Array(10)),
      (e: unknown) => isStorageError(e, "InvalidArgument"),
    );
    await mkdir(join(s.root, "adir"));
    await assert.rejects(
      s.getInto("adir", (n) => new Uint8Array(n)),
      (e: unknown) => isStorageError(e),
    );
    const aborted = new AbortController();
    aborted.abort(new Error("stop"));
    await assert.rejects(
      s.getInto("k2", (n) => new Uint8Array(n), { signal: aborted.signal }),
      /stop/,
    );
    let changed = 0;
    await s.getInto("k2", (n) => new Uint8Array(n), { onInfo: (info) => (changed = info.changed ?? 0) });
    assert.ok(changed > 0, "onInfo reports the change time");
    await assert.rejects(
      s.getInto("k2", (n) => new Uint8Array(n), { unchangedSince: changed - 1000 }),
      (e: unknown) => isStorageError(e, "Changed"),
    );
    await settled(s);
    assert.equal(openFds(), base, "descriptors leaked");
  });

  test("blocking reads are opt-in: a library default never blocks the event loop", async () => {
    const s = await freshStore("opt-in");
    assert.equal(s.readsBlock, false, "new FolderStore(dir)");
    assert.equal((openStore(s.root) as FolderStore).readsBlock, false, "openStore(path)");
    const on = openStore(s.root, { folder: { blockingReads: true } }) as FolderStore;
    assert.ok(
      on instanceof FolderStore && on.readsBlock,
      "openStore(path, { folder: { blockingReads: true } })",
    );
  });

  test("four slow blocking reads in a row switch gets to the thread pool for 5 s; one slow read does not", async () => {
    const s = await freshStore("slow-disk", { blockingReads: true });
    await s.set("k", pattern(100, 1));
    const realNow = performance.now.bind(performance);
    let now = realNow();
    let step = 0;
    // A clock that advances `step` ms per reading: every blocking read then "takes" `step` ms.
    performance.now = () => (now += step);
    try {
      assert.ok(s.readsBlock);
      step = 2;
      await s.get("k"); // slow
      step = 0;
      await s.get("k"); // fast: the run of slow reads starts again
      step = 2;
      for (let i = 0; i < 3; i++) await s.get("k");
      assert.ok(s.readsBlock, "three slow reads in a row are not enough");
      await s.get("k");
      assert.ok(!s.readsBlock, "four slow reads in a row switch to the thread pool");
      step = 0;
      assert.deepEqual(await s.get("k"), pattern(100, 1), "reads go on through the thread pool");
      now += 5001;
      assert.ok(s.readsBlock, "after 5 s the store tries blocking reads again");
      assert.ok(!new FolderStore(s.root).readsBlock, "a store never blocks unless asked to");
    } finally {
      performance.now = realNow;
    }
  });

  test("a blocking read slow only for want of a core is not counted: the store keeps blocking reads", async () => {
    // With workers decoding on every core, the calling thread is descheduled often: four
    // page-cache reads in a row stretched past 0.84 ms by the wall clock switched the store to the
    // thread pool for 5 s (ds.tiles() with threads ran 20% slower meanwhile).
    const s = await freshStore("descheduled", { blockingReads: true });
    await s.set("k", pattern(100, 1));
    const realNow = performance.now.bind(performance);
    const realWait = coreWait.ms;
    let now = realNow();
    let waited = 0;
    // Each reading of either clock advances it 2 ms: every read "takes" 2 ms, all of it waiting
    // for a core.
    performance.now = () => (now += 2);
    coreWait.ms = () => (waited += 2);
    try {
      for (let i = 0; i < 8; i++) await s.get("k");
      assert.ok(s.readsBlock, "reads slow only by the wall clock switch nothing");
      for (let i = 0; i < 8; i++) await s.getInto("k", (n) => new Uint8Array(n));
      assert.ok(s.readsBlock, "nor do getInto's");
      // The same reads with no time waiting for a core: four in a row switch, as on a slow disk.
      coreWait.ms = () => waited;
      for (let i = 0; i < 4; i++) await s.get("k");
      assert.ok(!s.readsBlock, "reads slow while running switch to the thread pool");
    } finally {
      performance.now = realNow;
      coreWait.ms = realWait;
    }
  });

  test("the core-wait clock reads this thread's time waiting for a core (Linux)", {
    skip: process.platform !== "linux",
  }, async () => {
    const before = coreWait.ms();
    assert.equal(typeof before, "number", "/proc/thread-self/schedstat is read");
    // Busy threads on every core and then some: this thread, busy too, waits for a core.
    const n = availableParallelism() + 1;
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const spin =
      "const { workerData } = require('node:worker_threads'); while (Atomics.load(workerData, 0) === 0);";
    const workers = Array.from({ length: n }, () => new Worker(spin, { eval: true, workerData: stop }));
    try {
      await Promise.all(workers.map((w) => new Promise((r) => w.once("online", r))));
      const t0 = performance.now();
      while (performance.now() - t0 < 300);
      const after = coreWait.ms()!;
      assert.ok(after > before!, `waited ${after - before!} ms`);
      assert.ok(after - before! < performance.now() - t0 + 50, "no more than the time that passed");
    } finally {
      Atomics.store(stop, 0, 1);
      await Promise.all(workers.map((w) => w.terminate()));
    }
  });

  test("list returns sorted keys under a prefix and never temporary files", async () => {
    const s = await freshStore("list");
    for (const k of ["x/2", "x/1", "y/1", "x2"]) await s.set(k, new Uint8Array([1]));
    await writeFile(join(s.root, "x", "3.dctmp-abcdef"), "partial");
    assert.deepEqual(await s.list(), ["x/1", "x/2", "x2", "y/1"]);
    assert.deepEqual(await s.list("x/"), ["x/1", "x/2"]);
    assert.deepEqual(await s.list("x"), ["x/1", "x/2", "x2"]);
    assert.deepEqual(await s.list("/y/"), ["y/1"]);
    await s.delete("x/1");
    await s.delete("x/never-there");
    assert.deepEqual(await s.list("x/"), ["x/2"]);
  });

  for (const key of [
    "../escape",
    "a/../../escape",
    "a/./b",
    "//etc/passwd",
    "a\\..\\b",
    "a//b",
    "",
    "nul\0byte",
  ]) {
    test(`the key ${JSON.stringify(key)} is refused for reads and writes`, async () => {
      const s = await freshStore(`refuse-${Buffer.from(key).toString("hex")}`);
      const isInvalid = (e: unknown) => isStorageError(e, "InvalidKey");
      await assert.rejects(s.get(key), isInvalid);
      await assert.rejects(s.set(key, new Uint8Array([1])), isInvalid);
      await assert.rejects(s.delete(key), isInvalid);
      assert.deepEqual(await filesUnder(root).then((f) => f.filter((n) => n === "escape")), []);
    });
  }

  test("a reader during repeated large writes sees only whole objects, old or new, never a mix", async () => {
    const s = await freshStore("atomic");
    const size = 4 * 1024 * 1024;
    const versions = [1, 2, 3].map((v) => new Uint8Array(size).fill(v));
    await s.set("obj", versions[0]!);
    let writing = true;
    // A failed write ends the reads too (the loop below would otherwise run for ever); its error
    // is the test's, when awaited below.
    const writer = (async () => {
      try {
        for (let i = 0; i < 12; i++) await s.set("obj", versions[i % 3]!);
      } finally {
        writing = false;
      }
    })();
    let reads = 0;
    while (writing) {
      const got = await s.get("obj");
      assert.ok(got !== undefined, "the object vanished during a rewrite");
      assert.equal(got.length, size, "a reader saw a partial object");
      const first = got[0]!;
      assert.ok(
        got.every((b) => b === first),
        "a reader saw a mix of two versions",
      );
      reads++;
    }
    await writer;
    assert.ok(reads > 0);
  });

  test("a write that fails or is aborted leaves no visible object and no temporary file", async () => {
    const s = await freshStore("failed");
    const controller = new AbortController();
    const pending = s.set("obj", new Uint8Array(8 * 1024 * 1024), { signal: controller.signal });
    controller.abort();
    await assert.rejects(pending, { name: "AbortError" });
    assert.equal(await s.get("obj"), undefined);
    // A directory where the object should go makes the final rename fail.
    await mkdir(join(s.root, "dir", "child"), { recursive: true });
    await assert.rejects(s.set("dir", new Uint8Array([1, 2, 3])), (e: unknown) =>
      isStorageError(e, "StorageError"),
    );
    assert.deepEqual(await filesUnder(s.root), []);
    assert.deepEqual(await s.list(), []);
  });
});

/** Descriptors this process has open now (Linux). */
function openFds(): number {
  return readdirSync("/proc/self/fd").length;
}

/** Waits until the store holds no descriptor (idle ones close at the end of an event-loop turn). */
async function settled(s: FolderStore): Promise<void> {
  for (let i = 0; i < 200 && s.openFiles > 0; i++) await new Promise((r) => setTimeout(r, 1));
  assert.equal(s.openFiles, 0, "the store still holds descriptors after its reads finished");
}

function pattern(n: number, seed: number): Uint8Array {
  return new Uint8Array(n).map((_, i) => (i * 31 + seed * 7 + (i >> 8)) & 255);
}

describe("a folder store's shared descriptors", () => {
  test("overlapping ranges on one key share one descriptor and each gets its own bytes", async () => {
    const s = await freshStore("shared");
    const a = pattern(100_000, 1);
    const b = pattern(50_000, 2);
    await s.set("a.bin", a);
    await s.set("d/b.bin", b);
    const asks: {
      key: string;
      bytes: Uint8Array;
      range: { offset: number; length: number } | { suffixLength: number };
    }[] = [];
    for (let i = 0; i < 300; i++) {
      const [key, bytes] = i % 3 === 0 ? ["d/b.bin", b] : ["a.bin", a];
      const range =
        i % 10 === 9 ? { suffixLength: i } : { offset: (i * 7919) % (bytes.length - 600), length: i % 600 };
      asks.push({ key, bytes, range });
    }
    const t0 = performance.now();
    const pending = asks.map(({ key, range }) => s.getRange(key, range));
    const spent = performance.now() - t0;
    // One descriptor per key, unless issuing the reads outlasted the store's share window (100 ms:
    // a descriptor older than that takes no new readers), as on a loaded machine: then one more
    // per key for each window the loop spanned. The same clock as the store's, no margin.
    const windows = Math.floor(spent / 100) + 1;
    if (windows === 1) assert.equal(s.openFiles, 2, "300 reads on two keys should hold two descriptors");
    else
      assert.ok(s.openFiles <= 2 * windows, `${s.openFiles} descriptors for reads issued over ${spent} ms`);
    const got = await Promise.all(pending);
    for (const [i, { bytes, range }] of asks.entries()) {
      const want =
        "suffixLength" in range
          ? bytes.subarray(bytes.length - range.suffixLength)
          : bytes.subarray(range.offset, range.offset + range.length);
      assert.deepEqual(got[i], want, `read ${i} (${JSON.stringify(range)}) got the wrong bytes`);
    }
    await settled(s);
  });

  test("reads one after another reuse the descriptor and release it once the loop stops", async () => {
    const s = await freshStore("sequential");
    const a = pattern(10_000, 3);
    await s.set("a", a);
    const base = openFds();
    for (let i = 0; i < 50; i++) {
      assert.deepEqual(
        await s.getRange("a", { offset: i * 100, length: 100 }),
        a.subarray(i * 100, i * 100 + 100),
      );
      assert.equal(s.openFiles, 1);
    }
    await settled(s);
    assert.equal(openFds(), base);
  });

  test("a set through the store is seen by the next read, even while other reads of the key go on", async () => {
    const s = await freshStore("replace");
    const v1 = pattern(4096, 1);
    const v2 = pattern(4096, 2);
    await s.set("k", v1);
    await Promise.all(Array.from({ length: 50 }, (_, i) => s.getRange("k", { offset: i, length: 10 })));
    await s.set("k", v2);
    assert.deepEqual(
      await s.getRange("k", { offset: 0, length: 4096 }),
      v2,
      "the read after the wave saw the old object",
    );

    // Reads that never pause keep a descriptor open; the store's own set must still be seen at once.
    let reading = true;
    // The background reads may meet the deleted key mid-flight: a failure is handled from the start,
    // as it may come while the test awaits something else (an unhandled rejection fails the run).
    const reader = (async () => {
      while (reading) await Promise.all([0, 1, 2, 3].map((i) => s.getRange("k", { offset: i, length: 4 })));
    })().catch(() => {});
    try {
      await new Promise((r) => setTimeout(r, 5));
      await s.set("k", v1);
      assert.deepEqual(
        await s.getRange("k", { suffixLength: 4096 }),
        v1,
        "a read after set saw the old object",
      );
      await s.delete("k");
      assert.equal(
        await s.getRange("k", { offset: 0, length: 1 }),
        undefined,
        "a read after delete saw the object",
      );
    } finally {
      reading = false;
    }
    await reader;
    await settled(s);
  });

  test("an object replaced outside the store is seen by the next read after a wave", async () => {
    const s = await freshStore("external");
    const v1 = pattern(2048, 5);
    const v2 = pattern(1024, 6);
    await s.set("k", v1);
    await Promise.all(Array.from({ length: 20 }, (_, i) => s.getRange("k", { offset: i * 10, length: 10 })));
    await writeFile(join(s.root, "k.next"), v2);
    await rename(join(s.root, "k.next"), join(s.root, "k"));
    assert.deepEqual(await s.getRange("k", { suffixLength: 1024 }), v2);
    await assert.rejects(s.getRange("k", { offset: 1000, length: 100 }), (e: unknown) =>
      isStorageError(e, "RangeNotSatisfiable"),
    );
    await settled(s);
  });

  test("a range past the end is RangeNotSatisfiable with the object's size, and its neighbours still succeed", async () => {
    const s = await freshStore("short");
    const a = pattern(1000, 7);
    await s.set("a", a);
    const results = await Promise.allSettled([
      s.getRange("a", { offset: 0, length: 500 }),
      s.getRange("a", { offset: 900, length: 101 }), // one byte short
      s.getRange("a", { offset: 5000, length: 1 }), // starts past the end
      s.getRange("a", { suffixLength: 1001 }),
      s.getRange("a", { offset: 1001, length: 0 }),
      s.getRange("a", { offset: 1000, length: 0 }), // empty, at the end: fine
      s.getRange("a", { offset: 500, length: 500 }),
    ]);
    const statuses = results.map((r) => r.status);
    assert.deepEqual(statuses, [
      "fulfilled",
      "rejected",
      "rejected",
      "rejected",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    for (const r of results) {
      if (r.status === "rejected") {
        assert.ok(isStorageError(r.reason, "RangeNotSatisfiable"), String(r.reason));
        assert.match((r.reason as Error).message, /which has 1000 bytes/);
      }
    }
    assert.deepEqual((results[0] as PromiseFulfilledResult<Uint8Array>).value, a.subarray(0, 500));
    assert.deepEqual((results[5] as PromiseFulfilledResult<Uint8Array>).value, new Uint8Array(0));
    assert.deepEqual((results[6] as PromiseFulfilledResult<Uint8Array>).value, a.subarray(500));
    await settled(s);
  });

  test("a malformed range is refused before any file is opened", async () => {
    const s = await freshStore("malformed");
    for (const range of [
      { offset: -1, length: 2 },
      { offset: 0, length: -2 },
      { offset: 0.5, length: 2 },
      { suffixLength: -1 },
    ]) {
      await assert.rejects(s.getRange("never-created", range), (e: unknown) =>
        isStorageError(e, "InvalidKey"),
      );
    }
    assert.equal(s.openFiles, 0);
  });

  test("descriptors are all closed once the store goes idle, after successes, misses and errors", async () => {
    const s = await freshStore("idle");
    for (let i = 0; i < 20; i++) await s.set(`k${i}`, pattern(3000, i));
    await mkdir(join(s.root, "adir"));
    const base = openFds();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 400; i++) {
      calls.push(s.getRange(`k${i % 20}`, { offset: i, length: 100 }));
      if (i % 10 === 0) calls.push(s.get(`k${i % 20}`));
      if (i % 25 === 0) calls.push(s.getRange(`missing${i}`, { offset: 0, length: 1 }));
      if (i % 50 === 0)
        calls.push(s.getRange(`k${i % 20}`, { offset: 2990, length: 20 }).catch(() => "short"));
    }
    await assert.rejects(s.getRange("adir", { offset: 0, length: 1 }), (e: unknown) =>
      isStorageError(e, "StorageError"),
    );
    await assert.rejects(s.get("adir"), (e: unknown) => isStorageError(e, "StorageError"));
    const settledCalls = await Promise.all(calls);
    assert.ok(settledCalls.includes("short"));
    await settled(s);
    assert.equal(openFds(), base, "descriptors leaked after the wave");
  });

  test("no more than maxOpenFiles descriptors are open at once, however wide the fan-out", async () => {
    const s = await freshStore("bounded");
    const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
    for (const [i, k] of keys.entries()) await s.set(k, pattern(512, i));
    const bounded = new FolderStore(s.root, { maxOpenFiles: 4 });
    const base = openFds();
    let peak = 0;
    const watch = () => {
      peak = Math.max(peak, openFds() - base);
      assert.ok(bounded.openFiles <= 4, `the store held ${bounded.openFiles} descriptors`);
    };
    const got = await Promise.all(
      keys.flatMap((k) => [
        bounded.getRange(k, { offset: 10, length: 20 }).finally(watch),
        bounded.get(k).finally(watch),
      ]),
    );
    for (const [i, k] of keys.entries()) {
      const want = pattern(512, i);
      assert.deepEqual(got[2 * i], want.subarray(10, 30), `range of ${k}`);
      assert.deepEqual(got[2 * i + 1], want, `whole ${k}`);
    }
    assert.ok(peak <= 4, `the process had ${peak} more descriptors open than before`);
    await settled(bounded);
    assert.equal(openFds(), base);
    assert.throws(
      () => new FolderStore(s.root, { maxOpenFiles: 0 }),
      (e: unknown) => isStorageError(e),
    );
  });

  test("a read whose signal aborts while it waits for a descriptor rejects at once and leaks nothing", async () => {
    const s = await freshStore("abort-wait");
    await s.set("a", pattern(100, 1));
    await s.set("b", pattern(100, 2));
    const bounded = new FolderStore(s.root, { maxOpenFiles: 1 });
    const base = openFds();
    const first = bounded.getRange("a", { offset: 0, length: 10 });
    const controller = new AbortController();
    // Both reject on the abort: each is awaited from the start, not the second only once the first
    // has been (an unhandled rejection meanwhile fails the run).
    const waitingRange = assert.rejects(
      bounded.getRange("b", { offset: 0, length: 10 }, { signal: controller.signal }),
      { name: "AbortError" },
    );
    const waitingGet = assert.rejects(bounded.get("b", { signal: controller.signal }), {
      name: "AbortError",
    });
    controller.abort();
    await waitingRange;
    await waitingGet;
    assert.deepEqual(await first, pattern(100, 1).subarray(0, 10));
    assert.deepEqual(await bounded.getRange("b", { offset: 90, length: 10 }), pattern(100, 2).subarray(90));
    await settled(bounded);
    assert.equal(openFds(), base);
  });
});

test("a set under a folder that refuses children (/proc/x) fails at once instead of looping", async (t) => {
  if (process.platform !== "linux") return t.skip("needs /proc");
  const store = new FolderStore("/proc/deltacells-test/sub");
  const timeout = new Promise((_, fail) =>
    setTimeout(() => fail(new Error("set did not return")), 10_000).unref(),
  );
  await assert.rejects(Promise.race([store.set("a/b.bin", new Uint8Array(1)), timeout]), (err: unknown) => {
    assert.ok(isStorageError(err));
    assert.match((err as Error).message, /ENOENT/);
    return true;
  });
});
