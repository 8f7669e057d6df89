/**
 * Two conversions into one OUTPUT never both run (the writer lock), a lock left by a killed
 * conversion is reported and can be broken, and what killed writers leave (temporary files,
 * staging folders, the lock) is cleaned by the next conversion and reported by validate.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from "node:fs";
import { mkdir, readdir, readFile, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { COMMAND_ARGS, cli, REPO, type Run, tempDir } from "./cli-helpers.js";

const INPUT = "data/anndata/csr.h5ad";

/** `deltacells ARGS...` as a child process we can stop, continue and kill. */
function start(...args: string[]): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [...COMMAND_ARGS, ...args], {
    cwd: REPO,
    env: { ...process.env, DELTACELLS_DEBUG: "" },
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<Run>((ok) =>
    child.on("close", (code) => ok({ code: code ?? -1, stdout, stderr })),
  );
  return { child, done };
}

/**
 * A 10x folder whose barcodes.tsv.gz is a FIFO: a conversion reads it once, after taking its
 * lock, and cannot finish until `release()` writes the barcodes. `reading()` waits until the
 * conversion has opened it (its lock is then held, fully written); `close()` ends the FIFO after a
 * conversion that was killed instead.
 */
function gatedInput(): { dir: string; reading(): Promise<void>; release(): void; close(): void } {
  const from = join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix");
  const dir = join(tempDir(), "gated");
  mkdirSync(dir);
  for (const name of ["matrix.mtx.gz", "features.tsv.gz"]) copyFileSync(join(from, name), join(dir, name));
  const fifo = join(dir, "barcodes.tsv.gz");
  execFileSync("mkfifo", [fifo]);
  let fd: number | undefined;
  return {
    dir,
    async reading() {
      // Opening a FIFO to write without blocking fails (ENXIO) until a reader has it open.
      while (fd === undefined) {
        try {
          fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENXIO") throw err;
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    },
    release() {
      // A few KB: within the pipe's buffer, so the write completes whatever the reader does.
      writeSync(fd as number, readFileSync(join(from, "barcodes.tsv.gz")));
      this.close();
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

test("a second convert into the same OUTPUT is refused while the first runs; the first completes", async () => {
  const out = join(tempDir(), "ds");
  const lock = join(out, ".deltacells-lock");
  // The first blocks on its input's barcodes with the lock held: the second really runs while
  // the first is mid-conversion, however fast the machine.
  const input = gatedInput();
  const first = start("convert", input.dir, out, "--tile-size", "16", "--level", "1", "--quiet");
  await input.reading();
  try {
    const holder = JSON.parse(await readFile(lock, "utf8"));
    assert.equal(holder.pid, first.child.pid);
    for (const extra of [[], ["--overwrite"], ["--format", "sporadik"]]) {
      const second = await cli("convert", INPUT, out, "--quiet", ...extra);
      assert.equal(second.code, 1, second.stderr);
      assert.match(
        second.stderr,
        /error \[TargetLocked\]: .*ds is being written by deltacells convert \(pid \d+/,
      );
      assert.match(second.stderr, /That process is still running: wait for it to finish/);
      assert.match(
        second.stderr,
        new RegExp(
          `rm ${lock.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\\), or run the command again with --break-lock`,
        ),
      );
    }
  } finally {
    input.release();
  }
  const r = await first.done;
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!existsSync(lock), "the lock is removed at the end");
  const valid = await cli("validate", out);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
  assert.doesNotMatch(valid.stdout, /warning/);
});

test("a failed conversion removes its lock (and the folder it made for nothing)", async () => {
  const out = join(tempDir(), "ds");
  const r = await cli("convert", "data/anndata/negative.h5ad", out, "--quiet");
  assert.equal(r.code, 1);
  assert.ok(!existsSync(out), "nothing is left");
  const again = await cli(
    "convert",
    "data/anndata/negative.h5ad",
    join(tempDir(), "other"),
    "--format",
    "sporadik",
    "--quiet",
  );
  assert.equal(again.code, 1);
});

test("Ctrl-C (SIGINT) removes the lock", async () => {
  const out = join(tempDir(), "ds");
  const lock = join(out, ".deltacells-lock");
  // Blocked on its input with the lock held: the signal comes mid-conversion, however fast the machine.
  const input = gatedInput();
  const run = start("convert", input.dir, out, "--tile-size", "16", "--quiet");
  await input.reading();
  assert.ok(existsSync(lock));
  run.child.kill("SIGINT");
  // The handler removes the lock at once; the process exits once its blocked read returns (Node
  // waits for its I/O threads at exit), so the barcodes are written only then.
  while (existsSync(lock)) await new Promise((r) => setTimeout(r, 10));
  input.release();
  const r = await run.done;
  assert.equal(r.code, 130, r.stderr);
  assert.ok(!existsSync(lock));
});

test("Ctrl-C during an --overwrite conversion: one line says the old dataset is as it was, and the unfinished staging is gone", async () => {
  const out = join(tempDir(), "ds");
  const first = await cli("convert", "data/10x-v3-chr21/filtered_feature_bc_matrix", out, "--quiet");
  assert.equal(first.code, 0, first.stderr);
  const before = (await readdir(out, { recursive: true })).sort();
  const input = gatedInput();
  const run = start("convert", input.dir, out, "--overwrite", "--tile-size", "16", "--quiet");
  await input.reading();
  run.child.kill("SIGINT");
  while (existsSync(join(out, ".deltacells-lock"))) await new Promise((r) => setTimeout(r, 10));
  input.release();
  const r = await run.done;
  assert.equal(r.code, 130, r.stderr);
  assert.equal(
    r.stderr,
    `deltacells convert: stopped before the new data was complete: ${out} is as it was\n`,
  );
  assert.deepEqual((await readdir(out, { recursive: true })).sort(), before, "no staging folder is left");
  const valid = await cli("validate", out);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
});

test("a killed conversion's lock is reported as stale and broken with --break-lock; temp files and staging go", async () => {
  const out = join(tempDir(), "ds");
  const lock = join(out, ".deltacells-lock");
  // Blocked on its input with the lock held: killed mid-conversion, however fast the machine.
  const input = gatedInput();
  const killed = start("convert", input.dir, out, "--tile-size", "16", "--quiet");
  await input.reading();
  killed.child.kill("SIGKILL");
  await killed.done;
  input.close();
  assert.ok(existsSync(lock), "SIGKILL leaves the lock");
  // A half-written object such a writer leaves (FolderStore's temporary name), dated before the next run.
  await mkdir(join(out, "tiles"), { recursive: true });
  const temp = join(out, "tiles", "tile_000000.dct.dctmp-0123456789ab");
  await writeFile(temp, "half");
  const old = new Date(Date.now() - 60_000);
  await utimes(temp, old, old);

  const refused = await cli("convert", INPUT, out, "--quiet", "--overwrite");
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /\[TargetLocked\]/);
  assert.match(
    refused.stderr,
    new RegExp(`Process ${killed.child.pid} is no longer running on this host: the lock is stale`),
  );
  assert.ok(existsSync(temp), "nothing is touched without the lock");

  const broken = await cli(
    "convert",
    INPUT,
    out,
    "--quiet",
    "--overwrite",
    "--break-lock",
    "--tile-size",
    "16",
  );
  assert.equal(broken.code, 0, broken.stderr);
  assert.match(
    broken.stdout,
    /removed 1 temporary file left by a writer that was killed \(.*tile_000000\.dct\.dctmp-0123456789ab\)/,
  );
  assert.ok(!existsSync(temp), "the stale temporary file was removed");
  assert.ok(!existsSync(lock));
  const names = await readdir(out);
  assert.deepEqual(
    names.filter((n) => n.startsWith(".")),
    [],
    `no staging folder or lock is left: ${names.join(", ")}`,
  );
  const valid = await cli("validate", out);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
});

test("validate warns about temporary files, staging folders and a lock, and still says valid", async () => {
  const out = join(tempDir(), "ds");
  const made = await cli("convert", INPUT, out, "--tile-size", "16", "--quiet");
  assert.equal(made.code, 0, made.stderr);
  await writeFile(join(out, "tiles", "tile_000001.dct.dctmp-aaaaaaaaaaaa"), "x");
  await mkdir(join(out, ".deltacells-staging-0011223344ff", "tiles"), { recursive: true });
  await writeFile(join(out, ".deltacells-lock"), "{}");
  const r = await cli("validate", out, "--json");
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.valid, true);
  assert.deepEqual(report.warnings.map((w: { object: string }) => w.object.slice(out.length + 1)).sort(), [
    ".deltacells-lock",
    ".deltacells-staging-0011223344ff",
    "tiles/tile_000001.dct.dctmp-aaaaaaaaaaaa",
  ]);
  const text = await cli("validate", out);
  assert.match(text.stdout, /: valid \(/);
  assert.match(text.stdout, /warning: .*dctmp-aaaaaaaaaaaa: a temporary file of a write that never finished/);
  assert.ok((await stat(out)).isDirectory());
});

test("Ctrl-C removes the lock even when another SIGINT listener ends the process at once (the sporadik writer's temporary folder does)", async () => {
  const out = join(tempDir(), "ds");
  // The lock taken, then a listener registered after it that exits synchronously, as
  // FileSpill's removeOnSignal does: the lock's own asynchronous removal never gets to finish.
  const script = `
    import { acquireWriterLock } from ${JSON.stringify(join(REPO, "packages/deltacells/src/target/writer-lock.ts"))};
    import { Locations } from ${JSON.stringify(join(REPO, "packages/cli/src/locations.ts"))};
    await acquireWriterLock(new Locations().open(${JSON.stringify(out)}), ${JSON.stringify(out)}, { folder: ${JSON.stringify(out)}, releaseOnSignal: true });
    process.once("SIGINT", () => process.exit(130));
    process.stdout.write("locked\\n");
    setInterval(() => {}, 1000);
  `;
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=source", "--input-type=module", "-e", script],
    { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve) => child.stdout!.on("data", () => resolve()));
  assert.ok(existsSync(join(out, ".deltacells-lock")));
  child.kill("SIGINT");
  assert.equal(await exited, 130);
  assert.ok(!existsSync(join(out, ".deltacells-lock")), "the lock outlived the interrupted conversion");
});
