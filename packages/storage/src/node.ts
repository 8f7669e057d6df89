/** Node-only storage backends. */
export { FolderStore } from "./folder.js";
