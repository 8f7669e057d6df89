/**
 * `deltacells plan INPUT... OUTPUT --tasks N`: the plan of an atlas built across machines, from
 * a scan of every input (`--scan`: one input per job array task; `--merge`: the plan from the
 * scans). The tasks then run `deltacells convert --plan OUTPUT --task I`, and `deltacells
 * finalize OUTPUT` completes the dataset.
 */
import {
  DEFAULT_LEVEL,
  DEFAULT_N_CHUNKS,
  DEFAULT_TILE_SIZE,
  isDeltacellsError,
  MissingScans,
  planStep,
  scanStep,
} from "@deltacells/core";
import { inputIdentity, openAtlasTarget, zstdCompressor } from "@deltacells/core/node";
import { COMMON_HELP, count, intOption, parse, UsageError } from "../args.js";
import {
  ATLAS_HELP,
  ATLAS_PARSE_OPTIONS,
  atlasInputs,
  explainAtlasError,
  inputOpener,
  planOptions,
  READ_PARSE_OPTIONS,
  readOptions,
  TASK_INDEX_VARIABLES,
  taskIndex,
} from "../atlas-options.js";
import { describePlan, planJson } from "../atlas-report.js";
import type { CommandResult } from "../command.js";
import { formatCount } from "../format.js";
import { explainObsError, OBS_HELP, OBS_PARSE_OPTIONS, obsOptions } from "../obs-options.js";
import { commandBar } from "../progress.js";
import { leftoverLine } from "../summary.js";

export const PLAN_HELP = `usage: deltacells plan INPUT... OUTPUT --tasks N [options]
       deltacells plan --scan INPUT... OUTPUT [--task I] [options]
       deltacells plan --merge INPUT... OUTPUT --tasks N [options]

Plan an atlas (many inputs into one dataset) built by N tasks, on as many machines: reads each
input once (shape, gene keys, per-gene totals, obs schema and vocabularies) and writes the plan
under OUTPUT (.deltacells-atlas/plan.json) with the gene files. Then run every task,
  deltacells convert --plan OUTPUT --task I        (I = 0 .. N-1, e.g. a job array)
and, once all are done,
  deltacells finalize OUTPUT
The result is byte for byte what \`deltacells convert INPUT... OUTPUT\` writes in one process.

Reading every input is itself long for a large atlas, so it can be a job array too: run
\`plan --scan\` once per input (the input's index from --task or the scheduler), then \`plan
--merge\` once, with the same arguments. OUTPUT is a folder every machine sees, or an s3:// prefix.

The task index (for --scan: the input's) is --task, else ${TASK_INDEX_VARIABLES.join(", ")} (Slurm,
AWS Batch, Kubernetes Indexed Jobs), the first one set.

options:
  --tasks N      tasks to share the tiles among (whole obs shards each; default 1). More tasks
                 than shards leave the extra ones empty
  --scan         scan one input (--task I) and record it under OUTPUT
  --merge        make the plan from the scan records
  --task I       with --scan: the input to scan (0-based)
  --tile-size N  cells per tile (default: ~1M nonzeros per tile, 64 .. ${DEFAULT_TILE_SIZE})
  --chunks N     chunks per tile (default ${DEFAULT_N_CHUNKS})
  --level N      zstd level of the tiles, 1 .. 22 (default ${DEFAULT_LEVEL})
  --layer NAME   AnnData: read layers/NAME instead of X
  --raw          AnnData: read raw/X instead of X
  --transpose    Matrix Market: the file is cells x genes
  --genome NAME  Cell Ranger v2 HDF5 with several genomes: the one to read
  --hdf5-timeout S
                 HDF5 inputs: stop when HDF5 makes no progress for S seconds (default 60)
  --break-lock   delete a writer lock left by a killed step (only when nothing else writes there)
  --quiet        no progress bar
${ATLAS_HELP}
${OBS_HELP}
${COMMON_HELP}`;

/** The options of `deltacells plan` besides the shared ones (args.ts). */
export const PLAN_OPTIONS = {
  tasks: { type: "string" },
  task: { type: "string" },
  scan: { type: "boolean" },
  merge: { type: "boolean" },
  "tile-size": { type: "string" },
  chunks: { type: "string" },
  level: { type: "string" },
  "break-lock": { type: "boolean" },
  quiet: { type: "boolean" },
  ...READ_PARSE_OPTIONS,
  ...ATLAS_PARSE_OPTIONS,
  ...OBS_PARSE_OPTIONS,
} as const;

export async function plan(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, PLAN_OPTIONS, ["ARG..."]);
  if (values.help) return { text: PLAN_HELP };
  if (values.scan && values.merge)
    throw new UsageError("--scan and --merge are two steps: run one, then the other");
  const output = positionals.at(-1)!;
  const inputs = await atlasInputs(positionals.slice(0, -1), values);
  if (inputs.paths.length === 0) throw new UsageError("expected INPUT... OUTPUT (or --inputs LIST OUTPUT)");
  if (values.task !== undefined && !values.scan)
    throw new UsageError(
      "--task applies to plan --scan (the input to scan); a conversion task runs as deltacells convert --plan OUTPUT --task I",
    );
  if (values.scan && values.tasks !== undefined)
    throw new UsageError("--tasks applies to the plan (plan, or plan --merge), not to a scan");
  const tasks = intOption(values, "tasks", 1, 1, 1_000_000)!;
  const options = await planOptions(values, inputs, {
    tileSize: intOption(values, "tile-size", undefined, 1, 2 ** 20),
    nChunks: intOption(values, "chunks", DEFAULT_N_CHUNKS, 1, 4096),
    level: intOption(values, "level", DEFAULT_LEVEL, 1, 22),
    obs: obsOptions(values),
    tasks,
  });
  const { hdf5Timeout } = readOptions(values);
  const open = inputOpener(locations, options.read ?? {}, hdf5Timeout);
  const bar = commandBar(values);
  const n = inputs.paths.length;
  const started = performance.now();
  const scanOne = async (store: Parameters<typeof scanStep>[0], i: number) => {
    const path = inputs.paths[i]!;
    const opened = await open(path);
    try {
      bar.phase(n > 1 ? `scan ${i + 1}/${n}` : "scan");
      return await scanStep(store, options, i, opened.source, {
        identity: await inputIdentity(path),
        onProgress: (done) => bar.update(done, opened.source.nCells, "cells"),
      });
    } finally {
      bar.finish();
      await opened.release();
    }
  };
  try {
    if (values.scan) {
      const i = taskIndex(values, n, "input to scan");
      if (i >= n) throw new UsageError(`--task ${i}: there are ${n} inputs (0 .. ${n - 1})`);
      const target = await openAtlasTarget(output, locations.atlasTargetOptions("deltacells plan --scan"));
      const scan = await scanOne(target.store, i);
      const seconds = (performance.now() - started) / 1000;
      const nnz = scan.geneNnz.reduce((a, b) => a + b, 0);
      return {
        text: `scanned input ${i} of ${n}: ${inputs.paths[i]} (${scan.format}, ${scan.matrixPath})\n  ${formatCount(scan.nCells)} cells x ${formatCount(scan.nGenes)} genes, ${formatCount(nnz)} nonzeros, in ${seconds.toFixed(1)} s; recorded under ${target.store.url}/.deltacells-atlas/scan/`,
        json: {
          input: i,
          n_inputs: n,
          path: inputs.paths[i],
          n_cells: scan.nCells,
          n_genes: scan.nGenes,
          nnz,
          seconds,
        },
        store: target.store,
      };
    }
    const target = await openAtlasTarget(output, {
      lock: true,
      breakLock: values["break-lock"] === true,
      ...locations.atlasTargetOptions(values.merge ? "deltacells plan --merge" : "deltacells plan"),
    });
    try {
      if (!values.merge) for (let i = 0; i < n; i++) await scanOne(target.store, i);
      const made = await planStep(target.store, options, zstdCompressor(DEFAULT_LEVEL));
      const seconds = (performance.now() - started) / 1000;
      const text = `planned ${output} in ${seconds.toFixed(1)} s\n${describePlan(made)}\nnext: run the ${count(made.tasks.length, "task")}, deltacells convert --plan ${output} --task I (I = 0 .. ${made.tasks.length - 1}), then deltacells finalize ${output}${leftoverLine(target.removedTempFiles)}`;
      return { text, json: { ...planJson(made), seconds }, store: target.store };
    } finally {
      await target.lock?.release();
    }
  } catch (err) {
    throw explainPlanError(err, output, inputs.paths.length);
  } finally {
    bar.finish();
  }
}

/** A missing scan told with the command that runs it. */
function explainPlanError(err: unknown, output: string, n: number): unknown {
  if (err instanceof MissingScans) {
    return new (err.constructor as typeof MissingScans)(
      MissingScans.describe(
        output,
        err.problems,
        n,
        (inputs) =>
          `deltacells plan --scan (the same arguments) --task I for I in ${inputs.join(" ")} (a job array: --array=${inputs.join(",")})`,
      ),
      { object: err.object!, problems: err.problems },
    );
  }
  if (isDeltacellsError(err)) return explainAtlasError(explainObsError(err));
  return err;
}
