/** Argument parsing shared by the subcommands: node:util parseArgs plus typed conversions. */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { CliError, type CliErrorOptions } from "./errors.js";

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
} as const satisfies ParseArgsConfig["options"];

/**
 * Whether S3 requests are signed, as the last parsed command line said (`--no-sign-request`, the
 * AWS CLI's spelling, turns it off for public buckets). Set by {@link parse}, read when a store opens.
 */
export const s3Signing = { signRequests: true };

export const COMMON_HELP = `  --json         print the result as JSON on stdout (for scripts)
  --stats        print the storage requests and bytes the command made
  --no-sign-request  read s3:// locations unsigned (public buckets); otherwise credentials come
                 from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials and
                 ~/.aws/config, as for the AWS CLI
  -h, --help     show this help`;

/**
 * Parse `argv` against `options`, refusing unknown options and a wrong number of positionals. A
 * last positional named `NAME...` takes one or more arguments.
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
  s3Signing.signRequests = values["no-sign-request"] !== true;
  const variadic = positionals.at(-1)?.endsWith("...") ?? false;
  const count = parsed.positionals.length;
  if (!values.help && (variadic ? count < positionals.length : count !== positionals.length)) {
    throw new UsageError(
      `expected ${positionals.join(" ")}, got ${parsed.positionals.length ? parsed.positionals.map((p) => JSON.stringify(p)).join(" ") : "nothing"}`,
    );
  }
  return { values, positionals: parsed.positionals };
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
