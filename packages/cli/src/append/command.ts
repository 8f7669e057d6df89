/**
 * `deltacells append DATASET NEW_INPUT...`: adds cells at the end of a dataset, writing only what
 * changes, staged inside the dataset and moved into place with the manifest last (see
 * `appendToDatasetAt` in @deltacells/core/node).
 */
import { availableParallelism } from "node:os";
import { APPEND_STAGING, createTilePool, DEFAULT_LEVEL } from "@deltacells/core";
import { appendToDatasetAt, inputIdentity, zstdCompressor } from "@deltacells/core/node";
import { COMMON_HELP, count, intOption, parse, UsageError } from "../args.js";
import {
  ATLAS_PARSE_OPTIONS,
  atlasInputs,
  cliWords,
  explainAtlasError,
  inputOpener,
  READ_PARSE_OPTIONS,
  readOptions,
} from "../atlas-options.js";
import type { CommandResult } from "../command.js";
import {
  type CompanionPartsReport,
  companionPartsFromFlags,
  writeCompanionParts,
} from "../convert/companion.js";
import { ROWS_PARSE_OPTIONS, rowsChoice, rowsLine } from "../convert/embedding-rows.js";
import { formatCount } from "../format.js";
import { explainObsError, OBS_ZSTD_LEVEL } from "../obs-options.js";
import { commandBar } from "../progress.js";
import { leftoverLine, statsText } from "../summary.js";

export const APPEND_HELP = `usage: deltacells append DATASET NEW_INPUT... [options]
       deltacells append DATASET --inputs LIST [options]

Add the cells of new inputs at the end of a dataset (a folder or s3:// prefix). The gene space and
order stay: a gene the dataset does not have is refused (or dropped with --drop-unlisted-genes,
and reported); genes are matched as the dataset's were (its var index, or its --var-key). New
categories extend the global vocabularies (existing codes keep their meaning); a new obs column is
null for the old cells; the source column names the new inputs. Only the new tiles, the old last
tile if it was partial, the obs shards that change and a new manifest are written (a new column or
type rewrites every shard). The result equals a fresh conversion of all the inputs with the
dataset's gene order.

It is written under DATASET/${APPEND_STAGING}<id>/ first and moved into place, new tiles first and
manifest.json last: a killed append leaves the old dataset valid; readers opened before see the
old version or refuse a rewritten object ([DatasetChanged]), never a mix. One killed while moving
into place is completed by the next append of the same inputs. One writer at a time (the lock).

options:
  --inputs LIST  a text file of new inputs, one path or URL a line (see convert --help)
  --var-key COL  only as the dataset was converted (genes are matched the same way)
  --drop-unlisted-genes
                 drop the new inputs' genes the dataset does not have, reporting them and their
                 share of counts
  --source-names A,B,...
                 the new inputs' names in the source column (default: their file names, with
                 -2, -3, ... where the dataset has the name: pbmc, pbmc-2)
  --obsm-fill    append new inputs that lack an embedding the dataset has, null for their cells
  --obs-exclude A,B
                 obs columns of the new inputs not to store
  --obsm KEYS    the new inputs' obsm embeddings to read (default: the dataset's)
  --max-categories N
                 categoricals with more categories are stored as strings (default 20,000)
  --layer NAME, --raw, --transpose, --genome NAME, --hdf5-timeout S
                 how the new inputs are read (see convert --help)
  --threads N    encoding threads (default: the number of cores)
  --sporadik     write the sporadik companion (OUTPUT/sporadik/), the statistics (OUTPUT/stats/)
                 and, when obs has an embedding, the companion's rows in embedding order
                 (OUTPUT/sporadik-rows/) again once the cells are added; each is named in the
                 manifest once complete (an append cut before leaves it unnamed, never stale)
  --sporadik-rows
                 with --sporadik: the rows in embedding order, refusing a dataset without an
                 embedding (instead of leaving them out)
  --no-sporadik-rows
                 with --sporadik: no rows in embedding order (the manifest stops naming them)
  --tmp-dir DIR  where the rows in embedding order are sorted through temporary files (default:
                 beside a local DATASET, else the system's)
  --no-checksums the companion without checksums
  --break-lock   delete a writer lock left by a killed writer, the companion's too (only when
                 nothing else writes there)
  --quiet        no progress bar
${COMMON_HELP}`;

/** The options of `deltacells append` besides the shared ones (args.ts). */
export const APPEND_OPTIONS = {
  ...READ_PARSE_OPTIONS,
  inputs: ATLAS_PARSE_OPTIONS.inputs,
  "var-key": ATLAS_PARSE_OPTIONS["var-key"],
  "drop-unlisted-genes": ATLAS_PARSE_OPTIONS["drop-unlisted-genes"],
  "source-names": ATLAS_PARSE_OPTIONS["source-names"],
  "obsm-fill": ATLAS_PARSE_OPTIONS["obsm-fill"],
  "obs-exclude": { type: "string" },
  obsm: { type: "string" },
  "max-categories": { type: "string" },
  threads: { type: "string" },
  sporadik: { type: "boolean" },
  ...ROWS_PARSE_OPTIONS,
  "no-checksums": { type: "boolean" },
  "break-lock": { type: "boolean" },
  quiet: { type: "boolean" },
} as const;

export async function append(argv: string[]): Promise<CommandResult> {
  // The atlas options append does not take, refused with the reason rather than as unknown.
  for (const flag of ["join", "genes", "gene-order", "source-column", "no-source-column"]) {
    if (argv.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`)))
      throw new UsageError(
        `--${flag} does not apply to append: the dataset's genes and source column are fixed`,
      );
  }
  const { values, positionals, locations } = parse(argv, APPEND_OPTIONS, ["DATASET..."]);
  if (values.help) return { text: APPEND_HELP };
  const dataset = positionals[0]!;
  const inputs = await atlasInputs(positionals.slice(1), values);
  if (inputs.paths.length === 0) throw new UsageError("expected DATASET NEW_INPUT... (or --inputs LIST)");
  const names =
    values["source-names"] === undefined
      ? undefined
      : (values["source-names"] as string).split(",").map((s) => s.trim());
  if (names !== undefined && names.length !== inputs.paths.length)
    throw new UsageError(`--source-names gives ${names.length} names for ${inputs.paths.length} new inputs`);
  const listed = inputs.names.some((n) => n !== undefined) ? inputs.names : undefined;
  const threads = intOption(values, "threads", availableParallelism(), 1, 256)!;
  const { read, hdf5Timeout } = readOptions(values);
  const obsm = values.obsm as string | undefined;
  const rowsWanted = rowsChoice(values);
  if (values["tmp-dir"] !== undefined && rowsWanted === "never")
    throw new UsageError("--tmp-dir applies to --sporadik's rows in embedding order only");
  const bar = commandBar(values);
  const started = performance.now();
  const pool = createTilePool({ threads });
  const open = inputOpener(locations, read, hdf5Timeout);
  let phase = "";
  let parts: CompanionPartsReport | undefined;
  try {
    const result = await appendToDatasetAt(
      dataset,
      inputs.paths.map((path) => ({ path, open: () => open(path), identity: () => inputIdentity(path) })),
      {
        ...locations.targetOptions("deltacells append"),
        breakLock: values["break-lock"] === true,
        varKey: values["var-key"] as string | undefined,
        dropUnlisted: values["drop-unlisted-genes"] === true,
        // A list's unnamed lines are named from their paths, as the other inputs are.
        names: names ?? listed,
        obs: {
          exclude:
            typeof values["obs-exclude"] === "string"
              ? (values["obs-exclude"] as string).split(",").map((s) => s.trim())
              : undefined,
          obsm:
            obsm === undefined
              ? undefined
              : obsm.trim() === "none"
                ? []
                : obsm.split(",").map((s) => s.trim()),
          maxCategories: intOption(values, "max-categories", undefined, 0),
          obsmFill: values["obsm-fill"] === true,
        },
        read,
        encoder: pool,
        compress: zstdCompressor(DEFAULT_LEVEL),
        obsCompress: zstdCompressor(OBS_ZSTD_LEVEL),
        inFlight: threads + 2,
        onProgress: (p) => {
          if (p.phase !== phase) {
            phase = p.phase;
            bar.phase(p.phase);
          }
          bar.update(p.done, p.total, p.phase === "move" ? "objects" : "cells");
        },
        ...(values.sporadik
          ? {
              afterAppend: async (store) => {
                bar.finish();
                // The new tiles are written: their workers' memory goes back before the
                // companion, the statistics and the rows in embedding order add their own.
                await pool.close();
                // Sorted over the old cells, all three are no longer named once the cells are
                // added (the append's manifest); each is written again, then named.
                parts = await writeCompanionParts(
                  locations,
                  dataset,
                  store,
                  companionPartsFromFlags(values, {
                    threads,
                    bar,
                    rows: rowsWanted,
                    companion: "write",
                    writer: "deltacells append",
                  }),
                );
              },
            }
          : {}),
      },
    );
    const { store, removedTempFiles: removed } = result;
    const rows = parts?.rows;
    const m = result.manifest;
    // The append's notes that a part holds the old cells only, but not of a part written again.
    const rewritten = new Set(result.stale.filter((s) => parts?.[s.part] !== undefined).map((s) => s.note));
    const notes = result.notes.filter((n) => !rewritten.has(n));
    const seconds = (performance.now() - started) / 1000;
    const tiles = result.written.filter((k) => k.startsWith("tiles/")).length;
    const shards = result.written.filter((k) => k.startsWith("obs/obs_")).length;
    const json = {
      dataset: store.url,
      n_inputs: inputs.paths.length,
      cells_added: result.cells,
      n_cells: m.n_cells,
      n_genes: m.n_genes,
      n_tiles: m.tile_cells.length,
      written: result.written,
      dropped: result.dropped,
      notes,
      resumed: result.resumed ?? null,
      removed_temp_files: removed,
      ...(rows ? { sporadik_rows: { ...rows } } : {}),
      seconds,
    };
    const head = result.resumed
      ? `completed the interrupted append of ${count(result.resumed.length, "input")} to ${store.url}`
      : `appended ${count(inputs.paths.length, "input")} (${formatCount(result.cells)} cells) to ${store.url}`;
    const lines = [
      head,
      `  now ${formatCount(m.n_cells)} cells x ${formatCount(m.n_genes)} genes in ${count(m.tile_cells.length, "tile")}; wrote ${count(tiles, "tile")}, ${count(shards, "obs shard")}${result.written.includes("var.parquet") ? ", var.parquet" : ""} and the manifest in ${seconds.toFixed(1)} s`,
      ...result.dropped.map(
        (d) =>
          `  ${d.location}: ${count(d.count, "gene")} the dataset does not have, dropped (${d.keys.slice(0, 3).join(", ")}${d.count > 3 ? ", ..." : ""}), ${(100 * d.share).toFixed(2)}% of its counts`,
      ),
      ...notes.map((n) => `  note: ${cliWords(n)}`),
      ...(parts?.companion ? [`  sporadik companion: ${parts.companion.json.output} written again`] : []),
      ...(parts?.stats ? [`  ${statsText(parts.stats)}`] : []),
    ];
    const rowsText = rowsLine(rows, rowsWanted);
    if (rowsText !== "") lines.push(rowsText.slice(1));
    return { text: lines.join("\n") + leftoverLine(removed), json, store };
  } catch (err) {
    throw explainAtlasError(explainObsError(err));
  } finally {
    bar.finish();
    await pool.close();
  }
}
