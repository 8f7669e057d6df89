/**
 * Node entry point of @deltacells/anndata: {@link openInput} opens any supported input by path.
 * Everything from "." is re-exported.
 */

export { hdf5Reason } from "./hdf5-errors.js";
export * from "./index.js";
export { detectFormat, openInput } from "./open.js";
