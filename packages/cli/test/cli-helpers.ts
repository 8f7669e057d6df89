/** Spawning the CLI from its sources (as `npm test` runs it) and the conformance Python. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "../../..");
export const PYTHON = join(REPO, "conformance/.venv/bin/python");
export const MAIN = join(REPO, "packages/cli/src/main.ts");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { cwd: REPO, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", fail);
    child.on("close", (code) => ok({ code: code ?? -1, stdout, stderr }));
  });
}

/** `deltacells ARGS...` from the TypeScript sources. */
export function deltacells(...args: string[]): Promise<Run> {
  return run(process.execPath, ["--import", "tsx", "--conditions=source", MAIN, ...args], {
    DELTACELLS_DEBUG: "1",
  });
}

/** `deltacells ARGS...` as a user runs it: no stacks unless `--debug` is among the arguments. */
export function deltacellsPlain(...args: string[]): Promise<Run> {
  return run(process.execPath, ["--import", "tsx", "--conditions=source", MAIN, ...args], {
    DELTACELLS_DEBUG: "",
  });
}

/** An error as the command shows it: exit code 1, one or two lines on stderr, no stack, no HDF5 dump. */
export function assertShortError(r: Run, pattern: RegExp): void {
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.trimEnd().split("\n");
  assert.ok(lines.length <= 2, `at most two lines, got:\n${r.stderr}`);
  assert.match(r.stderr, pattern);
  assert.doesNotMatch(r.stderr, /HDF5-DIAG|^\s+at /m);
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "deltacells-cli-"));
}
