/**
 * The Node parts of the streaming writer: spill files on disk (written, read back, removed on
 * success, failure, SIGINT, and by the next run after a SIGKILL) and native zstd on worker threads
 * (the same bytes as the WebAssembly codec writeStore uses).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FolderStore, MemoryStore } from "@deltacells/storage/node";
import { DecodePool } from "../src/decode-pool.js";
import { zstdLevel } from "../src/encode-pool.js";
import { SporadikError } from "../src/errors.js";
import {
  coordsOfLayout,
  EncodePool,
  FileSpill,
  layoutFromCompressed,
  layoutFromCoords,
  nativeEncoder,
  openReader,
  sweepStaleSpills,
  withFileParts,
  writeStore,
  writeStoreFromRows,
} from "../src/node.js";
import { durability, EARLY_SYNC_EVERY, syncfsReportsErrors } from "../src/parts-folder.js";
import { SPILL_PREFIX } from "../src/spill-files.js";
import { encodeChunk } from "../src/zarr.js";
import { random, tempDir } from "./helpers.js";

const FIXTURE = join(import.meta.dirname, "fixtures/stream-killed.ts");

function randomCounts(length: number, seed: number): Int32Array {
  const next = random(seed);
  return Int32Array.from({ length }, () => (next() < 0.6 ? 0 : Math.floor(next() * next() * 300)));
}

/**
 * A random CSR matrix (each entry present with probability `p`, counts from `countSeed`, all >= 1)
 * and writeStore's store of it with both layouts, chunks of `chunk` elements: the reference.
 */
async function csrAndReference(
  nRows: number,
  nCols: number,
  p: number,
  seed: number,
  countSeed: number,
  chunk: number,
) {
  const next = random(seed);
  const indptr = new Int32Array(nRows + 1);
  const indices: number[] = [];
  for (let r = 0; r < nRows; r++) {
    for (let c = 0; c < nCols; c++) if (next() < p) indices.push(c);
    indptr[r + 1] = indices.length;
  }
  const data = randomCounts(indices.length, countSeed).map((v) => v + 1);
  const csr = {
    format: "csr" as const,
    shape: [nRows, nCols],
    indptr,
    indices: Int32Array.from(indices),
    data,
  };
  const reference = new MemoryStore();
  const rows = layoutFromCompressed(csr);
  const { coords, values } = coordsOfLayout(rows);
  await writeStore(reference, [rows, layoutFromCoords([nRows, nCols], coords, values, 1)], { chunk });
  return { csr, reference };
}

test("native zstd on workers writes the WebAssembly codec's bytes (native at the default level, wasm above)", async () => {
  const pool = new EncodePool(2);
  try {
    const encode = nativeEncoder(pool);
    for (const level of [0, 1, 3, 9]) {
      // Levels 3 and 9 go through the WebAssembly codec: the native library's bytes differ there.
      const compressors = [{ name: "zstd", configuration: { level, checksum: false } }];
      for (const seed of [1, 2, 3]) {
        const values = randomCounts(32_768, seed * 10 + level);
        const wasm = await encodeChunk(values, compressors);
        const native = await encode(new Uint8Array(values.slice().buffer), compressors);
        assert.ok(Buffer.from(wasm).equals(Buffer.from(native)), `level ${level}, seed ${seed}`);
      }
    }
    assert.equal(zstdLevel(0), 1);
    assert.equal(zstdLevel(40), 22);
  } finally {
    await pool.close();
  }
});

test("the encode pool keeps the buffers its workers give back within a byte budget, oldest lengths first, and lets them go on close", async () => {
  const pool = new EncodePool(1);
  const spare = (n: number) => new Uint8Array(pool.buffer(n))[0] === 0xab;
  try {
    const mib = 1 << 20;
    // One chunk of each of 80 lengths (80 MiB in all, over the 64 MiB budget), marked 0xab.
    const lengths = Array.from({ length: 80 }, (_, i) => mib + 8 * i);
    for (const n of lengths) await pool.encode(new Uint8Array(n).fill(0xab), 1);
    const kept = lengths.filter(spare);
    assert.ok(kept.length * mib <= EncodePool.SPARE_BYTES, `${kept.length} spare buffers of ~1 MiB`);
    assert.ok(kept.length >= 60, `${kept.length} spare buffers kept`);
    // The lengths given back last are the ones kept.
    assert.deepEqual(kept, lengths.slice(lengths.length - kept.length));
    await pool.encode(new Uint8Array(4096).fill(0xab), 1);
    await pool.close();
    assert.equal(spare(4096), false, "spare buffers outlive close()");
  } finally {
    await pool.close();
  }
});

test("close() of an encode or decode pool refuses the jobs still pending at once: a late reply must not unref a worker being terminated", async () => {
  // A reply that came in while the workers were terminated used to settle its job, and the last
  // one unref'd its worker: an event loop with nothing else to do then ended during
  // `await pool.close()`, and what followed never ran (a test cancelled with "the event loop has
  // already resolved"; a command's last lines skipped).
  const encoders = new EncodePool(1);
  await encoders.encode(new Uint8Array(4096), 1); // started
  const decoders = new DecodePool(1);
  const stored = await encodeChunk(new Uint8Array(1 << 20).fill(7), [
    { name: "zstd", configuration: { level: 1 } },
  ]);
  assert.equal(await decoders.offer(stored, new Uint8Array(1 << 20)), 1 << 20); // started
  const pending = [
    encoders.encode(new Uint8Array(8 << 20).fill(3), 19),
    decoders.offer(stored, new Uint8Array(1 << 20)) as Promise<number>,
  ];
  // Both closed before any reply can come in (no await since the jobs were posted).
  const closing = [encoders.close(), decoders.close()];
  await assert.rejects(pending[0]!, { _tag: "EncodeWorkerError", message: /encode pool was closed/ });
  await assert.rejects(pending[1]!, { message: /decode pool was closed/ });
  await Promise.all(closing);
});

test("a streamed store through file spill and native workers equals writeStore's, and leaves no spill", async () => {
  const { dir, cleanup } = tempDir();
  const pool = new EncodePool(2);
  try {
    const nRows = 600;
    const nCols = 300;
    const { csr, reference } = await csrAndReference(nRows, nCols, 0.15, 5, 6, 1000);
    const { indptr, data } = csr;
    const spill = await FileSpill.create(join(dir, "tmp"));
    const streamed = new MemoryStore();
    const blocks = Array.from({ length: nRows / 50 }, (_, b) => ({
      nRows: 50,
      indptr: indptr.subarray(b * 50, b * 50 + 51),
      indices: csr.indices,
      data,
    }));
    await writeStoreFromRows(streamed, blocks, {
      shape: [nRows, nCols],
      chunk: 1000,
      spill,
      spillFiles: 7,
      spillFrame: 100,
      assembly: 2000,
      encoder: nativeEncoder(pool),
    });
    for (const [key, bytes] of reference.objects) {
      assert.ok(Buffer.from(bytes).equals(Buffer.from(streamed.objects.get(key) as Uint8Array)), key);
    }
    assert.equal(streamed.objects.size, reference.objects.size);
    assert.equal(existsSync(spill.dir), false);
  } finally {
    await pool.close();
    cleanup();
  }
});

test("into a folder with deferred syncs the workers write the chunk files themselves: writeStore's bytes; a file they cannot write fails the write, no block", async () => {
  const { dir, cleanup } = tempDir();
  const pool = new EncodePool(2);
  try {
    const nRows = 400;
    const nCols = 120;
    const { csr, reference } = await csrAndReference(nRows, nCols, 0.2, 11, 12, 500);
    const { indptr, data } = csr;
    const blocks = [{ nRows, indptr, indices: csr.indices, data }];
    const write = async (out: string) => {
      const files = withFileParts(new FolderStore(out), out, { deferSync: true });
      const viaWorkers: string[] = [];
      const store = {
        ...files,
        setFile: (key: string, write: (path: string) => Promise<number>) => {
          viaWorkers.push(key);
          return (files.setFile as NonNullable<typeof files.setFile>)(key, write);
        },
      };
      await writeStoreFromRows(store, blocks, {
        shape: [nRows, nCols],
        chunk: 500,
        encoder: nativeEncoder(pool),
      });
      return viaWorkers;
    };
    const out = join(dir, "out");
    const viaWorkers = await write(out);
    for (const [key, bytes] of reference.objects) {
      assert.ok(Buffer.from(bytes).equals(readFileSync(join(out, key))), key);
    }
    // Every compressed chunk went to its file from a worker: none came back through set.
    const chunks = [...reference.objects.keys()].filter((key) => /\/c\/\d+$/.test(key));
    assert.ok(chunks.length > 20, `${chunks.length} chunks`);
    assert.deepEqual(
      viaWorkers.map((key) => key.replace(/^\//, "")).sort(),
      chunks.map((key) => key.replace(/^\//, "")).sort(),
    );

    // A folder where a chunk's file goes: the worker's write fails (EISDIR), and so does the
    // write, naming the chunk; the store gets no block.
    const bad = join(dir, "bad");
    mkdirSync(join(bad, "layouts/axis1/indices/c/3"), { recursive: true });
    await assert.rejects(write(bad), (error: Error & { object?: string }) => {
      assert.match(error.message, /writing \/?layouts\/axis1\/indices\/c\/3 to .* failed: .*EISDIR/);
      assert.equal(error.object?.replace(/^\//, ""), "layouts/axis1/indices/c/3");
      return true;
    });
    await assert.rejects(openReader(new FolderStore(bad)), { _tag: "IncompleteError" });
  } finally {
    await pool.close();
    cleanup();
  }
});

test("a chunk file that fails for its worker, not the file system, says so: no hint to free space", async () => {
  // Any error of ours passes as it is; only the file system's errors become failed writes.
  // A worker that could not start (or zstd that failed) was reported as a failed file write,
  // "Free space or fix the folder's permissions", which sent the user after the wrong cause.
  const { dir, cleanup } = tempDir();
  try {
    const files = withFileParts(new FolderStore(dir), dir, { deferSync: true });
    const setFile = files.setFile as NonNullable<typeof files.setFile>;
    const workerFailed = new SporadikError("a zstd encode worker failed: Cannot find module", {
      tag: "EncodeWorkerError",
    });
    await assert.rejects(
      setFile("a/c/0", async (path) => {
        writeFileSync(path, "partial");
        throw workerFailed;
      }),
      (error: unknown) => error === workerFailed,
    );
    assert.equal(existsSync(join(dir, "a/c/0")), false, "what was written is removed");
    const full = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    await assert.rejects(
      setFile("a/c/1", async () => {
        throw full;
      }),
      (error: Error & { cause?: unknown }) => {
        assert.match(error.message, /writing a\/c\/1 to .* failed: ENOSPC.*Free space/);
        assert.equal(error.cause, full);
        return true;
      },
    );
  } finally {
    cleanup();
  }
});

test("the file spill holds axis 1's nonzeros on disk and is removed after a failure too", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const spill = await FileSpill.create(dir);
    const indptr = Int32Array.of(0, 3, 5);
    const indices = Int32Array.of(0, 4, 9, 2, 3);
    const data = Int32Array.of(1, 2, 3, 4, 5);
    // Declares 3 rows, writes 2: refused at finish, with the spill gone.
    await assert.rejects(
      writeStoreFromRows(new FolderStore(join(dir, "out")), [{ nRows: 2, indptr, indices, data }], {
        shape: [3, 10],
        spill,
        spillFrame: 1,
      }),
      /2 rows were written/,
    );
    assert.ok(spill.bytesSpilled >= 5 * 12);
    assert.equal(existsSync(spill.dir), false);
    await assert.rejects(openReader(new FolderStore(join(dir, "out"))), { _tag: "IncompleteError" });
  } finally {
    cleanup();
  }
});

function startKilled(output: string, parent: string, mode: string) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=source", FIXTURE, output, parent, mode],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`the writer exited early (${code})`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, ready, exited };
}

test("a killed write leaves no block; its spill goes on SIGINT, or with the next run's sweep after SIGKILL", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const spills = join(dir, "tmp");
    const killed = startKilled(join(dir, "a"), spills, "keep");
    await killed.ready;
    killed.child.kill("SIGKILL");
    await killed.exited;
    await assert.rejects(openReader(new FolderStore(join(dir, "a"))), { _tag: "IncompleteError" });
    assert.equal(readdirSync(spills).filter((n) => n.startsWith(SPILL_PREFIX)).length, 1);
    // A folder whose owner still runs (this process) is reported, not removed.
    const mine = join(spills, `${SPILL_PREFIX}mine`);
    mkdirSync(mine);
    writeFileSync(join(mine, "owner.json"), JSON.stringify({ pid: process.pid, host: hostname() }));
    const found = await sweepStaleSpills(spills);
    assert.deepEqual(found.map((f) => f.removed).sort(), [false, true]);
    assert.ok((found.find((f) => f.removed)?.bytes ?? 0) > 0);
    assert.deepEqual(readdirSync(spills), [`${SPILL_PREFIX}mine`]);

    const interrupted = startKilled(join(dir, "b"), join(dir, "tmp2"), "remove");
    await interrupted.ready;
    interrupted.child.kill("SIGINT");
    assert.equal(await interrupted.exited, 130);
    assert.deepEqual(readdirSync(join(dir, "tmp2")), []);
    await assert.rejects(openReader(new FolderStore(join(dir, "b"))), { _tag: "IncompleteError" });
  } finally {
    cleanup();
  }
});

test("byte-addressable arrays stream into a folder piece by piece, as writeStore's objects", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const indptr = Int32Array.of(0, 3, 3, 6);
    const indices = Int32Array.of(0, 2, 5, 1, 2, 3);
    const data = Float32Array.of(1.5, -2, 3, 4, 5, 0.25);
    const rows = layoutFromCompressed({ format: "csr", shape: [3, 6], indptr, indices, data });
    const { coords, values } = coordsOfLayout(rows);
    const reference = new MemoryStore();
    await writeStore(reference, [rows, layoutFromCoords([3, 6], coords, values, 1)], {
      byteAddressable: true,
    });
    const folder = new FolderStore(join(dir, "out"));
    const spill = await FileSpill.create(join(dir, "tmp"));
    const block = { nRows: 3, indptr, indices, data };
    await writeStoreFromRows(withFileParts(folder, join(dir, "out")), [block], {
      shape: [3, 6],
      byteAddressable: true,
      spill,
    });
    for (const [key, bytes] of reference.objects) {
      const written = await folder.get(key);
      assert.ok(written && Buffer.from(bytes).equals(Buffer.from(written)), key);
    }
    assert.deepEqual(readdirSync(join(dir, "tmp")), []);
  } finally {
    cleanup();
  }
});

test("a failed write drops the objects it was streaming: no partial file, no object under the key", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const out = join(dir, "out");
    const block = {
      nRows: 2,
      indptr: Int32Array.of(0, 2, 3),
      indices: Int32Array.of(0, 4, 1),
      data: Int32Array.of(5, 6, 7),
    };
    // The declared count is wrong: axis 0's data and indices stream straight into their objects
    // (byte-addressable, length known), and the mismatch is found at the end.
    await assert.rejects(
      writeStoreFromRows(withFileParts(new FolderStore(out), out), [block], {
        shape: [2, 5],
        axes: [0],
        byteAddressable: true,
        nnz: 4,
        spill: await FileSpill.create(join(dir, "tmp")),
      }),
      /4 were declared/,
    );
    const left = readdirSync(out, { recursive: true }).map(String);
    assert.deepEqual(
      left.filter((name) => name.includes("sporadik-part") || name.endsWith("c/0")),
      [],
    );
    await assert.rejects(openReader(new FolderStore(out)), { _tag: "IncompleteError" });
  } finally {
    cleanup();
  }
});

/** Run `body` with the durability calls recorded (and passed on to the real ones unless `system` says otherwise). */
async function withRecordedSyncs(
  system: boolean | undefined,
  body: (calls: { fileSystems: string[][]; files: string[] }) => Promise<void>,
): Promise<void> {
  const real = { ...durability };
  const calls = { fileSystems: [] as string[][], files: [] as string[] };
  durability.fileSystems = async (folders) => {
    calls.fileSystems.push([...folders].sort());
    return system ?? real.fileSystems(folders);
  };
  durability.file = async (path) => {
    calls.files.push(path);
    return real.file(path);
  };
  try {
    await body(calls);
  } finally {
    Object.assign(durability, real);
  }
}

test("deferred files: one file-system sync for many small files, a large one synced on its own", {
  skip: !syncfsReportsErrors() && "syncfs reports write-back errors only on Linux 5.8 and later",
}, async () => {
  const { dir, cleanup } = tempDir();
  try {
    await withRecordedSyncs(undefined, async (calls) => {
      const out = join(dir, "out");
      const files = withFileParts(new FolderStore(out), out, { deferSync: true });
      for (let i = 0; i < 100; i++) await files.set(`/a/c/${i}`, Uint8Array.of(i));
      await files.set("/b/c/0", new Uint8Array(1 << 20));
      await files.flush();
      // The large file alone was synced by itself; the 100 small ones and the folders by one pass,
      // given one folder of the file system (each more would only flush the device again).
      assert.deepEqual(calls.files, [join(out, "b/c/0")]);
      assert.equal(calls.fileSystems.length, 1);
      assert.equal(calls.fileSystems[0]?.length, 1);
      assert.ok([join(out, "a/c"), join(out, "b/c")].includes(calls.fileSystems[0]?.[0] as string));
      // A flush with nothing written does nothing.
      await files.flush();
      assert.equal(calls.fileSystems.length, 1);

      // Few files: a sync each (a file-system sync also waits for everyone else's data).
      const few = join(dir, "few");
      const some = withFileParts(new FolderStore(few), few, { deferSync: true });
      for (let i = 0; i < 5; i++) await some.set(`/a/c/${i}`, Uint8Array.of(i));
      calls.files.length = 0;
      await some.flush();
      assert.equal(calls.fileSystems.length, 1);
      assert.deepEqual(
        calls.files.sort(),
        [...[0, 1, 2, 3, 4].map((i) => join(few, `a/c/${i}`)), join(few, "a/c")].sort(),
      );

      // Asked not to: one by one.
      const apart = join(dir, "apart");
      const each = withFileParts(new FolderStore(apart), apart, { deferSync: true, syncFileSystem: false });
      for (let i = 0; i < 100; i++) await each.set(`/a/c/${i}`, Uint8Array.of(i));
      await each.flush();
      assert.equal(calls.fileSystems.length, 1);
      // Every file (some in the background, as they piled up) and the folder.
      assert.equal(new Set(calls.files.filter((path) => path.startsWith(apart))).size, 101);
    });
  } finally {
    cleanup();
  }
});

test("a file-system sync starts in the background every EARLY_SYNC_EVERY files; the flush still syncs, and after a failed one syncs every file", {
  skip: !syncfsReportsErrors() && "syncfs reports write-back errors only on Linux 5.8 and later",
}, async () => {
  const { dir, cleanup } = tempDir();
  const real = { ...durability };
  try {
    for (const earlyWorks of [true, false]) {
      const systems: boolean[] = [];
      const files: string[] = [];
      // Recorded, not done: the first (background) sync answers `earlyWorks`, the later ones succeed.
      durability.fileSystems = async () => {
        systems.push(systems.length === 0 ? earlyWorks : true);
        return systems.at(-1) as boolean;
      };
      durability.file = async (path) => {
        files.push(path);
      };
      const out = join(dir, `out-${earlyWorks}`);
      const store = withFileParts(new FolderStore(out), out, { deferSync: true });
      for (let i = 0; i < EARLY_SYNC_EVERY + 10; i++) await store.set(`/a/c/${i}`, Uint8Array.of(i));
      await store.flush();
      if (earlyWorks) {
        // The background one, then the flush's own (the files after it were not covered).
        assert.deepEqual(systems, [true, true]);
        assert.deepEqual(files, []);
      } else {
        // It said a write-back failed, and says it once: the flush finds out which file, one by one.
        assert.deepEqual(systems, [false]);
        assert.equal(new Set(files).size, EARLY_SYNC_EVERY + 11, "every file and the folder");
      }
    }
  } finally {
    Object.assign(durability, real);
    cleanup();
  }
});

test("a file-system sync that fails falls back to a sync per file, which says which file failed", async () => {
  const { dir, cleanup } = tempDir();
  try {
    await withRecordedSyncs(false, async (calls) => {
      const out = join(dir, "out");
      const files = withFileParts(new FolderStore(out), out, { deferSync: true });
      for (let i = 0; i < 100; i++) await files.set(`/a/c/${i}`, Uint8Array.of(i));
      await files.flush();
      // Every file, then the folder.
      assert.equal(calls.files.length, 101);
      assert.equal(calls.files.at(-1), join(out, "a/c"));

      for (let i = 100; i < 200; i++) await files.set(`/a/c/${i}`, Uint8Array.of(i));
      rmSync(join(out, "a/c/150"));
      await assert.rejects(files.flush(), (error: Error & { object?: string }) => {
        assert.match(error.message, /syncing .*a\/c\/150 to disk failed/);
        assert.equal(error.object, join(out, "a/c/150"));
        return true;
      });
    });
  } finally {
    cleanup();
  }
});

test("a file removed before the file-system sync fails the flush, and so the write: no block", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const out = join(dir, "out");
    const parts = withFileParts(new FolderStore(out), out, { deferSync: true });
    const store = {
      ...parts,
      set: async (key: string, value: Uint8Array) => {
        await parts.set(key, value);
        // The first chunk of axis 0's data vanishes as soon as it is written.
        if (key === "/layouts/axis0/data/c/0") rmSync(join(out, "layouts/axis0/data/c/0"));
      },
    };
    // 200 chunks of 2 values: past the number of files from which the flush syncs the file system.
    const n = 400;
    const m = {
      nRows: n,
      indptr: Int32Array.from({ length: n + 1 }, (_, r) => r),
      indices: new Int32Array(n),
      data: Int32Array.from({ length: n }, (_, i) => i + 1),
    };
    await assert.rejects(
      writeStoreFromRows(store, [m], { shape: [n, 1], axes: [0], chunk: 2 }),
      (error: Error & { object?: string }) => {
        assert.match(error.message, /syncing .*layouts\/axis0\/data\/c\/0 to disk failed/);
        return true;
      },
    );
    await assert.rejects(openReader(new FolderStore(out)), { _tag: "IncompleteError" });
  } finally {
    cleanup();
  }
});

test("a background sync that fails fails the flush, and so the write: no block", async () => {
  const { dir, cleanup } = tempDir();
  try {
    const out = join(dir, "out");
    const files = withFileParts(new FolderStore(out), out, { deferSync: true });
    // The first file is gone before its batch of 16 is handed to the background syncs: its sync
    // fails there, and the flush the writer awaits before its block must say so.
    await files.set("/a/c/0", Uint8Array.of(1));
    rmSync(join(out, "a/c/0"));
    for (let i = 1; i < 40; i++) await files.set(`/a/c/${i}`, Uint8Array.of(i));
    await assert.rejects(files.flush(), (error: Error & { object?: string }) => {
      assert.match(error.message, /syncing .*a\/c\/0 to disk failed/);
      assert.equal(error.object, join(out, "a/c/0"));
      return true;
    });

    // Through the writer: a flush failing in the background leaves the store without a block.
    const out2 = join(dir, "out2");
    const parts = withFileParts(new FolderStore(out2), out2, { deferSync: true });
    const store = {
      ...parts,
      set: async (key: string, value: Uint8Array) => {
        await parts.set(key, value);
        // The first chunk of axis 0's data vanishes as soon as it is written.
        if (key === "/layouts/axis0/data/c/0") rmSync(join(out2, "layouts/axis0/data/c/0"));
      },
    };
    const m = {
      nRows: 40,
      indptr: Int32Array.from({ length: 41 }, (_, r) => r),
      indices: new Int32Array(40),
      data: Int32Array.from({ length: 40 }, (_, i) => i + 1),
    };
    await assert.rejects(
      writeStoreFromRows(store, [m], { shape: [40, 1], axes: [0], chunk: 2 }),
      /syncing .* to disk failed/,
    );
    await assert.rejects(openReader(new FolderStore(out2)), { _tag: "IncompleteError" });
  } finally {
    cleanup();
  }
});
