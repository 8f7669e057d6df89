/**
 * Running the CLI in this process (from its sources) or as a child process (as test-utils/command.ts
 * says: the sources through tsx, or tsc's output in the full run), and the conformance Python.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { type Readable, Writable } from "node:stream";
import { COMMAND_ARGS } from "../../../test-utils/command.js";
import { tempDir as makeTempDir } from "../../../test-utils/temp.js";
import { run as runCommand } from "../src/run.js";

export const REPO = resolve(import.meta.dirname, "../../..");
export const PYTHON = join(REPO, "conformance/.venv/bin/python");
export { COMMAND_ARGS, COMMAND_LINE } from "../../../test-utils/command.js";

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

/** `deltacells ARGS...` as a child process (test-utils/command.ts), with stacks. */
export function deltacells(...args: string[]): Promise<Run> {
  return run(process.execPath, [...COMMAND_ARGS, ...args], {
    DELTACELLS_DEBUG: "1",
  });
}

/**
 * `deltacells ARGS...` as a user runs it, as a child process: no stacks unless `--debug` is among the
 * arguments.
 */
export function deltacellsPlain(...args: string[]): Promise<Run> {
  return run(process.execPath, [...COMMAND_ARGS, ...args], {
    DELTACELLS_DEBUG: "",
  });
}

let running = false;

/**
 * `deltacells ARGS...` run in this process (src/run.ts, what main.ts runs): the output and exit code
 * the command gives, without a child process through tsx, whose start-up (loading the command's
 * modules) costs seconds of CPU per command. `env` is set in `process.env` for the run (an empty
 * string as in a child's environment), and what reaches `process.stderr` meanwhile (an HDF5
 * worker's output, a warning) is part of the run's stderr, as in the command's. Runs do not
 * overlap. A child process ({@link deltacells}) is still needed for what belongs to a process:
 * `serve` (but its `--help`), which writes to the process's stdout and runs until a signal; `stream`
 * (but its `--help`) unless its binary output goes to `binary` ({@link streamInProcess}); signals; an error no
 * handler catches; a terminal; a reader closing the pipe; a lock held by another process.
 */
async function inProcess(
  args: string[],
  debug: boolean,
  env: Record<string, string>,
  binary?: Writable,
  control?: Readable,
): Promise<Run> {
  assert.ok(
    (args[0] !== "stream" || binary !== undefined || args.includes("--help")) &&
      (args[0] !== "serve" || args.includes("--help")),
    `deltacells ${args[0]} writes to the process's stdout: run it as a child process (deltacells())`,
  );
  assert.ok(!running, "in-process runs of the command do not overlap: await one before the next");
  running = true;
  // The child process ran in the repository: relative paths mean the same here.
  if (process.cwd() !== REPO) process.chdir(REPO);
  const saved = Object.keys(env).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, env);
  let stdout = "";
  let stderr = "";
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    stderr += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
    const done = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    if (done) process.nextTick(done);
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await runCommand(args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      debug,
      ...(binary && { binary }),
      ...(control && { control }),
    });
    return { code, stdout, stderr };
  } finally {
    process.stderr.write = write;
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    running = false;
  }
}

/**
 * `deltacells stream ARGS...` in this process (no stacks, as a user runs it): its exit code, stderr
 * and the bytes of its Arrow stream.
 */
export async function streamInProcess(...args: string[]): Promise<Run & { binary: Buffer }> {
  const chunks: Buffer[] = [];
  const binary = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  const r = await inProcess(["stream", ...args], false, {}, binary);
  return { ...r, binary: Buffer.concat(chunks) };
}

/**
 * `deltacells stream ARGS...` in this process writing to `binary` and reading its consumer's
 * messages (`--shm-fd`) from `control`, for a test that consumes the stream as it comes.
 */
export function streamWith(binary: Writable, control: Readable, ...args: string[]): Promise<Run> {
  return inProcess(["stream", ...args], false, {}, binary, control);
}

/** {@link deltacells} in this process (see `inProcess` for what needs a child process). */
export function cli(...args: string[]): Promise<Run> {
  return inProcess(args, true, {});
}

/** {@link deltacellsPlain} in this process: no stacks unless `--debug` is among the arguments. */
export function cliPlain(...args: string[]): Promise<Run> {
  return inProcess(args, false, {});
}

/** {@link cliPlain} with `env` over the process's environment for the run. */
export function cliWithEnv(env: Record<string, string>): (...args: string[]) => Promise<Run> {
  return (...args) => inProcess(args, false, env);
}

/** An error as the command shows it: exit code 1, one or two lines on stderr, no stack, no HDF5 dump. */
export function assertShortError(r: Run, pattern: RegExp): void {
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.trimEnd().split("\n");
  assert.ok(lines.length <= 2, `at most two lines, got:\n${r.stderr}`);
  assert.match(r.stderr, pattern);
  assert.doesNotMatch(r.stderr, /HDF5-DIAG|^\s+at /m);
}

/** A new folder under the system's temporary folder, removed when the test process exits. */
export const tempDir = (): string => makeTempDir("deltacells-cli-");

/** Every file under `dir`, by its path relative to `dir` (sorted), with its bytes. */
export function filesUnder(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(relative(dir, p), readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

/** `b` holds the same files as `a`, byte for byte. */
export function assertSameFiles(a: string, b: string): void {
  const fa = filesUnder(a);
  const fb = filesUnder(b);
  assert.deepEqual([...fb.keys()], [...fa.keys()]);
  for (const [k, v] of fa) assert.ok(v.equals(fb.get(k)!), `${k} differs`);
}
