/**
 * Helpers for the page side of browser tests (bundled into the page, so browser-safe): results
 * crossing `page.evaluate` must be JSON-able, so typed arrays become plain arrays and errors
 * become plain objects that keep their tagged fields.
 */

/** A typed array (or bigint array) as a plain array of numbers. */
export function plain(a: ArrayLike<number> | ArrayLike<bigint>): number[] {
  return Array.from(a as ArrayLike<number | bigint>, Number);
}

/** What a test needs to know about an error thrown in the page. */
export interface ErrorInfo {
  name: string;
  message: string;
  _tag?: string;
  /** The error's own fields that are JSON-able (field, expected, found, status...). */
  fields: Record<string, unknown>;
}

/** An error as a JSON-able object (its own enumerable fields included, bigints as strings). */
export function errorInfo(err: unknown): ErrorInfo {
  if (!(err instanceof Error)) return { name: typeof err, message: String(err), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) {
    if (k === "cause") continue;
    fields[k] = typeof v === "bigint" ? v.toString() : v;
  }
  const tag = (err as { _tag?: unknown })._tag;
  return {
    name: err.name,
    message: err.message,
    ...(typeof tag === "string" ? { _tag: tag } : {}),
    fields: JSON.parse(JSON.stringify(fields)) as Record<string, unknown>,
  };
}

/** Runs `f` and returns the error it throws as {@link ErrorInfo}; fails if it does not throw. */
export async function caught(f: () => unknown): Promise<ErrorInfo> {
  try {
    await f();
  } catch (err) {
    return errorInfo(err);
  }
  throw new Error("expected the call to throw, but it returned");
}
