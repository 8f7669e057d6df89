/** Argument parsing shared by the subcommands: node:util parseArgs plus typed conversions. */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_SECONDS } from "@deltacells/storage";
import { CliError, type CliErrorOptions } from "./errors.js";
import { formatCount } from "./format.js";
import { Locations } from "./locations.js";

export { count } from "./format.js";

/** A mistake on the command line: reported with a pointer to `--help`, exit code 2. */
export class UsageError extends CliError {
  declare readonly _tag: "Usage";
  constructor(message: string, options: Omit<CliErrorOptions, "tag"> = {}) {
    super(message, { ...options, tag: "Usage" });
    this.name = "UsageError";
  }
}

/** The options every command takes: `--help` and `--debug` (run.ts reads it). */
const ALWAYS = {
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** `--json`: the result as JSON on stdout. */
const JSON_OPTION = { json: { type: "boolean" } } as const;
/** `--stats`: the storage requests and bytes the command made. */
const STATS_OPTION = { stats: { type: "boolean" } } as const;
/** How remote locations are read: `--no-sign-request`, `--retries`, `--timeout`. */
const REMOTE_OPTIONS = {
  "no-sign-request": { type: "boolean" },
  retries: { type: "string" },
  timeout: { type: "string" },
} as const;

/** Options every subcommand takes, unless its {@link Common} leaves some out. */
export const COMMON_OPTIONS = {
  ...ALWAYS,
  ...JSON_OPTION,
  ...STATS_OPTION,
  ...REMOTE_OPTIONS,
} as const satisfies ParseArgsConfig["options"];

/**
 * Which of the shared options a command takes (all by default): `stream` writes an Arrow stream,
 * not JSON; `serve` reads a local folder only and counts no storage requests.
 */
export interface Common {
  json?: boolean;
  stats?: boolean;
  /** `--no-sign-request`, `--retries`, `--timeout`. */
  remote?: boolean;
}

const ALL: Required<Common> = { json: true, stats: true, remote: true };

/** The shared options of `common`, as parseArgs takes them. */
export function commonOptions(common: Common = ALL): ParseArgsConfig["options"] {
  const c = { ...ALL, ...common };
  return {
    ...ALWAYS,
    ...(c.json ? JSON_OPTION : {}),
    ...(c.stats ? STATS_OPTION : {}),
    ...(c.remote ? REMOTE_OPTIONS : {}),
  };
}

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

const HELP_LINES = {
  json: "  --json         print the result as JSON on stdout (for scripts; keys in docs/cli.md)",
  stats: "  --stats        print the storage requests and bytes the command made",
  remote: `  --retries N    http(s):// and s3:// reads: retries of a request that failed for a transient
                 reason (5xx, 429, a reset connection, a cut body, a stall), with exponential
                 backoff (default ${DEFAULT_RETRIES}; 0: none)
  --timeout SECONDS
                 http(s):// and s3:// requests: fail (and retry) one that receives nothing for
                 this long (default ${DEFAULT_TIMEOUT_SECONDS}; 0: none); a slow transfer that keeps moving never does
  --no-sign-request  read s3:// locations unsigned (public buckets); otherwise credentials come
                 from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials and
                 ~/.aws/config, as for the AWS CLI`,
  always: `  --debug        on an error, also print its stack (and its causes')
  -h, --help     show this help`,
};

/** The help lines of the shared options `common` takes. */
export function commonHelp(common: Common = ALL): string {
  const c = { ...ALL, ...common };
  return [
    ...(c.json ? [HELP_LINES.json] : []),
    ...(c.stats ? [HELP_LINES.stats] : []),
    ...(c.remote ? [HELP_LINES.remote] : []),
    HELP_LINES.always,
  ].join("\n");
}

export const COMMON_HELP = commonHelp();

type Options = NonNullable<ParseArgsConfig["options"]>;

/** The edit distance of `a` and `b`, for "did you mean". */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** ", did you mean --NAME?" for the known option nearest `name`, when one is near. */
function nearest(name: string, options: Options): string {
  let best: [string, number] | undefined;
  for (const known of Object.keys(options)) {
    const d = known.startsWith(name) || name.startsWith(known) ? 1 : distance(name, known);
    if (d <= Math.max(1, Math.floor(known.length / 4)) && (!best || d < best[1])) best = [known, d];
  }
  return best ? `; did you mean --${best[0]}?` : "";
}

/**
 * The first mistake in the options of `argv`, in the command line's words (parseArgs' own
 * messages quote badly and talk of "positional arguments"), or undefined.
 */
function optionMistake(argv: string[], options: Options): string | undefined {
  const shorts = new Map(Object.entries(options).flatMap(([name, o]) => (o.short ? [[o.short, name]] : [])));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") return undefined;
    if (!arg.startsWith("-") || arg === "-") continue;
    const long = arg.startsWith("--");
    const eq = arg.indexOf("=");
    const given = long ? arg.slice(2, eq < 0 ? undefined : eq) : arg.slice(1);
    const name = long ? given : given.length === 1 ? shorts.get(given) : undefined;
    if (name === undefined || !Object.hasOwn(options, name))
      return long || given.length === 1
        ? `unknown option ${long ? `--${given}` : arg}${long ? nearest(given, options) : ""}`
        : `unknown option ${arg} (options take two dashes: --${given}?)`;
    const takesValue = options[name]!.type === "string";
    if (!takesValue && long && eq >= 0) return `--${name} takes no value, got ${JSON.stringify(arg)}`;
    if (takesValue && !(long && eq >= 0)) {
      const next = argv[i + 1];
      if (next === undefined) return `--${name} needs a value`;
      if (next.startsWith("-") && !/^-\d/.test(next))
        return `--${name} needs a value, got the option ${next} (a value starting with a dash: --${name}=${next})`;
      i++;
    }
  }
  return undefined;
}

/**
 * Parse `argv` against `options` and the shared options of `common`, refusing unknown options and
 * a wrong number of positionals. A last positional named `NAME...` takes one or more arguments.
 * `locations` opens stores with this command line's `--no-sign-request` (the AWS CLI's
 * spelling), `--retries` and `--timeout`: the command hands it to whatever opens a location.
 */
export function parse<O extends Options>(
  argv: string[],
  options: O,
  positionals: string[],
  common: Common = ALL,
) {
  let parsed: ReturnType<
    typeof parseArgs<{
      args: string[];
      options: O & typeof COMMON_OPTIONS;
      allowPositionals: true;
      strict: true;
    }>
  >;
  const all = { ...options, ...commonOptions(common) };
  const mistake = optionMistake(argv, all);
  if (mistake) throw new UsageError(mistake);
  try {
    parsed = parseArgs({ args: argv, options: all, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    throw new UsageError((err as Error).message.split("\n")[0]!);
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
      `--${name} must be an integer in ${formatCount(min)} .. ${formatCount(max)}, got ${JSON.stringify(raw)}`,
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
