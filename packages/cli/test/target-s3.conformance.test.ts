/** `convert` onto an s3:// prefix that already holds a dataset: refused, or replaced without losing the old one on the way. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { validateDataset } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";
import { openStore } from "@deltacells/storage/node";
import { FaultProxy } from "../../storage/test/helpers/fault-proxy.js";
import { COMMAND_ARGS, REPO } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "deltacells-cli-target";
const deltacellsS3 = motoBucket(BUCKET);
const SMALL = "data/anndata/csr.h5ad"; // 57 cells x 41 genes
const SLOW = "data/mouse-10k-subset/10x-10k-subset.zarr"; // 10,000 cells: seconds at --level 22 with 64-cell tiles

test("an s3:// dataset survives a refused convert and a killed --overwrite, then is replaced by a store with nothing stale", async () => {
  const url = `s3://${BUCKET}/ds`;
  const store = openStore(url, { env: deltacellsS3.env() });
  const first = await deltacellsS3("convert", SMALL, url, "--tile-size", "16", "--level", "3");
  assert.equal(first.code, 0, first.stderr);
  const manifest = await store.get("manifest.json");
  const intact = async () => {
    assert.deepEqual(await store.get("manifest.json"), manifest);
    const report = await validateDataset(await openDataset(store));
    assert.deepEqual(report.problems, []);
    assert.equal(report.tilesChecked, 4);
  };

  const refused = await deltacellsS3("convert", SMALL, url, "--format", "sporadik");
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /already holds a deltacells dataset/);
  await intact();

  const child = spawn(
    process.execPath,
    [...COMMAND_ARGS, "convert", SLOW, url, "--overwrite"].concat([
      "--tile-size",
      "64",
      "--level",
      "22",
      "--threads",
      "1",
    ]),
    { cwd: REPO, stdio: "ignore", env: { ...process.env, ...deltacellsS3.env() } },
  );
  const exited = new Promise<number | null>((ok) => child.on("exit", (code) => ok(code)));
  let staged = 0;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && child.exitCode === null) {
    staged = (await store.list(".deltacells-staging-")).filter((k) => k.includes("/tiles/")).length;
    if (staged >= 5) break;
    await new Promise((ok) => setTimeout(ok, 20));
  }
  child.kill("SIGKILL");
  assert.equal(await exited, null, "the converter was killed, not finished");
  assert.ok(staged >= 5, `new tiles were being written when it was killed (${staged})`);
  await intact();

  // The killed run's lock (a create-only PUT) refuses the next one until broken.
  assert.ok((await store.get(".deltacells-lock")) !== undefined, "SIGKILL leaves the lock");
  const args = ["convert", SMALL, url, "--format", "sporadik", "--axes", "1", "--overwrite"];
  const locked = await deltacellsS3(...args);
  assert.equal(locked.code, 1);
  assert.match(
    locked.stderr,
    /\[TargetLocked\].*the lock is stale.*aws s3 rm s3:\/\/deltacells-cli-target\/ds\/\.deltacells-lock\), or run the command again with --break-lock/,
  );
  const replaced = await deltacellsS3(...args, "--break-lock");
  assert.equal(replaced.code, 0, replaced.stderr);
  const keys = await store.list();
  assert.ok(keys.includes("zarr.json"));
  assert.deepEqual(
    keys.filter((k) => !k.startsWith("layouts/axis1/") && k !== "layouts/zarr.json" && k !== "zarr.json"),
    [],
    "no manifest, tile, gene file or staged object is left",
  );
  const v = await deltacellsS3("validate", url);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});

test("a second convert into an s3:// prefix is refused while the first holds the lock (If-None-Match: *)", async () => {
  const url = `s3://${BUCKET}/locked`;
  const store = openStore(url, { env: deltacellsS3.env() });
  const child = spawn(
    process.execPath,
    [...COMMAND_ARGS, "convert", SMALL, url, "--tile-size", "16", "--quiet"],
    { cwd: REPO, stdio: "ignore", env: { ...process.env, ...deltacellsS3.env() } },
  );
  const exited = new Promise<number | null>((ok) => child.on("exit", (code) => ok(code)));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && (await store.get(".deltacells-lock")) === undefined)
    await new Promise((ok) => setTimeout(ok, 20));
  child.kill("SIGSTOP");
  try {
    const second = await deltacellsS3("convert", SMALL, url, "--tile-size", "16", "--quiet");
    assert.equal(second.code, 1);
    assert.match(
      second.stderr,
      /\[TargetLocked\]: s3:\/\/deltacells-cli-target\/locked is being written by /,
    );
    assert.match(second.stderr, /That process is still running/);
  } finally {
    child.kill("SIGCONT");
  }
  assert.equal(await exited, 0);
  assert.equal(await store.get(".deltacells-lock"), undefined, "the lock is removed at the end");
  const v = await deltacellsS3("validate", url);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});

test("--overwrite onto s3:// moves the staged store into place by server-side copies, never reading it back", async () => {
  const url = `s3://${BUCKET}/copied`;
  const first = await deltacellsS3("convert", SMALL, url, "--format", "sporadik", "--byte-addressable");
  assert.equal(first.code, 0, first.stderr);
  const proxy = await FaultProxy.start(deltacellsS3.env().AWS_ENDPOINT_URL as string);
  try {
    const args = ["convert", SMALL, url, "--format", "sporadik", "--byte-addressable", "--axes", "0"];
    const second = await deltacellsS3.withEnv({ AWS_ENDPOINT_URL: proxy.url })(...args, "--overwrite");
    assert.equal(second.code, 0, second.stderr);
    const staged = proxy.seen.filter(
      (r) => r.path.includes(".deltacells-staging-") && !r.path.includes("list-type"),
    );
    const writes = new Set(staged.filter((r) => r.method === "PUT").map((r) => r.path)).size;
    assert.ok(writes > 0, "the new store was staged");
    assert.deepEqual(
      staged.filter((r) => r.method === "GET").map((r) => r.path),
      [],
      "no staged object is read back to be moved",
    );
    // Each staged object: a HEAD (its size), then one CopyObject PUT onto its final key.
    assert.equal(staged.filter((r) => r.method === "HEAD").length, writes);
  } finally {
    await proxy.stop();
  }
  const store = openStore(url, { env: deltacellsS3.env() });
  assert.deepEqual(
    (await store.list()).filter((k) => k.startsWith("layouts/axis1/") || k.includes("staging")),
    [],
    "nothing of the old layout or the staging prefix is left",
  );
  const v = await deltacellsS3("validate", url);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});
