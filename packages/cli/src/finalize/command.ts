/**
 * `deltacells finalize OUTPUT`: completes an atlas built by tasks. Every task's completion record
 * is checked against the objects it lists; while any task is missing or inconsistent nothing is
 * written and each is named with the command that runs it again. Then obs/schema.json and
 * manifest.json are written, the manifest last.
 */
import { AtlasIncomplete } from "@deltacells/core";
import { finalizeAtlasAt } from "@deltacells/core/node";
import { COMMON_HELP, count, parse } from "../args.js";
import type { CommandResult } from "../command.js";
import { formatBytes, formatCount } from "../format.js";
import { ProgressBar } from "../progress.js";
import { leftoverLine } from "../summary.js";

export const FINALIZE_HELP = `usage: deltacells finalize OUTPUT [options]

Complete an atlas built with \`deltacells plan\` and its tasks (\`deltacells convert --plan OUTPUT
--task I\`): check every task's completion record against the tiles and obs shards it wrote
(sizes, checksums) and the nonzeros and counts of all against the plan, then write
obs/schema.json and manifest.json, the manifest last. While a task is missing or inconsistent it
writes nothing and lists them, each with the command to run it again. Running it again on a
finalized dataset changes nothing.

options:
  --break-lock   delete a writer lock left by a killed step (only when nothing else writes there)
  --quiet        no progress bar
${COMMON_HELP}`;

/** The options of `deltacells finalize` besides the shared ones (args.ts). */
export const FINALIZE_OPTIONS = { "break-lock": { type: "boolean" }, quiet: { type: "boolean" } } as const;

export async function finalize(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, FINALIZE_OPTIONS, ["OUTPUT"]);
  if (values.help) return { text: FINALIZE_HELP };
  const output = positionals[0]!;
  const started = performance.now();
  const bar = new ProgressBar(process.stderr, Boolean(process.stderr.isTTY) && !values.quiet && !values.json);
  try {
    bar.phase("check");
    const done = await finalizeAtlasAt(output, {
      ...locations.targetOptions("deltacells finalize"),
      breakLock: values["break-lock"] === true,
      onProgress: (d, total) => bar.update(d, total, "tasks"),
    });
    bar.finish();
    const m = done.manifest;
    const nnz = m.tile_nnz.reduce((a, b) => a + b, 0);
    const seconds = (performance.now() - started) / 1000;
    const json = {
      output: done.store.url,
      finalized: done.finalized,
      n_cells: m.n_cells,
      n_genes: m.n_genes,
      nnz,
      n_tiles: m.tile_cells.length,
      n_tasks: done.plan?.tasks.length ?? null,
      bytes: done.bytes,
      has_obs: m.has_obs,
      removed_temp_files: done.removedTempFiles,
      seconds,
    };
    const text = done.finalized
      ? `finalized ${done.store.url}: ${count(done.plan!.tasks.length, "task")} checked
  ${formatCount(m.n_cells)} cells x ${formatCount(m.n_genes)} genes, ${formatCount(nnz)} nonzeros in ${count(m.tile_cells.length, "tile")}, ${formatBytes(done.bytes)}, in ${seconds.toFixed(1)} s${leftoverLine(done.removedTempFiles)}`
      : `${done.store.url} is finalized already (it has its manifest.json): nothing to do`;
    return { text, json, store: done.store };
  } catch (err) {
    if (err instanceof AtlasIncomplete) {
      const rerun = (tasks: number[]) =>
        tasks.length === 1
          ? `deltacells convert --plan ${output} --task ${tasks[0]}`
          : `deltacells convert --plan ${output} --task I for I in ${tasks.join(" ")} (a job array: --array=${tasks.join(",")})`;
      throw new AtlasIncomplete(AtlasIncomplete.describe(output, err.problems, err.total, rerun), {
        object: err.object!,
        problems: err.problems,
        total: err.total,
      });
    }
    throw err;
  } finally {
    bar.finish();
  }
}
