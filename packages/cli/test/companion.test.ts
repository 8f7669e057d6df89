/**
 * `convert --sporadik`: the dataset plus a sporadik companion of the same counts, named in the
 * manifest, checked by `validate`; read back here through both readers and compared value by value.
 * It is written in the tiles' pass, from the same cells: byte for byte what a conversion of the
 * finished dataset writes (`convert DATASET --format sporadik --checksums`), for one input and for
 * an atlas; and a conversion stopped in that pass leaves the target as it was. `append --sporadik`
 * writes it again under a writer lock that names the append.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { openDataset } from "@deltacells/core/node";
import { openArrayReader } from "@deltacells/sporadik/node";
import { openStore } from "@deltacells/storage/node";
import { assertSameFiles, COMMAND_ARGS, cli, filesUnder, REPO, type Run, tempDir } from "./cli-helpers.js";

const H5 = join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix.h5");
let dir: string;
let out: string;

before(async () => {
  dir = tempDir();
  out = join(dir, "chr21");
  const r = await cli("convert", H5, out, "--sporadik", "--quiet", "--threads", "1", "--json");
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { sporadik: { path: string } }).sporadik.path, "sporadik");
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

test("the manifest names the companion, which holds the dataset's counts in the source's gene order", async () => {
  const ds = await openDataset(out);
  assert.equal(ds.manifest.metadata.sporadik, "sporadik");
  const array = await openArrayReader(openStore(join(out, "sporadik")));
  assert.deepEqual([...array.shape], [ds.nCells, ds.nGenes]);
  const order = (await ds.geneOrder())!;
  const rows = await ds.cells(0, ds.nCells);
  // Every nonzero of the tiles, at (cell, source column), against the companion's CSC slices.
  const expected = new Map<string, number>();
  for (let c = 0; c < ds.nCells; c++) {
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++) {
      expected.set(`${c},${order[rows.indices[k]!]}`, Number(rows.data[k]));
    }
  }
  let seen = 0;
  const all = await array.slicesAt(
    Array.from({ length: ds.nGenes }, (_, j) => j),
    { axis: 1 },
  );
  for (let g = 0; g < ds.nGenes; g++) {
    for (let k = Number(all.indptr[g]); k < Number(all.indptr[g + 1]); k++) {
      assert.equal(
        Number(all.data[k]),
        expected.get(`${all.indices[k]},${g}`),
        `cell ${all.indices[k]} gene ${g}`,
      );
      seen++;
    }
  }
  assert.equal(seen, expected.size);
});

test("validate checks the companion: valid, then a torn one is named", async () => {
  const ok = await cli("validate", out);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /sporadik companion valid/);
  const block = join(out, "sporadik/zarr.json");
  const saved = readFileSync(block);
  rmSync(block);
  try {
    const torn = await cli("validate", out);
    assert.equal(torn.code, 1);
    assert.match(torn.stdout, /sporadik companion at "sporadik", which cannot be read/);
  } finally {
    writeFileSync(block, saved);
  }
});

test("--sporadik with --format sporadik is a usage error", async () => {
  const r = await cli("convert", H5, join(dir, "x.zarr"), "--format", "sporadik", "--sporadik");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sporadik applies to --format deltacells only/);
});

/** The zstd configuration of every array's zarr.json in the store at `root`. */
function zstdOf(root: string): unknown[] {
  return ["axis0", "axis1"].flatMap((layout) =>
    ["data", "indices", "indptr", "maxima"].map((name) => {
      const meta = JSON.parse(readFileSync(join(root, "layouts", layout, name, "zarr.json"), "utf8"));
      return meta.codecs[1].configuration;
    }),
  );
}

test("the companion carries zstd's content checksum in every chunk by default, and --no-checksums leaves it out", async () => {
  for (const configuration of zstdOf(join(out, "sporadik")))
    assert.deepEqual(configuration, { level: 0, checksum: true });
  const plain = join(dir, "plain");
  const r = await cli(
    "convert",
    H5,
    plain,
    "--sporadik",
    "--no-checksums",
    "--quiet",
    "--threads",
    "1",
    "--json",
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { sporadik: { checksums: boolean } }).sporadik.checksums, false);
  for (const configuration of zstdOf(join(plain, "sporadik")))
    assert.deepEqual(configuration, { level: 0, checksum: false });
});

/** The companion of the dataset at `ds` against what converting the dataset itself writes. */
async function assertCompanionIsTheDatasetsConversion(ds: string): Promise<void> {
  const again = join(tempDir(), "from-dataset.zarr");
  const r = await cli(
    "convert",
    ds,
    again,
    "--format",
    "sporadik",
    "--checksums",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(r.code, 0, r.stderr);
  assertSameFiles(again, join(ds, "sporadik"));
}

test("the companion written in the tiles' pass holds the bytes a conversion of the finished dataset writes", async () => {
  await assertCompanionIsTheDatasetsConversion(out);
});

test("an atlas's companion (inputs with other genes, matched by name) holds the bytes a conversion of the finished atlas writes", async () => {
  const atlas = join(tempDir(), "atlas");
  const r = await cli(
    "convert",
    H5,
    join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad"),
    join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix"),
    atlas,
    "--source-names",
    "h5,pbmc,mtx",
    "--sporadik",
    "--quiet",
    "--threads",
    "1",
    "--json",
  );
  assert.equal(r.code, 0, r.stderr);
  const ds = await openDataset(atlas);
  assert.equal(ds.manifest.metadata.sporadik, "sporadik");
  assert.equal(ds.nCells, 1107 + 700 + 1107);
  await assertCompanionIsTheDatasetsConversion(atlas);
  const valid = await cli("validate", atlas);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
});

const MOUSE = join(REPO, "data/mouse-10k-subset/10x-10k-subset.zarr");
const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");

/**
 * `convert MOUSE OUT --sporadik ...` as a child process, stopped (SIGSTOP) at its first progress
 * line whose phase `stopAt` accepts; `look` runs while it is stopped, then it is interrupted
 * (SIGINT, when `interrupt`) and continued.
 */
function stoppedAt(
  target: string,
  extra: string[],
  stop: { at: (phase: string) => boolean; interrupt: boolean },
  look: () => void,
): Promise<Run> {
  return stoppedRun(["convert", MOUSE, target, "--sporadik", "--threads", "1", ...extra], stop, look);
}

/** `deltacells ARGS...` as a child process, stopped as {@link stoppedAt} says. */
async function stoppedRun(
  args: string[],
  stop: { at: (phase: string) => boolean; interrupt: boolean },
  look: () => void,
): Promise<Run> {
  const child = spawn(process.execPath, [...COMMAND_ARGS, ...args], {
    cwd: REPO,
    env: { ...process.env, DELTACELLS_STDERR: "json" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout!.on("data", (d) => (stdout += d));
  const done = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
  const other: string[] = [];
  let stopped = false;
  for await (const line of createInterface({ input: child.stderr! })) {
    const progress = line.startsWith("{")
      ? (JSON.parse(line) as { progress?: { phase: string } }).progress
      : undefined;
    if (progress === undefined) other.push(line);
    else if (stop.at(progress.phase) && !stopped) {
      child.kill("SIGSTOP");
      stopped = true;
      try {
        look();
      } finally {
        if (stop.interrupt) child.kill("SIGINT");
        child.kill("SIGCONT");
      }
    }
  }
  assert.ok(stopped, "the phase was reported");
  return { code: await done, stdout, stderr: other.join("\n") };
}

/** Stopped in the tiles' pass, while the companion is written from the same cells, and interrupted. */
const inTilesPass = { at: (phase: string) => phase === "pass 2", interrupt: true };
/** Stopped as soon as the dataset's two passes are over, and let go on. */
const pastTilesPass = { at: (phase: string) => phase !== "pass 1" && phase !== "pass 2", interrupt: false };

/** The staging folders under `dir`. */
const stagings = (dir: string) => readdirSync(dir).filter((n) => n.startsWith(".deltacells-staging-"));

test("a conversion interrupted while its companion is written leaves nothing named: no manifest, no staging, no lock", async () => {
  const target = join(tempDir(), "ds");
  const r = await stoppedAt(target, [], inTilesPass, () => {
    assert.ok(!existsSync(join(target, "manifest.json")), "no dataset is in place during the pass");
    const [staging] = stagings(target);
    assert.ok(
      staging && existsSync(join(target, staging, "sporadik")),
      "the companion is written under the staging prefix",
    );
  });
  assert.equal(r.code, 130, r.stderr);
  assert.match(r.stderr, /stopped before the new data was complete/);
  assert.deepEqual(readdirSync(target), [], "the staging and the lock are gone");
});

test("an --overwrite conversion interrupted while its companion is written leaves the old dataset and its companion as they were", async () => {
  const target = join(tempDir(), "ds");
  const first = await cli("convert", H5, target, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(first.code, 0, first.stderr);
  const before = filesUnder(target);
  const r = await stoppedAt(target, ["--overwrite"], inTilesPass, () => {
    assert.ok(filesUnder(target).get("manifest.json")!.equals(before.get("manifest.json")!));
  });
  assert.equal(r.code, 130, r.stderr);
  assert.match(r.stderr, /is as it was/);
  const after = filesUnder(target);
  assert.deepEqual([...after.keys()], [...before.keys()]);
  for (const [k, v] of before) assert.ok(v.equals(after.get(k)!), `${k} changed`);
  const valid = await cli("validate", target);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
  assert.match(valid.stdout, /sporadik companion valid/);
});

test("stopped at any point past the tiles' pass, the target holds no dataset or one naming its complete companion, never a dataset without it", async () => {
  const target = join(tempDir(), "ds");
  const first = await cli("convert", H5, target, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(first.code, 0, first.stderr);
  let named: unknown;
  const r = await stoppedAt(target, ["--overwrite"], pastTilesPass, () => {
    const manifest = JSON.parse(readFileSync(join(target, "manifest.json"), "utf8")) as {
      metadata: { sporadik?: string };
    };
    named = manifest.metadata.sporadik;
    assert.ok(existsSync(join(target, "sporadik/zarr.json")), "the named companion has its block");
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(named, "sporadik", "the dataset in place named its companion");
  const valid = await cli("validate", target);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);
});

test("append --sporadik's writer lock on the companion it writes again names deltacells append", async () => {
  const target = join(tempDir(), "ds");
  const first = await cli("convert", PBMC, target, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(first.code, 0, first.stderr);
  // The same cells under other names, twice: a companion of three times the cells, so that it is
  // still being written when the test has stopped the command (the lock goes when it is complete).
  const again = [1, 2].map((i) => join(tempDir(), `pbmc-${i}.h5ad`));
  for (const copy of again) copyFileSync(PBMC, copy);
  let holder: { command?: string } | undefined;
  // Stopped once the companion's cells are written (the append's own phases are scan, tiles and
  // move), before its genes.
  const r = await stoppedRun(
    ["append", target, ...again, "--sporadik", "--no-sporadik-rows", "--threads", "1"],
    { at: (phase) => phase === "cells", interrupt: false },
    () => {
      holder = JSON.parse(readFileSync(join(target, "sporadik", ".deltacells-lock"), "utf8"));
    },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(holder?.command, "deltacells append");
  assert.ok(!existsSync(join(target, "sporadik", ".deltacells-lock")), "released when done");
});
