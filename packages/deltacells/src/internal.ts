/**
 * @deltacells/core/internal: what the other deltacells packages (the CLI) share with this one and
 * a program should not build on. UNSTABLE: any release may change or remove any of it.
 *
 * Light, with no dataset reader and no Arrow: `deltacells stream` starts its pool's workers
 * (`poolTileDecoder`) before it loads the rest, and prints its help with the loader's defaults.
 *
 * @internal
 * @module
 */
export { PrefixStore } from "./atlas/prefix-store.js";
export { MANIFEST_KEY, parseManifest, tileKey } from "./dataset/manifest.js";
export { poolTileDecoder } from "./dataset/pool-decoder.js";
export { DEFAULT_BATCH_SIZE, DEFAULT_BUFFER_TILES } from "./loader/options.js";
export { numericValues } from "./obs/schema.js";
