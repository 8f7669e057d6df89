/**
 * The bundled command (scripts/bundle-cli.mjs, what `npm run build` makes and bin/deltacells.js
 * runs): built from the compiled dist/ into a temporary folder, it finds the files its modules
 * locate next to themselves (package.json, the tile pool's worker script, the native kernel) and
 * streams the same bytes as the command's sources.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { deltacells, REPO, streamInProcess, tempDir } from "./cli-helpers.js";

const dir = tempDir();
// Inside the repository, as dist/bundle/: the packages left as imports resolve from node_modules.
const OUT = mkdtempSync(join(REPO, "packages/cli/dist/bundle-test-"));
const DS = join(dir, "ds");

after(() => rmSync(OUT, { recursive: true, force: true }));

before(async () => {
  assert.ok(
    existsSync(join(REPO, "packages/cli/dist/main.js")),
    "the bundle is made from the compiled packages: run `npx tsc -b` first",
  );
  const built = spawnSync(process.execPath, [join(REPO, "scripts/bundle-cli.mjs"), OUT], {
    encoding: "utf8",
  });
  assert.equal(built.status, 0, built.stderr);
  const r = await deltacells(
    "convert",
    "data/anndata/csr.h5ad",
    DS,
    "--tile-size",
    "16",
    "--level",
    "3",
    "--quiet",
  );
  assert.equal(r.code, 0, r.stderr);
});

function bundled(...args: string[]) {
  return spawnSync(process.execPath, [join(OUT, "main.js"), ...args], {
    cwd: REPO,
    env: { ...process.env, DELTACELLS_DEBUG: "" },
    maxBuffer: 1 << 28,
  });
}

test("the bundle reads its version from the cli package.json next to its source", () => {
  const r = bundled("--version");
  assert.equal(r.status, 0, r.stderr.toString());
  const { version } = JSON.parse(readFileSync(join(REPO, "packages/cli/package.json"), "utf8"));
  assert.equal(r.stdout.toString().trim(), `deltacells ${version}`);
});

test("the bundle's stream, decoded by its own pool worker script, equals the sources' byte for byte", async () => {
  // The pool starts the bundle's worker entry, not dist's worker.js and its modules.
  assert.ok(existsSync(join(OUT, "worker.js")));
  const chunks = readdirSync(OUT).map((f) => readFileSync(join(OUT, f), "utf8"));
  assert.ok(chunks.some((c) => c.includes('startNodeWorker(new URL("./worker.js", import.meta.url)')));
  const args = ["stream", DS, "--threads", "2", "--batch-size", "10", "--seed", "5", "--obs", "cell_type"];
  const cache = ["--cache-dir", join(dir, "cache")];
  const r = bundled(...args, ...cache);
  assert.equal(r.status, 0, r.stderr.toString());
  const expected = await streamInProcess(...args.slice(1), ...cache);
  assert.equal(expected.code, 0, expected.stderr);
  assert.ok(r.stdout.length > 1000);
  assert.ok(r.stdout.equals(expected.binary), "the bundle's Arrow stream differs from the sources'");
});
