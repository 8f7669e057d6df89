/**
 * The Python package's tests (python/tests, pytest) in the conformance environment, against the
 * repository's built command: each pytest file is one test here, failing with pytest's output.
 * The torch tests skip with their reason where torch is not installed (printed here); the wheel
 * test builds the wheel and installs it into a fresh venv (dependencies from PyPI, through pip's
 * cache, pinned to conformance/requirements.txt).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";

const REPO = resolve(import.meta.dirname, "../..");
const PYTHON = join(REPO, "conformance/.venv/bin/python");
const TESTS = join(REPO, "python/tests");

function pytest(file: string): Promise<{ code: number; output: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(PYTHON, ["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", join(TESTS, file)], {
      cwd: join(REPO, "python"),
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
    });
    let output = "";
    child.stdout.on("data", (d) => {
      output += d;
    });
    child.stderr.on("data", (d) => {
      output += d;
    });
    child.on("error", fail);
    child.on("close", (code) => ok({ code: code ?? -1, output }));
  });
}

for (const file of readdirSync(TESTS).filter((f) => /^test_.*\.py$/.test(f))) {
  test(`pytest ${file} passes`, async () => {
    const { code, output } = await pytest(file);
    // The reason of each skipped test (torch missing) where the run's log shows it.
    const skipped = output.split("\n").filter((l) => l.startsWith("SKIPPED"));
    if (skipped.length > 0) console.log(skipped.join("\n"));
    // 5: pytest ran no test, each of the file's being skipped (a module that needs torch).
    assert.ok(code === 0 || code === 5, output);
  });
}
