/** @deltacells/core: the deltacells v2 tile codec and datasets. Browser-safe; Node extras in `./node`. */

export * from "./atlas/index.js";
export * from "./codec/index.js";
export * from "./dataset/index.js";
export {
  DeltacellsError,
  type DeltacellsErrorOptions,
  type DeltacellsErrorTag,
  isDeltacellsError,
} from "./errors.js";
export * from "./loader/index.js";
export * from "./obs/index.js";
export * from "./stats/index.js";
