/**
 * zstd-napi, an optional dependency of the Node entry: native zstd where it installed and built,
 * else undefined (and why), in which case the Node entry decodes and encodes with zarrita's
 * WebAssembly zstd like the browser entry (same bytes, slower).
 */
import { createRequire } from "node:module";
import type Binding from "zstd-napi/binding.js";

let failure: string | undefined;

/** The binding, loaded once on import; undefined when zstd-napi is missing or did not build. */
export const napi: typeof Binding | undefined = (() => {
  try {
    return createRequire(import.meta.url)("zstd-napi/binding.js") as typeof Binding;
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
    return undefined;
  }
})();

/** Why {@link napi} is undefined, when it is. */
export const napiFailure: string | undefined = failure;
