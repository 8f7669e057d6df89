/**
 * `DELTACELLS_STDERR=json`: stderr for a program that runs the command (the Python package), one
 * JSON object per line in place of the lines meant for a person: `{"error": {...}}` for the error
 * that ends the command (its tag, message, hint, object, expected and found, so a caller raises
 * an exception of the same name without parsing text) and `{"progress": {...}}` for progress,
 * reported whether or not stderr is a terminal. Anything else the command or a library prints
 * (a warning) stays a line of text.
 */

/** Whether stderr is for a program: `DELTACELLS_STDERR=json` in the environment. */
export function stderrIsJson(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.DELTACELLS_STDERR === "json";
}

/** What `{"error": ...}` holds. */
export interface ErrorRecord {
  tag: string;
  message: string;
  hint?: string | undefined;
  object?: string | undefined;
  expected?: unknown;
  found?: unknown;
}

/** `value` as JSON can hold it: bigints as numbers when exact, else text; anything unserialisable as text. */
function plain(value: unknown): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(
      JSON.stringify(value, (_k, v: unknown) =>
        typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v,
      ) ?? "null",
    );
  } catch {
    return String(value);
  }
}

/** One `{"error": ...}` line, the fields left out that the error does not have. */
export function errorLine(record: ErrorRecord): string {
  const { tag, message, hint, object } = record;
  const error: Record<string, unknown> = { tag, message };
  if (hint !== undefined) error.hint = hint;
  if (object !== undefined) error.object = object;
  const expected = plain(record.expected);
  const found = plain(record.found);
  if (expected !== undefined) error.expected = expected;
  if (found !== undefined) error.found = found;
  return `${JSON.stringify({ error })}\n`;
}

/** One `{"progress": ...}` line: `done` of `total` `unit`s in `phase`. */
export function progressLine(phase: string, done: number, total: number, unit: string): string {
  return `${JSON.stringify({ progress: { phase, done, total, unit } })}\n`;
}
