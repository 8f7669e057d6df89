/**
 * `convert` of an atlas: several inputs (or one with atlas options) into one dataset in this
 * process, with the one-input guarantees (the lock, `--overwrite` staging, the manifest last); and
 * one task of a plan (`convert --plan OUTPUT --task I`), written straight into the shared output.
 */
import { availableParallelism } from "node:os";
import {
  type AtlasPlanOptions,
  checkIdentity,
  createTilePool,
  DEFAULT_LEVEL,
  type PlanInput,
  readPlan,
  taskStep,
  type WriteStatsResult,
} from "@deltacells/core";
import { buildAtlasAt, inputIdentity, openAtlasTarget, zstdCompressor } from "@deltacells/core/node";
import { count } from "../args.js";
import { explainAtlasError, inputOpener } from "../atlas-options.js";
import { describePlan } from "../atlas-report.js";
import type { CommandResult } from "../command.js";
import { CliError } from "../errors.js";
import { formatBytes, formatCount } from "../format.js";
import type { Locations } from "../locations.js";
import { explainObsError, OBS_ZSTD_LEVEL } from "../obs-options.js";
import type { ProgressBar } from "../progress.js";
import {
  companionLine,
  companionSummary,
  datasetSummary,
  leftoverLine,
  statsLine,
  statsSummary,
} from "../summary.js";
import { companionWriter, writeCompanionParts } from "./companion.js";
import { type EmbeddingRowsReport, type RowsChoice, rowsLine } from "./embedding-rows.js";

/** Opens a plan's input, refusing one that changed since it was scanned. */
function planOpener(locations: Locations, read: Record<string, unknown>, hdf5Timeout: number | undefined) {
  const open = inputOpener(locations, read, hdf5Timeout);
  return async (input: PlanInput) => {
    checkIdentity(input.path, input.identity, await inputIdentity(input.path));
    return open(input.path);
  };
}

export interface ConvertAtlasOptions {
  /** How the command reaches its inputs and output. */
  locations: Locations;
  output: string;
  options: AtlasPlanOptions;
  hdf5Timeout: number | undefined;
  threads: number;
  overwrite: boolean;
  breakLock: boolean;
  sporadik: boolean;
  /** Whether the companion's rows in embedding order are written too (`--sporadik-rows`, `--no-sporadik-rows`). */
  rows: RowsChoice;
  /** Where their temporary files go (`--tmp-dir`; default beside a local output). */
  tmpDir: string | undefined;
  /** The companion's chunks checksummed (see `--no-checksums`). */
  checksums: boolean;
  bar: ProgressBar;
}

/** Several inputs into one dataset, in this process. */
export async function convertAtlas(o: ConvertAtlasOptions): Promise<CommandResult> {
  const { output, options, bar } = o;
  const started = performance.now();
  const paths = options.paths;
  const open = inputOpener(o.locations, options.read ?? {}, o.hdf5Timeout);
  const pool = createTilePool({ threads: o.threads });
  let phase = "";
  const companion = o.sporadik
    ? companionWriter(o.locations, { output, threads: o.threads, bar, checksums: o.checksums })
    : undefined;
  let stats: WriteStatsResult | undefined;
  let rows: EmbeddingRowsReport | undefined;
  const rowsWanted = o.rows;
  try {
    const { manifest, bytes, plan, store, removedTempFiles } = await buildAtlasAt(
      output,
      paths.map((path) => ({ path, open: () => open(path), identity: () => inputIdentity(path) })),
      {
        ...o.locations.targetOptions(),
        overwrite: o.overwrite,
        breakLock: o.breakLock,
        ...options,
        encoder: pool,
        compress: zstdCompressor(DEFAULT_LEVEL),
        obsCompress: zstdCompressor(OBS_ZSTD_LEVEL),
        inFlight: o.threads + 2,
        onProgress: (p) => {
          const label =
            p.phase === "totals" ? `scan ${(p.input ?? 0) + 1}/${p.inputs ?? paths.length}` : "tiles";
          if (label !== phase) {
            phase = label;
            bar.phase(label);
          }
          bar.update(p.cellsDone, p.nCells, "cells");
        },
        // The companion is written from the same cells as the tiles; the dataset moves into place
        // with it named. Then the statistics and the rows in embedding order (each named once complete).
        ...(companion
          ? {
              companion: companion.write,
              afterCommit: async (store) => {
                bar.finish();
                // The tiles are written: their workers' memory goes back before the statistics
                // and the rows in embedding order add their own.
                await pool.close();
                ({ stats, rows } = await writeCompanionParts(o.locations, output, store, {
                  threads: o.threads,
                  bar,
                  checksums: o.checksums,
                  rows: rowsWanted,
                  tmpDir: o.tmpDir,
                  breakLock: o.breakLock,
                  companion: "written",
                  writer: "deltacells convert",
                }));
              },
            }
          : {}),
      },
    );
    const seconds = (performance.now() - started) / 1000;
    const summary = {
      inputs: paths,
      output: store.url,
      n_inputs: paths.length,
      ...datasetSummary(manifest, bytes),
      dropped: plan.dropped,
      notes: plan.notes,
      ...companionSummary(companion?.report()),
      ...statsSummary(stats),
      ...(rows ? { sporadik_rows: { ...rows } } : {}),
      removed_temp_files: removedTempFiles,
      seconds,
    };
    const described = describePlan(plan)
      .split("\n")
      .filter((l) => !l.startsWith("  1 task"));
    const text = `converted ${count(paths.length, "input")} -> ${store.url}
${described.join("\n")}
  ${formatBytes(bytes)} written (tiles: ${summary.tile_bytes_per_nonzero.toFixed(3)} bytes per nonzero) in ${seconds.toFixed(1)} s${companionLine(companion?.report())}${statsLine(stats)}${rowsLine(rows, rowsWanted)}${leftoverLine(removedTempFiles)}`;
    return { text, json: summary, store };
  } catch (err) {
    throw explainAtlasError(explainObsError(err));
  } finally {
    bar.finish();
    await pool.close();
  }
}

/** One task of the plan at `output`. */
export async function convertPlanTask(o: {
  locations: Locations;
  output: string;
  task: (count: number) => number;
  hdf5Timeout: number | undefined;
  threads: number;
  bar: ProgressBar;
}): Promise<CommandResult> {
  const started = performance.now();
  const target = await openAtlasTarget(o.output, o.locations.atlasTargetOptions("deltacells convert --plan"));
  const plan = await readPlan(target.store);
  if (plan === undefined) {
    throw new CliError(
      `${o.output} has no atlas plan (.deltacells-atlas/plan.json): make it first with deltacells plan INPUT... ${o.output} --tasks N`,
      {
        tag: "NotFound",
        object: `${target.store.url}/.deltacells-atlas/plan.json`,
      },
    );
  }
  const t = o.task(plan.tasks.length);
  if (t >= plan.tasks.length) {
    throw new CliError(
      `task ${t} is not in the plan of ${o.output}, which has ${count(plan.tasks.length, "task")} (0 .. ${plan.tasks.length - 1})`,
      {
        tag: "Usage",
        object: o.output,
        expected: `0 .. ${plan.tasks.length - 1}`,
        found: t,
      },
    );
  }
  const open = planOpener(o.locations, plan.read, o.hdf5Timeout);
  const pool = createTilePool({ threads: o.threads });
  try {
    o.bar.phase(`task ${t}`);
    const { record } = await taskStep(target.store, t, {
      open: (input) => open(input),
      encoder: pool,
      compress: zstdCompressor(OBS_ZSTD_LEVEL),
      inFlight: o.threads + 2,
      onProgress: (p) => o.bar.update(p.cellsDone, p.nCells, "cells"),
    });
    o.bar.finish();
    const [t0, t1] = plan.tasks[t]!.tiles;
    const bytes =
      record.tiles.reduce((a, x) => a + x.bytes, 0) + record.shards.reduce((a, x) => a + x.bytes, 0);
    const cells = record.tiles.reduce((a, x) => a + x.cells, 0);
    const seconds = (performance.now() - started) / 1000;
    const json = {
      output: target.store.url,
      plan: plan.id,
      task: t,
      n_tasks: plan.tasks.length,
      tiles: [t0, t1],
      n_cells: cells,
      nnz: record.nnz,
      bytes,
      seconds,
    };
    const text =
      t0 === t1
        ? `task ${t} of ${plan.tasks.length} has nothing to write (more tasks than obs shards); done`
        : `task ${t} of ${plan.tasks.length}: tiles ${t0} .. ${t1 - 1}, ${formatCount(cells)} cells, ${formatCount(record.nnz)} nonzeros, ${formatBytes(bytes)} in ${seconds.toFixed(1)} s (${availableParallelism() > 1 ? `${o.threads} threads` : "1 thread"})`;
    return { text, json, store: target.store };
  } catch (err) {
    throw explainAtlasError(explainObsError(err));
  } finally {
    o.bar.finish();
    await pool.close();
  }
}
