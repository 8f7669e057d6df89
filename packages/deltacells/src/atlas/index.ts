/** Atlases: many inputs into one dataset, in one process or across machines. Browser-safe. */
export {
  APPEND_STAGING,
  type AppendOptions,
  type AppendResult,
  appendToDataset,
  type StaleNote,
  type StalePart,
} from "./append.js";
export {
  type AtlasInputRef,
  type BuildAtlasOptions,
  type BuildAtlasResult,
  type BuildProgress,
  buildAtlas,
  type EncodeSettings,
} from "./build.js";
export {
  AtlasIncomplete,
  type FinalizeOptions,
  type FinalizeResult,
  finalizeAtlas,
  type TaskProblem,
} from "./finalize.js";
export type { DroppedGenes, GeneJoin, GeneSpaceOptions } from "./genes.js";
export { sourceNames } from "./keys.js";
export { ATLAS_PREFIX } from "./layout.js";
export { type AtlasObsColumn, ConflictingObsColumn } from "./obs-merge.js";
export type { AtlasPlan, AtlasPlanOptions, PlanInput, PlanTask } from "./plan.js";
export { checkIdentity, type InputIdentity } from "./scan.js";
export type { RowSink, SecondOutput, SecondOutputMatrix } from "./second-output.js";
export { MissingScans, planStep, type ScanStepOptions, scanDigest, scanStep, taskStep } from "./steps.js";
export { readPlan, type ScanProblem } from "./store.js";
export type { OpenedSource, TaskOptions, TaskProgress, TaskRecord, WrittenTile } from "./task.js";
