/**
 * @deltacells/core/internal: what the other deltacells packages (the CLI) share with this one and
 * a program should not build on. UNSTABLE: any release may change or remove any of it.
 *
 * @internal
 * @module
 */
export { MANIFEST_KEY, parseManifest, tileKey } from "./dataset/manifest.js";
export { numericValues } from "./obs/schema.js";
