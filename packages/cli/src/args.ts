/** Argument parsing shared by the subcommands: node:util parseArgs plus typed conversions. */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_SECONDS } from "@deltacells/storage";
import { CliError, type CliErrorOptions } from "./errors.js";
import { Locations } from "./locations.js";

/** A mistake on the command line: reported with a pointer to `--help`, exit code 2. */
export class UsageError extends CliError {
  declare readonly _tag: "Usage";
  constructor(message: string, options: Omit<CliErrorOptions, "tag"> = {}) {
    super(message, { ...options, tag: "Usage" });
    this.name = "UsageError";
  }
}

/** Options every subcommand takes. */
export const COMMON_OPTIONS = {
  help: { type: "boolean", short: "h" },
  json: { type: "boolean" },
  stats: { type: "boolean" },
  "no-sign-request": { type: "boolean" },
  retries: { type: "string" },
  timeout: { type: "string" },
} as const satisfies ParseArgsConfig["options"];

/** `--timeout SECONDS` in milliseconds: a number >= 0 (0: none). */
function timeoutOption(raw: string | boolean | undefined): number {
  if (raw === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  const n = Number(raw);
  if (typeof raw !== "string" || !/^\d+(\.\d+)?$/.test(raw) || !(n <= 86_400)) {
    throw new UsageError(
      `--timeout must be a number of seconds in 0 .. 86400 (0: no timeout), got ${JSON.stringify(raw)}`,
    );
  }
  return n * 1000;
}

export const COMMON_HELP = `  --json         print the result as JSON on stdout (for scripts)
  --stats        print the storage requests and bytes the command made
  --retries N    http(s):// and s3:// reads: retries of a request that failed for a transient
                 reason (5xx, 429, a reset connection, a cut body, a stall), with exponential
                 backoff (default ${DEFAULT_RETRIES}; 0: none)
  --timeout SECONDS
                 http(s):// and s3:// requests: fail (and retry) one that receives nothing for
                 this long (default ${DEFAULT_TIMEOUT_SECONDS}; 0: none); a slow transfer that keeps moving never does
  --no-sign-request  read s3:// locations unsigned (public buckets); otherwise credentials come
                 from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials and
                 ~/.aws/config, as for the AWS CLI
  -h, --help     show this help`;

/**
 * Parse `argv` against `options`, refusing unknown options and a wrong number of positionals. A
 * last positional named `NAME...` takes one or more arguments. `locations` opens stores with
 * this command line's `--no-sign-request` (the AWS CLI's spelling), `--retries` and `--timeout`:
 * the command hands it to whatever opens a location.
 */
export function parse<O extends NonNullable<ParseArgsConfig["options"]>>(
  argv: string[],
  options: O,
  positionals: string[],
) {
  let parsed: ReturnType<
    typeof parseArgs<{
      args: string[];
      options: O & typeof COMMON_OPTIONS;
      allowPositionals: true;
      strict: true;
    }>
  >;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, ...COMMON_OPTIONS },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const locations = new Locations({
    signRequests: values["no-sign-request"] !== true,
    retries: intOption(values, "retries", DEFAULT_RETRIES, 0, 100)!,
    timeoutMs: timeoutOption(values.timeout),
  });
  const variadic = positionals.at(-1)?.endsWith("...") ?? false;
  const count = parsed.positionals.length;
  if (!values.help && (variadic ? count < positionals.length : count !== positionals.length)) {
    throw new UsageError(
      `expected ${positionals.join(" ")}, got ${parsed.positionals.length ? parsed.positionals.map((p) => JSON.stringify(p)).join(" ") : "nothing"}`,
    );
  }
  return { values, positionals: parsed.positionals, locations };
}

/** `n` and `word`, pluralised in English ("1 tile", "4 tiles"). */
export function count(n: number, word: string, plural = `${word}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? word : plural}`;
}

/** A positive integer option, or `fallback` when absent. */
export function intOption(
  values: Record<string, unknown>,
  name: string,
  fallback: number | undefined,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (typeof raw !== "string" || !/^-?\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `--${name} must be an integer in ${min.toLocaleString("en-US")} .. ${max.toLocaleString("en-US")}, got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/** `A:B` (either side may be empty) as a half-open cell range within `0 .. n`. */
export function cellRange(spec: string | undefined, n: number): [number, number] {
  if (spec === undefined) return [0, n];
  const m = /^(\d*):(\d*)$/.exec(spec);
  if (!m)
    throw new UsageError(`--cells must look like A:B (e.g. 0:1000, :500, 200:), got ${JSON.stringify(spec)}`);
  const a = m[1] ? Number(m[1]) : 0;
  const b = m[2] ? Number(m[2]) : n;
  if (a > b)
    throw new UsageError(`--cells ${spec} is reversed: A must not exceed B (cells A .. B-1), e.g. ${b}:${a}`);
  if (b > n) throw new UsageError(`--cells ${spec} is not within the dataset's 0:${n}`);
  return [a, b];
}
