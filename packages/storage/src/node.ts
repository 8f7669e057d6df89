/**
 * Node-only storage: the local-folder backend and an `openStore` that also opens local paths and
 * `file://` URLs and reads S3 settings from the AWS environment variables. Everything from the
 * browser-safe entry point is re-exported, except its `openStore`, which this one replaces.
 */

export { FolderStore, type FolderStoreOptions } from "./folder.js";
export * from "./index.js";
export { openStore } from "./node-open.js";
