/** The obs sidecar (spec: "Obs"): browser-safe parts. The local Arrow cache is in `./node.ts`. */
export { arrowType, columnTable, decodeColumnFile, encodeColumnFile } from "./arrow.js";
export { fingerprintJson, obsFingerprint, pythonJsonString, sha256Hex } from "./fingerprint.js";
export { categoryLabels, ObsColumn, ObsFrame } from "./frame.js";
export { memoryLocalizer, type ObsLoadOptions, type ObsLocalizer } from "./localize.js";
export { AUTO_EMBEDDING_MAX_COLUMNS, autoEmbeddingKeys, embeddingColumnName } from "./plan.js";
export {
  defaultIndexColumn,
  type ObsMetadata,
  type ObsWriteOptions,
  prepareObs,
  UnsupportedObsColumns,
} from "./prepare.js";
export { ObsShards } from "./read.js";
export {
  categoryCodeType,
  DEFAULT_MAX_CATEGORIES,
  DEFAULT_OBS_TILES_PER_FILE,
  numericValues,
  OBS_SCHEMA_FORMAT,
  OBS_SCHEMA_KEY,
  OBS_SCHEMA_VERSION,
  type ObsArrowType,
  type ObsColumnSchema,
  type ObsKind,
  type ObsNumericType,
  type ObsSchema,
  obsShardKey,
  parseObsSchema,
} from "./schema.js";
export { type ObsProblem, validateObs } from "./validate.js";
export { type ObsManifestFields, ObsWriter, obsSchemaText } from "./write.js";
