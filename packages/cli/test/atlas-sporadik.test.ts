/**
 * An atlas built across machines with `finalize --sporadik`: its companion, statistics and rows in
 * embedding order are the bytes a one-process `convert A B OUT --sporadik` writes; a finalize that
 * fails while writing the companion leaves a complete dataset naming none of them, and run again
 * completes it; a part the manifest names complete is kept, the others written.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { assertSameFiles, COMMAND_ARGS, cli, filesUnder, REPO, tempDir } from "./cli-helpers.js";

const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
const SMALL = ["--tile-size", "64", "--obs-tiles-per-file", "2", "--level", "3"];
const dir = tempDir();
/** A second input: the same cells under another name (its genes and X_umap the first's). */
const AGAIN = join(dir, "pbmc-again.h5ad");
copyFileSync(PBMC, AGAIN);
const INPUTS = [PBMC, AGAIN];

let reference: string | undefined;
/** The one-process conversion of INPUTS with --sporadik (made once). */
async function once(): Promise<string> {
  if (reference) return reference;
  const out = join(dir, "once");
  const r = await cli("convert", ...INPUTS, out, ...SMALL, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /rows in embedding order \(X_umap_0\/X_umap_1\)/);
  reference = out;
  return out;
}

/** The plan of INPUTS at `out` and its three tasks, run: what finalize completes. */
async function planned(out: string): Promise<void> {
  assert.equal((await cli("plan", ...INPUTS, out, "--tasks", "3", ...SMALL)).code, 0);
  for (const t of ["0", "1", "2"]) {
    const r = await cli("convert", "--plan", out, "--task", t, "--threads", "1");
    assert.equal(r.code, 0, r.stderr);
  }
}

function metadata(out: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")).metadata;
}

test("plan + tasks + finalize --sporadik writes the companion, statistics and rows of the one-process convert --sporadik, byte for byte", async () => {
  const out = join(dir, "steps");
  await planned(out);
  const f = await cli("finalize", out, "--sporadik", "--threads", "1", "--json");
  assert.equal(f.code, 0, f.stderr);
  const json = JSON.parse(f.stdout);
  assert.equal(json.finalized, true);
  assert.equal(json.sporadik.path, "sporadik");
  assert.equal(json.statistics.path, "stats");
  assert.deepEqual(json.sporadik_rows.embedding, ["X_umap_0", "X_umap_1"]);
  assert.deepEqual(json.kept, []);
  assertSameFiles(await once(), out);
  const v = await cli("validate", out);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /sporadik companion valid; statistics valid; rows in embedding order valid/);
});

test("finalize --sporadik failing in the companion leaves the complete dataset naming none of them; run again, it completes them", async () => {
  const out = join(dir, "cut");
  await planned(out);
  // A fault halfway through the companion: the staged store is moved into sporadik/ object by
  // object, and its genes-contiguous layout's first chunk cannot be (a folder in its place).
  const inTheWay = join(out, "sporadik/layouts/axis1/data/c/0");
  mkdirSync(inTheWay, { recursive: true });
  writeFileSync(join(inTheWay, "in-the-way"), "");
  const failed = await cli("finalize", out, "--sporadik", "--threads", "1");
  assert.equal(failed.code, 1, failed.stdout + failed.stderr);
  assert.match(
    failed.stderr,
    /layouts\/axis1\/data\/c\/0.* The atlas at \S+cut is finalized \(its manifest\.json is written\) without the parts not named complete yet; once that is fixed, run `deltacells finalize \S+cut --sporadik` again to write them\./,
  );
  const named = metadata(out);
  assert.equal(named.sporadik, undefined, "the unfinished companion is not named");
  assert.equal(named.stats, undefined);
  assert.equal(named.sporadik_rows, undefined);
  const v = await cli("validate", out, "--quiet");
  assert.equal(v.code, 0, `the dataset is complete: ${v.stdout}${v.stderr}`);

  rmSync(inTheWay, { recursive: true });
  const again = await cli("finalize", out, "--sporadik", "--threads", "1");
  assert.equal(again.code, 0, again.stderr);
  assert.match(
    again.stdout,
    /is finalized already \(it has its manifest\.json\); completed what it lacked in .*\n {2}sporadik companion: .*\n {2}statistics: .*\n {2}rows in embedding order/,
  );
  assertSameFiles(await once(), out);
});

test("finalize --sporadik killed (SIGKILL) while writing the companion leaves the complete dataset naming none of it; run again with --break-lock, it completes it", async () => {
  const out = join(dir, "killed");
  await planned(out);
  const child = spawn(process.execPath, [...COMMAND_ARGS, "finalize", out, "--sporadik", "--threads", "1"], {
    cwd: REPO,
    env: { ...process.env, DELTACELLS_STDERR: "json" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const ended = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("close", (_, signal) => resolve(signal)),
  );
  let killedIn: string | undefined;
  for await (const line of createInterface({ input: child.stderr! })) {
    const phase = line.startsWith("{")
      ? (JSON.parse(line) as { progress?: { phase: string } }).progress?.phase
      : undefined;
    // The companion's genes-contiguous layout: its cells-contiguous one is written, its block not.
    if (phase === "genes" && killedIn === undefined) {
      killedIn = phase;
      child.kill("SIGKILL");
    }
  }
  assert.equal(await ended, "SIGKILL", "killed while writing the companion");
  const named = metadata(out);
  assert.equal(named.sporadik, undefined, "the unfinished companion is not named");
  assert.equal(named.stats, undefined);
  assert.ok(existsSync(join(out, ".deltacells-lock")), "a killed run leaves its lock");
  const locked = await cli("finalize", out, "--sporadik", "--threads", "1");
  assert.equal(locked.code, 1, locked.stdout);
  assert.match(locked.stderr, /\[TargetLocked\].*--break-lock/);
  // The dataset's lock removed by hand, the companion's is left: its refusal names the killed finalize.
  rmSync(join(out, ".deltacells-lock"));
  const companionLocked = await cli("finalize", out, "--sporadik", "--threads", "1");
  assert.equal(companionLocked.code, 1, companionLocked.stdout);
  assert.match(
    companionLocked.stderr,
    /TargetLocked.*killed\/sporadik is being written by deltacells finalize \(pid \d+ .*is no longer running/,
  );
  const again = await cli("finalize", out, "--sporadik", "--break-lock", "--threads", "1");
  assert.equal(again.code, 0, again.stderr);
  assertSameFiles(await once(), out);
});

test("finalize --sporadik run again keeps the parts the manifest names complete and writes the others", async () => {
  const out = join(dir, "again");
  await planned(out);
  assert.equal((await cli("finalize", out, "--sporadik", "--threads", "1")).code, 0);
  const companionChunk = join(out, "sporadik/layouts/axis0/data/c/0");
  const written = statSync(companionChunk).mtimeMs;
  const before = filesUnder(out);

  const nothing = await cli("finalize", out, "--sporadik", "--threads", "1");
  assert.equal(nothing.code, 0, nothing.stderr);
  assert.match(
    nothing.stdout,
    /nothing to do\n {2}kept the sporadik companion, the statistics and the rows in embedding order: named in the manifest and complete/,
  );
  assert.equal(statSync(companionChunk).mtimeMs, written, "the companion is not written again");

  // As a finalize cut once the companion was named: the statistics and the rows not named yet.
  const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
  delete manifest.metadata.stats;
  delete manifest.metadata.sporadik_rows;
  writeFileSync(join(out, "manifest.json"), `${JSON.stringify(manifest)}\n`);
  const rest = await cli("finalize", out, "--sporadik", "--threads", "1", "--json");
  assert.equal(rest.code, 0, rest.stderr);
  const json = JSON.parse(rest.stdout);
  assert.deepEqual(json.kept, ["companion"]);
  assert.equal(json.sporadik, undefined);
  assert.equal(json.statistics.path, "stats");
  assert.equal(statSync(companionChunk).mtimeMs, written, "the companion is not written again");
  const after = filesUnder(out);
  assert.deepEqual([...after.keys()], [...before.keys()]);
  for (const [k, v] of before) assert.ok(v.equals(after.get(k)!), `${k} differs`);
});

test("finalize's companion options apply with --sporadik only", async () => {
  const out = join(dir, "options");
  for (const [flag, message] of [
    ["--sporadik-rows", /--sporadik-rows applies with --sporadik only/],
    ["--no-checksums", /--no-checksums applies with --sporadik only/],
  ] as const) {
    const r = await cli("finalize", out, flag);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
  }
});
