#!/usr/bin/env node
/**
 * The `deltacells` command: convert, inspect, validate and export datasets, and slice sporadik
 * stores. Errors go to stderr in one or two lines with a non-zero exit code (2 for a usage mistake,
 * 1 for anything else); `--debug` adds the stack.
 */
import { readFileSync } from "node:fs";
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_SECONDS } from "@deltacells/storage";
import { UsageError } from "./args.js";
import type { CommandResult } from "./commands/types.js";
import { cliHint, oneLine, stackOf, tagOf } from "./report.js";

type Run = (argv: string[]) => Promise<CommandResult>;

// Each command loads only when run: `inspect` never pays for the HDF5 or input readers.
const COMMANDS: Record<string, { load: () => Promise<Run>; summary: string }> = {
  convert: {
    load: async () => (await import("./commands/convert.js")).convert,
    summary: "convert an .h5ad, .zarr, 10x or Matrix Market input to a dataset (or a sporadik store)",
  },
  inspect: {
    load: async () => (await import("./commands/inspect.js")).inspect,
    summary: "show a dataset's (or a sporadik store's) shape, tiles, sizes and settings",
  },
  validate: {
    load: async () => (await import("./commands/validate.js")).validate,
    summary: "check a dataset or a sporadik store deeply (exit 0 only when valid)",
  },
  export: {
    load: async () => (await import("./commands/export.js")).exportCommand,
    summary: "export cells to Matrix Market or .h5ad",
  },
  obs: {
    load: async () => (await import("./commands/obs.js")).obsCommand,
    summary: "print a dataset's obs (cell table) schema or rows",
  },
  slice: {
    load: async () => (await import("./commands/slice.js")).slice,
    summary: "print slices of a sporadik store along one axis",
  },
  stream: {
    load: async () => (await import("./commands/stream.js")).stream,
    summary: "write shuffled mini-batches to stdout as an Arrow stream (for PyTorch)",
  },
  serve: {
    load: async () => (await import("./commands/serve.js")).serve,
    summary: "serve datasets and stores over HTTP (ranges, CORS) with the viewer",
  },
};

const HELP = `usage: deltacells COMMAND [options]

Single-cell count matrices on object storage, read back fast.

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(9)} ${c.summary}`)
  .join("\n")}

Run \`deltacells COMMAND --help\` for a command's options. Every command takes --debug (show the
stack of an error), and --retries N and --timeout SECONDS for http(s):// and s3:// locations
(transient failures are retried ${DEFAULT_RETRIES} times, a request silent for ${DEFAULT_TIMEOUT_SECONDS} s fails; 0 turns either off);
\`deltacells --version\` prints the version.`;

/** This package's version, from its package.json (beside src/ and dist/ alike). */
function version(): string {
  return (
    JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
  ).version;
}

/** Print `err` as one line (and a hint line when there is one); the stack only with `debug`. */
async function report(prefix: string, err: unknown, json: boolean, debug: boolean): Promise<void> {
  const tag = tagOf(err);
  const message = await oneLine(err);
  const hint = tag
    ? cliHint(err)
    : "this is a bug in deltacells: run again with --debug for the stack, and report it";
  if (json)
    process.stdout.write(
      `${JSON.stringify({ error: { tag: tag ?? "Error", message, ...(hint ? { hint } : {}) } }, null, 2)}\n`,
    );
  process.stderr.write(
    `${prefix}: error${tag ? ` [${tag}]` : ""}: ${message}\n${hint ? `  hint: ${hint}\n` : ""}`,
  );
  if (debug) process.stderr.write(`${stackOf(err)}\n`);
}

async function main(argv: string[], debug: boolean): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--version" || name === "-V") {
    process.stdout.write(`deltacells ${version()}\n`);
    return 0;
  }
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`${HELP}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`deltacells: unknown command ${JSON.stringify(name)}\n\n${HELP}\n`);
    return 2;
  }
  const json = rest.includes("--json");
  try {
    const result = await (await command.load())(rest);
    const stats = rest.includes("--stats") && result.store ? result.store : undefined;
    if (result.streamed) {
      if (stats) process.stderr.write(`stats: ${stats.format()}\n`);
    } else if (json && result.json !== undefined) {
      const out = stats ? { ...(result.json as object), stats: stats.stats } : result.json;
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    } else {
      process.stdout.write(`${result.text}\n`);
      if (stats) process.stderr.write(`stats: ${stats.format()}\n`);
      if (stats && result.statsDetail) process.stderr.write(`stats: ${result.statsDetail}\n`);
    }
    return result.exitCode ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `deltacells ${name}: ${err.message}\nRun \`deltacells ${name} --help\` for usage.\n`,
      );
      return 2;
    }
    await report(`deltacells ${name}`, err, json, debug);
    return 1;
  }
}

const debug = process.argv.includes("--debug") || Boolean(process.env.DELTACELLS_DEBUG);
// An error that escapes every handler (a stream's, a worker's) is still one line, not a crash dump.
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (err: unknown) => {
    void report("deltacells", err, false, debug).finally(() => process.exit(1));
  });
}
process.exitCode = await main(
  process.argv.slice(2).filter((a) => a !== "--debug"),
  debug,
);
