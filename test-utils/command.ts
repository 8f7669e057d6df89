/**
 * How a test starts the `deltacells` command as a child process: from its TypeScript sources
 * through tsx (the default, so a targeted run reflects the sources without a build), or, with
 * DELTACELLS_TEST_COMMAND=compiled, from tsc's output (packages/cli/dist/main.js), which starts in
 * a third of the time and whose worker threads start without tsx too. scripts/test.mjs sets it for
 * the full run (after `tsc -b`, so dist/ is the sources') and for `--compiled FILES`.
 *
 * Tests of the sources or of tsx themselves (worker start-up, a `-e` script importing the sources,
 * the bin's and the bundle's tests) spawn what they test, not this.
 */
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "..");

/** The environment variable that chooses the command's form: unset, `source` or `compiled`. */
export const COMMAND_ENV = "DELTACELLS_TEST_COMMAND";

function compiledCommand(): boolean {
  const form = process.env[COMMAND_ENV] ?? "";
  if (form === "" || form === "source") return false;
  if (form === "compiled") return true;
  throw new Error(
    `${COMMAND_ENV} chooses how tests start the deltacells command: expected "source" (or unset) or "compiled", found ${JSON.stringify(form)}; unset it or set one of those`,
  );
}

const COMPILED = compiledCommand();

/** The command's entry point: src/main.ts or, compiled, dist/main.js. */
export const MAIN = join(REPO, COMPILED ? "packages/cli/dist/main.js" : "packages/cli/src/main.ts");

/** node's arguments that start the command, before the command's own: `spawn(process.execPath, [...COMMAND_ARGS, ...args])`. */
export const COMMAND_ARGS: readonly string[] = COMPILED
  ? [MAIN]
  : ["--import", "tsx", "--conditions=source", MAIN];

/** POSIX shell quoting, which Python's shlex.split undoes too. */
function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * The command as one string, for a shell (`bash -c`, `script -c`) or an environment variable a
 * Python script splits with shlex (DELTACELLS in conformance/stream_check.py).
 */
export const COMMAND_LINE = [process.execPath, ...COMMAND_ARGS].map(quote).join(" ");
