/**
 * The README's command in this checkout: `npx deltacells` runs the workspace's command, linked into
 * node_modules/.bin by `npm ci` because the root depends on @deltacells/cli. Offline, so that a
 * missing link fails here instead of fetching whatever the registry holds under that name.
 */
import assert from "node:assert/strict";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { REPO, run } from "./cli-helpers.js";

test("`npx deltacells --help` and `--version` from the repository root run this checkout's command", async () => {
  const offline = { npm_config_offline: "true", npm_config_yes: "false" };
  const help = await run("npx", ["deltacells", "--help"], offline);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: deltacells COMMAND/);
  const version = await run("npx", ["deltacells", "--version"], offline);
  const { version: expected } = JSON.parse(readFileSync(join(REPO, "packages/cli/package.json"), "utf8"));
  assert.equal(version.stdout, `deltacells ${expected}\n`);
});

/**
 * The bin's choice between the bundle and dist/main.js, in a copy of the checkout's layout: a
 * bundle older than any package's last `tsc -b` must not run (it would run yesterday's code after
 * a source change and a plain `npx tsc -b`), and with no dist at all the command says to build.
 */
test("the bin runs the bundle only when it is newer than every package's tsc output", async () => {
  const root = mkdtempSync(join(tmpdir(), "deltacells-bin-"));
  try {
    const cli = join(root, "packages/cli");
    mkdirSync(join(cli, "bin"), { recursive: true });
    copyFileSync(join(REPO, "packages/cli/bin/deltacells.js"), join(cli, "bin/deltacells.js"));
    const runBin = () => run(process.execPath, [join(cli, "bin/deltacells.js")]);

    const none = await runBin();
    assert.equal(none.code, 1);
    assert.match(none.stderr, /not built yet: run `npm run build`/);

    mkdirSync(join(cli, "dist/bundle"), { recursive: true });
    writeFileSync(join(cli, "dist/main.js"), 'process.stdout.write("dist");\n');
    writeFileSync(join(cli, "dist/bundle/main.js"), 'process.stdout.write("bundle");\n');
    const at = (path: string, seconds: number) => {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, "");
      utimesSync(path, seconds, seconds);
    };
    const built = ["cli", "deltacells", "storage", "sporadik", "anndata"].map((p) =>
      join(root, "packages", p, "dist/.tsbuildinfo"),
    );
    for (const path of built) at(path, 1_000_000);
    utimesSync(join(cli, "dist/bundle/main.js"), 2_000_000, 2_000_000);
    assert.equal((await runBin()).stdout, "bundle");

    // One package rebuilt after the bundle (here the storage package): dist/main.js runs.
    at(built[2]!, 3_000_000);
    assert.equal((await runBin()).stdout, "dist");

    // Bundled again: the bundle runs again.
    utimesSync(join(cli, "dist/bundle/main.js"), 4_000_000, 4_000_000);
    assert.equal((await runBin()).stdout, "bundle");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/**
 * Node refuses V8 flags (`--max-old-space-size`, `--expose-gc`, ...) in a worker's execArgv, and the
 * HDF5 reader and sporadik's workers passed the host's options on: `node --max-old-space-size=8192
 * deltacells convert x.h5ad` failed at its first worker ("Initiated Worker with invalid execArgv
 * flags", reported as a bug, or for sporadik as a failed write). The built command, as a user runs it.
 */
test("the built command converts .h5ad and writes sporadik under node --max-old-space-size --expose-gc", async () => {
  const out = mkdtempSync(join(tmpdir(), "deltacells-v8flags-"));
  try {
    const bin = join(REPO, "packages/cli/bin/deltacells.js");
    const flags = ["--max-old-space-size=1024", "--expose-gc", "--stack-trace-limit=30"];
    const h5ad = await run(process.execPath, [
      ...flags,
      bin,
      "convert",
      join(REPO, "data/anndata/csr.h5ad"),
      join(out, "ds"),
      "--quiet",
    ]);
    assert.equal(h5ad.code, 0, h5ad.stderr);
    const sporadik = await run(process.execPath, [
      ...flags,
      bin,
      "convert",
      join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix"),
      join(out, "store"),
      "--format",
      "sporadik",
      "--quiet",
    ]);
    assert.equal(sporadik.code, 0, sporadik.stderr);
    const valid = await run(process.execPath, [...flags, bin, "validate", join(out, "store")]);
    assert.equal(valid.code, 0, valid.stderr);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("examples/python's setup line, run in the checkout's root, gives a command that works from any other folder", async () => {
  const readme = readFileSync(join(REPO, "examples/python/README.md"), "utf8");
  const line = /^export DELTACELLS=.*$/m.exec(readme)?.[0];
  assert.ok(line, "the README gives the line that sets DELTACELLS");
  assert.doesNotMatch(line, /npx/, "npx outside the checkout asks the registry");
  const elsewhere = mkdtempSync(join(tmpdir(), "deltacells-elsewhere-"));
  try {
    const r = await run("sh", [
      "-c",
      `cd "$1" && ${line} && cd "$2" && $DELTACELLS --version`,
      "sh",
      REPO,
      elsewhere,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const { version } = JSON.parse(readFileSync(join(REPO, "packages/cli/package.json"), "utf8"));
    assert.equal(r.stdout, `deltacells ${version}\n`);
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
