/**
 * Where an atlas build keeps its own objects under the output, beside the dataset's: the plan, one
 * scan record per input and one completion record per task, all under `.deltacells-atlas/`, which
 * no reader looks at and `finalize` removes once the manifest is written.
 */

/** The prefix of an atlas build's objects. */
export const ATLAS_PREFIX = ".deltacells-atlas/";
/** The plan: inputs, gene space, obs schema, tile size, the tasks' ranges. */
export const PLAN_KEY = `${ATLAS_PREFIX}plan.json`;

const pad = (i: number) => String(i).padStart(6, "0");

/** The scan record of input `i` (everything but its gene table). */
export function scanKey(i: number): string {
  return `${ATLAS_PREFIX}scan/input_${pad(i)}.json`;
}

/** The gene table of input `i`, read by the merge only for inputs that give genes. */
export function scanVarKey(i: number): string {
  return `${ATLAS_PREFIX}scan/input_${pad(i)}.var.json`;
}

/** The completion record of task `t`, written after everything the task wrote. */
export function taskKey(t: number): string {
  return `${ATLAS_PREFIX}tasks/task_${pad(t)}.json`;
}
