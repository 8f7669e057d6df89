/**
 * The `--json` spelling of what the libraries return in TypeScript's camelCase: every key the
 * command prints is snake_case, as the formats' own files spell theirs (docs/cli.md lists them).
 */
import type { CodecInfo } from "@deltacells/core";
import type { StoreStats } from "@deltacells/storage";

/** `--stats` as JSON: requests per operation, bytes read and written, misses and errors. */
export function statsJson(s: StoreStats) {
  return {
    requests: {
      get: s.requests.get,
      get_range: s.requests.getRange,
      set: s.requests.set,
      delete: s.requests.delete,
      list: s.requests.list,
    },
    bytes_read: s.bytesRead,
    bytes_written: s.bytesWritten,
    missing: s.missing,
    errors: s.errors,
  };
}

/** What decodes tiles on this machine (`inspect --stats`). */
export function codecJson(c: CodecInfo) {
  return {
    kernel: c.kernel,
    ...(c.isa !== undefined ? { isa: c.isa } : {}),
    ...(c.kernelUnavailable !== undefined ? { kernel_unavailable: c.kernelUnavailable } : {}),
    zstd: c.zstd,
    fused: c.fused,
  };
}
