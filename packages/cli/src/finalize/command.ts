/**
 * `deltacells finalize OUTPUT`: completes an atlas built by tasks. Every task's completion record
 * is checked against the objects it lists; while any task is missing or inconsistent nothing is
 * written and each is named with the command that runs it again. Then obs/schema.json and
 * manifest.json are written, the manifest last; with `--sporadik`, then the companion, its
 * statistics and its rows in embedding order, under the same lock, each named once complete
 * (`writeCompanionParts`), so that finalize run again completes what a cut run left.
 */
import { availableParallelism } from "node:os";
import { AtlasIncomplete, nnzOf } from "@deltacells/core";
import { finalizeAtlasAt } from "@deltacells/core/node";
import { isDeltacellsFamilyError, TaggedError } from "@deltacells/storage";
import { COMMON_HELP, count, intOption, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import {
  type CompanionPart,
  type CompanionPartsReport,
  companionPartsFromFlags,
  writeCompanionParts,
} from "../convert/companion.js";
import { ROWS_PARSE_OPTIONS, rowsChoice, rowsLine } from "../convert/embedding-rows.js";
import { formatBytes, formatCount } from "../format.js";
import { commandBar } from "../progress.js";
import { companionLine, companionSummary, leftoverLine, statsLine, statsSummary } from "../summary.js";

export const FINALIZE_HELP = `usage: deltacells finalize OUTPUT [options]

Complete an atlas built with \`deltacells plan\` and its tasks (\`deltacells convert --plan OUTPUT
--task I\`): check every task's completion record against the tiles and obs shards it wrote
(sizes, checksums) and the nonzeros and counts of all against the plan, then write
obs/schema.json and manifest.json, the manifest last. While a task is missing or inconsistent it
writes nothing and lists them, each with the command to run it again. Running it again on a
finalized dataset changes nothing, unless --sporadik finds a part of it missing.

With --sporadik, once the manifest is written: the sporadik companion (OUTPUT/sporadik/, from the
tiles), the statistics (OUTPUT/stats/) and, when obs has an embedding, the companion's rows in
embedding order (OUTPUT/sporadik-rows/), the bytes \`deltacells convert INPUT... OUTPUT --sporadik\`
writes in one process. Each is named in the manifest once complete: a finalize cut at any point
leaves a complete dataset naming each complete or not at all, and running it again writes what is
not named complete yet (a part named complete is kept, not written again).

options:
  --sporadik     write the companion, the statistics and the rows in embedding order (above)
  --sporadik-rows
                 with --sporadik: the rows in embedding order, refusing an atlas without an
                 embedding (instead of leaving them out)
  --no-sporadik-rows
                 with --sporadik: no rows in embedding order
  --tmp-dir DIR  where the companion's rows in embedding order are sorted through temporary files
                 (default: beside a local OUTPUT, else the system's)
  --no-checksums the companion without checksums (Python sporadik's default bytes)
  --threads N    with --sporadik: encoding and decoding threads (default: the number of cores)
  --break-lock   delete a writer lock left by a killed step, the companion's too (only when nothing
                 else writes there)
  --quiet        no progress bar
${COMMON_HELP}`;

/** The options of `deltacells finalize` besides the shared ones (args.ts). */
export const FINALIZE_OPTIONS = {
  sporadik: { type: "boolean" },
  ...ROWS_PARSE_OPTIONS,
  "no-checksums": { type: "boolean" },
  threads: { type: "string" },
  "break-lock": { type: "boolean" },
  quiet: { type: "boolean" },
} as const;

/** How the report names the parts a finalize run again found complete. */
const PART_NAMES: Record<CompanionPart, string> = {
  companion: "the sporadik companion",
  statistics: "the statistics",
  rows: "the rows in embedding order",
};

export async function finalize(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, FINALIZE_OPTIONS, ["OUTPUT"]);
  if (values.help) return { text: FINALIZE_HELP };
  const output = positionals[0]!;
  const rowsWanted = rowsChoice(values);
  for (const flag of ["tmp-dir", "no-checksums", "threads"]) {
    if (values[flag] !== undefined && values.sporadik !== true)
      throw new UsageError(`--${flag} applies with --sporadik only (the companion and what is made from it)`);
  }
  if (values["tmp-dir"] !== undefined && rowsWanted === "never")
    throw new UsageError("--tmp-dir applies to --sporadik's rows in embedding order only");
  const threads = intOption(values, "threads", availableParallelism(), 1, 256)!;
  const started = performance.now();
  const bar = commandBar(values);
  let parts: CompanionPartsReport | undefined;
  try {
    bar.phase("check");
    const done = await finalizeAtlasAt(output, {
      ...locations.targetOptions("deltacells finalize"),
      breakLock: values["break-lock"] === true,
      onProgress: (d, total) => bar.update(d, total, "tasks"),
      ...(values.sporadik
        ? {
            afterFinalize: async (store) => {
              bar.finish();
              try {
                parts = await writeCompanionParts(
                  locations,
                  output,
                  store,
                  companionPartsFromFlags(values, {
                    threads,
                    bar,
                    rows: rowsWanted,
                    companion: "complete",
                    writer: "deltacells finalize",
                  }),
                );
              } catch (err) {
                throw finalizedAlready(err, output);
              }
            },
          }
        : {}),
    });
    bar.finish();
    const m = done.manifest;
    const nnz = nnzOf(m);
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
      ...companionSummary(parts?.companion),
      ...statsSummary(parts?.stats),
      ...(parts?.rows ? { sporadik_rows: { ...parts.rows } } : {}),
      ...(parts ? { kept: parts.kept } : {}),
      seconds,
    };
    const wrote = parts !== undefined && (parts.companion ?? parts.stats ?? parts.rows) !== undefined;
    const names = (parts?.kept ?? []).map((p) => PART_NAMES[p]);
    const kept = names.length
      ? `\n  kept ${names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : names[0]}: named in the manifest and complete, not written again`
      : "";
    // Rows left out by default say why; kept ones need no such line.
    const rows = parts && !parts.kept.includes("rows") ? rowsLine(parts.rows, rowsWanted) : "";
    const sporadik = parts ? `${companionLine(parts.companion)}${statsLine(parts.stats)}${rows}${kept}` : "";
    const text = done.finalized
      ? `finalized ${done.store.url}: ${count(done.plan!.tasks.length, "task")} checked
  ${formatCount(m.n_cells)} cells x ${formatCount(m.n_genes)} genes, ${formatCount(nnz)} nonzeros in ${count(m.tile_cells.length, "tile")}, ${formatBytes(done.bytes)}, in ${seconds.toFixed(1)} s${sporadik}${leftoverLine(done.removedTempFiles)}`
      : wrote
        ? `${done.store.url} is finalized already (it has its manifest.json); completed what it lacked in ${seconds.toFixed(1)} s${sporadik}`
        : `${done.store.url} is finalized already (it has its manifest.json): nothing to do${sporadik}`;
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

/**
 * A failure after the manifest (writing the companion, the statistics or the rows), told with
 * what the user has and what to run: the atlas is complete, and finalize run again writes the
 * parts not named complete. The tag and the object stay the failure's.
 */
function finalizedAlready(err: unknown, output: string): unknown {
  const next = ` The atlas at ${output} is finalized (its manifest.json is written) without the parts not named complete yet; once that is fixed, run \`deltacells finalize ${output} --sporadik\` again to write them.`;
  if (!isDeltacellsFamilyError(err)) {
    if (!(err instanceof Error)) return err;
    // A system error (a full disk, a folder in the way) keeps its code, which the report shows.
    const code = (err as NodeJS.ErrnoException).code;
    return Object.assign(new Error(`${sentence(err.message)}${next}`, { cause: err }), code ? { code } : {});
  }
  return new TaggedError(
    { package: "@deltacells/cli", name: err.name },
    err._tag,
    `${sentence(err.message)}${next}`,
    {
      object: err.object,
      expected: err.expected,
      found: err.found,
      cause: err,
    },
  );
}

/** `message` ending with a full stop, so that the next sentence can follow it. */
function sentence(message: string): string {
  return /[.!?]$/.test(message.trimEnd()) ? message.trimEnd() : `${message.trimEnd()}.`;
}
