/**
 * What the `deltacells` command does with its arguments: pick the command, run it, print its result
 * or its error, and say the exit code. main.ts runs it on the process; tests run it in their own
 * process (a child process through tsx costs 1-2 s of start-up per command).
 */
import { readFileSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_SECONDS } from "@deltacells/storage";
import { UsageError } from "./args.js";
import type { CommandResult } from "./command.js";
import { formatStats } from "./format.js";
import { statsJson } from "./json.js";
import { cliHint, oneLine, stackOf, tagOf } from "./report.js";
import { errorLine, stderrIsJson } from "./stderr-json.js";

/**
 * Where a run writes what it prints. `serve`'s address and progress bars (on a terminal only)
 * still write to `process.stdout`/`process.stderr`.
 */
export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Where `stream` writes its binary Arrow stream (default `process.stdout`; tests collect it). */
  binary?: Writable & { isTTY?: boolean };
  /** Where `stream --shm-fd` reads its consumer's messages (default `process.stdin`; tests write them). */
  control?: Readable;
  /** Show an error's stack (`DELTACELLS_DEBUG` set), as `--debug` does. */
  debug: boolean;
}

type Command = (argv: string[], io: CliIo) => Promise<CommandResult>;

// Each command loads only when run: `inspect` never pays for the HDF5 or input readers.
const COMMANDS: Record<string, { load: () => Promise<Command>; summary: string }> = {
  convert: {
    load: async () => (await import("./convert/command.js")).convert,
    summary: "convert an .h5ad, .zarr, 10x or Matrix Market input to a dataset (or a sporadik store)",
  },
  plan: {
    load: async () => (await import("./plan/command.js")).plan,
    summary: "plan an atlas built by N tasks across machines (a job array), from a scan of its inputs",
  },
  append: {
    load: async () => (await import("./append/command.js")).append,
    summary: "add the cells of new inputs at the end of a dataset, writing only what changes",
  },
  finalize: {
    load: async () => (await import("./finalize/command.js")).finalize,
    summary: "complete an atlas built by tasks: check every task, then write the manifest",
  },
  inspect: {
    load: async () => (await import("./inspect/command.js")).inspect,
    summary: "show a dataset's (or a sporadik store's) shape, tiles, sizes and settings",
  },
  validate: {
    load: async () => (await import("./validate/command.js")).validate,
    summary: "check a dataset or a sporadik store deeply (exit 0 only when valid)",
  },
  export: {
    load: async () => (await import("./export/command.js")).exportCommand,
    summary: "export cells to Matrix Market or .h5ad",
  },
  obs: {
    load: async () => (await import("./obs/command.js")).obsCommand,
    summary: "print a dataset's obs (cell table) schema or rows",
  },
  stats: {
    load: async () => (await import("./stats/command.js")).stats,
    summary: "compute a dataset's statistics (per gene, cell and category) for markers and dot plots",
  },
  slice: {
    load: async () => (await import("./slice/command.js")).slice,
    summary: "print slices of a sporadik store along one axis",
  },
  stream: {
    load: async () => (await import("./stream/command.js")).stream,
    summary: "write shuffled mini-batches to stdout as an Arrow stream (for PyTorch)",
  },
  serve: {
    load: async () => (await import("./serve/command.js")).serve,
    summary: "serve datasets and stores over HTTP (ranges, CORS) with the viewer",
  },
};

const HELP = `usage: deltacells COMMAND [options]

Single-cell count matrices on object storage, read back fast.

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(9)} ${c.summary}`)
  .join("\n")}

Run \`deltacells COMMAND --help\` (or \`deltacells help COMMAND\`) for a command's options. Every
command takes --debug (show the stack of an error); those reading http(s):// and s3:// locations
take --retries N and --timeout SECONDS (transient failures are retried ${DEFAULT_RETRIES} times, a request
silent for ${DEFAULT_TIMEOUT_SECONDS} s fails; 0 turns either off). \`deltacells --version\` (-V, -v, version)
prints the version. With DELTACELLS_STDERR=json in the environment, an error and progress
go to stderr as JSON lines, for programs (the Python package).`;

/** The ways of asking for the version: --version as npm, -V as Python tools, -v as node. */
const VERSION_WORDS = new Set(["--version", "-V", "-v", "version"]);

/** This package's version, from its package.json (beside src/ and dist/ alike). */
function version(): string {
  return (
    JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
  ).version;
}

/**
 * Print `err` as one line (and a hint line when there is one); the stack only with `io.debug`.
 * With `DELTACELLS_STDERR=json`, one `{"error": ...}` line instead (stderr-json.ts).
 */
export async function report(io: CliIo, prefix: string, err: unknown, json: boolean): Promise<void> {
  const tag = tagOf(err);
  const message = await oneLine(err);
  const hint = tag
    ? cliHint(err)
    : "this is a bug in deltacells: run again with --debug for the stack, and report it";
  if (json)
    io.stdout.write(
      `${JSON.stringify({ error: { tag: tag ?? "Error", message, ...(hint ? { hint } : {}) } }, null, 2)}\n`,
    );
  if (stderrIsJson()) {
    const e = err as { object?: unknown; expected?: unknown; found?: unknown };
    io.stderr.write(
      errorLine({
        tag: tag ?? "Error",
        message,
        hint,
        object: typeof e?.object === "string" ? e.object : undefined,
        expected: e?.expected,
        found: e?.found,
      }),
    );
  } else {
    io.stderr.write(
      `${prefix}: error${tag ? ` [${tag}]` : ""}: ${message}\n${hint ? `  hint: ${hint}\n` : ""}`,
    );
  }
  if (io.debug) io.stderr.write(`${stackOf(err)}\n`);
}

/**
 * Runs `deltacells ARGV...` (the arguments after the program name) and resolves to its exit code:
 * 0, 1 for an error (reported on `io.stderr`), 2 for a usage mistake. It never exits the process,
 * so tests run commands in their own process. `--debug` anywhere in `argv` (or `io.debug`) adds
 * an error's stack.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const debug = io.debug || argv.includes("--debug");
  const [name, ...rest] = argv.filter((a) => a !== "--debug");
  if (name !== undefined && VERSION_WORDS.has(name)) {
    io.stdout.write(`deltacells ${version()}\n`);
    return 0;
  }
  // `deltacells help convert` is `deltacells convert --help`.
  if (name === "help" && rest[0] !== undefined && Object.hasOwn(COMMANDS, rest[0]))
    return run([rest[0], "--help"], io);
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    if (name === "help" && rest[0] !== undefined) {
      io.stderr.write(`deltacells help: unknown command ${JSON.stringify(rest[0])}\n\n${HELP}\n`);
      return 2;
    }
    io.stdout.write(`${HELP}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr.write(`deltacells: unknown command ${JSON.stringify(name)}\n\n${HELP}\n`);
    return 2;
  }
  const json = rest.includes("--json");
  try {
    const result = await (await command.load())(rest, io);
    const stats = rest.includes("--stats") && result.store ? result.store : undefined;
    if (result.streamed) {
      if (stats) io.stderr.write(`stats: ${formatStats(stats.stats)}\n`);
    } else if (json && result.json !== undefined) {
      const out = stats ? { ...(result.json as object), stats: statsJson(stats.stats) } : result.json;
      io.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    } else {
      io.stdout.write(`${result.text}\n`);
      if (stats) io.stderr.write(`stats: ${formatStats(stats.stats)}\n`);
      if (stats && result.statsDetail) io.stderr.write(`stats: ${result.statsDetail}\n`);
    }
    return result.exitCode ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(
        stderrIsJson()
          ? errorLine({
              tag: "Usage",
              message: err.message,
              hint: `run \`deltacells ${name} --help\` for usage`,
            })
          : `deltacells ${name}: ${err.message}\nRun \`deltacells ${name} --help\` for usage.\n`,
      );
      return 2;
    }
    await report({ ...io, debug }, `deltacells ${name}`, err, json);
    return 1;
  }
}
