/**
 * `deltacells stats DATASET`: computes the dataset's statistics (docs/stats.md) and names them in
 * its manifest, for a dataset converted without `--sporadik`, before statistics existed, or
 * changed since (their index records the version they describe; a reader refuses another's).
 */
import { availableParallelism } from "node:os";
import { STATS_PATH } from "@deltacells/core";
import { writeStatsAt } from "@deltacells/core/node";
import { COMMON_HELP, intOption, parse } from "../args.js";
import type { CommandResult } from "../command.js";
import { openCountedDataset } from "../io.js";
import { commandBar } from "../progress.js";
import { statsText } from "../summary.js";

export const STATS_HELP = `usage: deltacells stats DATASET [options]

Compute a dataset's statistics and write them under DATASET/stats/: per gene the sum, sum of
squares and nonzero count of log1p(counts per 10,000) over every cell, and its total count; per
cell its total count; per category of each categorical obs column (up to 1,000 categories) the
same three sums per gene. The viewer reads them for marker genes (a t-test of any selection
against the rest, as scanpy's rank_genes_groups), dot plots and colour scales, without reading
the counts of the cells outside the selection. One pass over the tiles; the objects are written
first, their index stats/stats.json next, the manifest naming them last, so an interrupted run
leaves the dataset and its earlier statistics as they were.

convert --sporadik computes them already. Run this for a dataset converted before, or after the
dataset changed: statistics record the version of the dataset they describe, and readers refuse
those of another version (cells appended, converted again).

options:
  --threads N    decoding threads (default: the number of cores)
  --break-lock   delete a writer lock (DATASET/.deltacells-lock) left by a killed writer; only when
                 nothing else is writing to DATASET
  --quiet        no progress bar
${COMMON_HELP}`;

/** The options of `deltacells stats` besides the shared ones (args.ts). */
export const STATS_OPTIONS = {
  threads: { type: "string" },
  quiet: { type: "boolean" },
  "break-lock": { type: "boolean" },
} as const;

export async function stats(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, STATS_OPTIONS, ["DATASET"]);
  if (values.help) return { text: STATS_HELP };
  const location = positionals[0]!;
  const threads = intOption(values, "threads", availableParallelism(), 1, 256)!;
  const bar = commandBar(values);
  const started = performance.now();
  // A location holding nothing, or a file, is named as such before any lock is taken there.
  await openCountedDataset(locations, location);
  try {
    bar.phase("stats");
    const result = await writeStatsAt(location, {
      ...locations.targetOptions("deltacells stats"),
      breakLock: values["break-lock"] === true,
      threads,
      onProgress: (done, total) => bar.update(done, total, "tiles"),
    });
    bar.finish();
    const { store, index } = result;
    const seconds = (performance.now() - started) / 1000;
    const json = {
      url: store.url,
      path: STATS_PATH,
      bytes: result.bytes,
      n_cells: index.dataset.n_cells,
      n_genes: index.dataset.n_genes,
      columns: index.columns.map((c) => ({ name: c.name, categories: c.categories, missing: c.missing })),
      skipped: index.skipped,
      seconds,
    };
    return { text: `${store.url}: ${statsText(result)}, in ${seconds.toFixed(1)} s`, json, store };
  } finally {
    bar.finish();
  }
}
