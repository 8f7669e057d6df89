/** A dataset's precomputed statistics (docs/stats.md) and the marker-gene test over them. Browser-safe. */
export {
  STATS_PATH,
  type StatsColumn,
  type StatsDatasetVersion,
  type StatsIndex,
  type StatsObject,
  TARGET_SUM,
} from "./format.js";
export {
  addRowMoments,
  benjaminiHochberg,
  emptyMoments,
  type MarkerTable,
  rankGenes,
  subtractMoments,
} from "./markers.js";
export { type ColumnStats, DatasetStats, type GeneStats, type Moments, openStats } from "./read.js";
export { studentTwoSided } from "./student-t.js";
export { type WriteStatsOptions, type WriteStatsResult, writeStats } from "./write.js";
