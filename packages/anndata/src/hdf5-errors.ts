/**
 * HDF5's errors in one line. By default the HDF5 library prints its whole error stack (dozens of
 * `HDF5-DIAG` lines per failure) to stderr, where a user sees a dump and not the one line that
 * matters. With h5wasm's throwing handler the stack becomes the message of a thrown `Error`
 * instead; {@link hdf5Reason} picks the innermost entry, the one that says what was wrong
 * ("truncated file: eof = ..."), and says it in words.
 */

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
