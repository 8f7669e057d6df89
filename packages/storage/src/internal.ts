/**
 * @deltacells/storage/internal: what the other deltacells packages (the CLI) share with this one
 * and a program should not build on. UNSTABLE: any release may change or remove any of it.
 *
 * @internal
 * @module
 */
export { formatBytes } from "./stats.js";
