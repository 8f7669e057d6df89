/**
 * Node-only storage: the local-folder backend, an `openStore` that also opens local paths and
 * `file://` URLs and reads S3 settings from the AWS environment variables, and the local path a
 * location names (`localPath`). Everything from the
 * browser-safe entry point is re-exported, except its `openStore`, which this one replaces.
 */

export { FolderStore, type FolderStoreOptions } from "./folder.js";
export * from "./index.js";
export { localPath } from "./local-path.js";
export { openStore } from "./node-open.js";
export { processAlive } from "./process-alive.js";
