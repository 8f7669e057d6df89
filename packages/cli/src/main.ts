#!/usr/bin/env node
/**
 * The `deltacells` command: convert, inspect, validate and export datasets, and slice sporadik
 * stores. Errors go to stderr in one or two lines with a non-zero exit code (2 for a usage mistake,
 * 1 for anything else); `--debug` adds the stack.
 */
import { report, run } from "./run.js";

const debug = process.argv.includes("--debug") || Boolean(process.env.DELTACELLS_DEBUG);
const io = { stdout: process.stdout, stderr: process.stderr, debug };
// An error that escapes every handler (a stream's, a worker's) is still one line, not a crash dump.
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (err: unknown) => {
    void report(io, "deltacells", err, false).finally(() => process.exit(1));
  });
}
process.exitCode = await run(process.argv.slice(2), io);
