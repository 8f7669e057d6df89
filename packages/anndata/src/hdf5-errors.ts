/**
 * HDF5's errors in one line. By default the HDF5 library prints its whole error stack (dozens of
 * `HDF5-DIAG` lines per failure) to stderr, where a user sees a dump and not the one line that
 * matters. With h5wasm's throwing handler the stack becomes the message of a thrown `Error`
 * instead; {@link hdf5Reason} picks the innermost entry, the one that says what was wrong
 * ("truncated file: eof = ..."), and says it in words.
 */

import { AnndataError, objectIn } from "./errors.js";

/** The part of h5wasm's module used here. */
interface ErrorHandlers {
  activate_throwing_error_handler(): number;
}

/** Make every HDF5 failure throw (with the stack as its message) instead of printing to stderr. */
export function throwHdf5Errors(module: unknown): void {
  (module as ErrorHandlers).activate_throwing_error_handler();
}

/**
 * One line saying why HDF5 failed, from an error thrown with the throwing handler on; `undefined`
 * when `err` is not an HDF5 error stack.
 */
export function hdf5Reason(err: unknown): string | undefined {
  const text = err instanceof Error ? err.message : typeof err === "string" ? err : "";
  if (!text.includes("HDF5-DIAG")) return undefined;
  const entries = [...text.matchAll(/#\d+: .* in [\w.]+\(\): (.*)/g)].map((m) => m[1]!.trim());
  const inner = entries.at(-1);
  if (inner === undefined) return "HDF5 failed without saying why";
  const truncated = /truncated file: eof = (\d+),.*stored_eof = (\d+)/.exec(inner);
  if (truncated) {
    const [have, want] = [Number(truncated[1]), Number(truncated[2])].map((n) => n.toLocaleString("en-US"));
    return `the file is truncated (${have} of its ${want} bytes are there): copy or download it again`;
  }
  if (/file signature not found/.test(inner)) return "it is not an HDF5 file (no HDF5 signature)";
  return inner;
}

/**
 * Whether `err` is the WebAssembly module aborting (`Aborted(...)`, emscripten's `abort()`): after
 * it the module is dead, and every later call fails the same way.
 */
export function isWasmAbort(err: unknown): boolean {
  const text = err instanceof Error ? err.message : typeof err === "string" ? err : "";
  return /^Aborted\(/.test(text);
}

/**
 * The tagged error for a failure of HDF5 (or of the h5wasm module) while reading `object` of the
 * file at `location`: an HDF5 error stack, an h5wasm failure ("name not defined"), a WebAssembly
 * trap ("memory access out of bounds") or an abort. Never an empty group or a partial read: the
 * caller stops. An {@link AnndataError} passes through unchanged.
 */
export function hdf5Failure(location: string, object: string, cause: unknown): AnndataError {
  if (cause instanceof AnndataError) return cause;
  const what = object === "" ? "the root group" : object;
  const text = cause instanceof Error ? cause.message : String(cause);
  // h5wasm's own message when HDF5 failed to open an object without saying why
  const reason =
    hdf5Reason(cause) ??
    (/name not defined/.test(text) ? "it cannot be opened" : text.split("\n")[0]!.trim());
  const message = isWasmAbort(cause)
    ? `${location}: the HDF5 reader (h5wasm) aborted while reading ${what}; the file is probably damaged. ` +
      "Check that h5py reads it; if it does, report this with the file."
    : `${location}: HDF5 could not read ${what}: ${reason}. The file is damaged or incompletely written: ` +
      "copy or write it again (h5py reports the same error when it reads this object).";
  return new AnndataError(message, { tag: "MalformedInput", object: objectIn(location, object), cause });
}

/** Runs `read` (h5wasm calls on `object`), turning every failure into {@link hdf5Failure}. */
export function guarded<T>(location: string, object: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw hdf5Failure(location, object, err);
  }
}
