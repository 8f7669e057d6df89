/**
 * Pinning a package's public API, as zarrita's tests do: the sorted names an entry point exports
 * at run time, each with its kind, so adding, removing or renaming an export is a visible change
 * to a test and never an accident. (Type-only exports leave no trace at run time; tsc checks them
 * where they are used.)
 */
import assert from "node:assert/strict";

/** What an export is at run time. */
function kindOf(value: unknown): string {
  if (typeof value === "function")
    return /^class[\s{]/.test(Function.prototype.toString.call(value)) ? "class" : "function";
  if (value === null) return "null";
  if (value instanceof Set) return "set";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** `name: kind` for every run-time export of `module`, sorted by name. */
export function exportsOf(module: object): string[] {
  return Object.keys(module)
    .sort()
    .map((name) => `${name}: ${kindOf((module as Record<string, unknown>)[name])}`);
}

/**
 * A `./node` entry is a superset of `.`: every export of `.` is there, the same object, except the
 * ones it deliberately replaces (same name, a Node flavour), which are listed.
 */
export function assertSuperset(browser: object, node: object, replaced: readonly string[]): void {
  const b = browser as Record<string, unknown>;
  const n = node as Record<string, unknown>;
  const missing = Object.keys(b).filter((name) => !(name in n));
  assert.deepEqual(missing, [], "./node leaves out exports of .");
  const differing = Object.keys(b)
    .filter((name) => b[name] !== n[name])
    .sort();
  assert.deepEqual(differing, [...replaced].sort(), "exports ./node replaces with its own");
}
