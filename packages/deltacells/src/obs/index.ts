/** The obs sidecar (spec: "Obs"): browser-safe parts. The local Arrow cache is in `./node.ts`. */
export { type AnnDataObs, anndataObs, cellNames, sourceGeneNames } from "./anndata-obs.js";
export { categoryLabels, ObsColumn, ObsFrame } from "./frame.js";
export { memoryLocalizer, type ObsLoadOptions, type ObsLocalizer } from "./localize.js";
export { type ObsWriteOptions, UnknownObsExclude, UnsupportedObsColumns } from "./prepare.js";
export {
  DEFAULT_MAX_CATEGORIES,
  DEFAULT_OBS_TILES_PER_FILE,
  type ObsArrowType,
  type ObsColumnSchema,
  type ObsKind,
  type ObsNumericType,
  type ObsSchema,
} from "./schema.js";
