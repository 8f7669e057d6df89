/** `deltacells validate DATASET`: the deep check; exit code 0 only when everything is valid. */
import { availableParallelism } from "node:os";
import { createTilePool, embeddingRowsOf, validateDataset } from "@deltacells/core";
import { EMBEDDING_ROWS_SAMPLE, validateEmbeddingRows } from "@deltacells/core/node";
import { describe } from "@deltacells/sporadik";
import { joinLocation } from "@deltacells/storage";
import { COMMON_HELP, count, intOption, parse } from "../args.js";
import type { CommandResult } from "../command.js";
import { validateCompanion } from "../convert/companion.js";
import { formatBytes, formatCount } from "../format.js";
import { validateSporadik } from "../inspect/sporadik.js";
import { openCountedAny } from "../io.js";
import { commandBar } from "../progress.js";
import { findLeftovers, type Leftover } from "./leftovers.js";

export const VALIDATE_HELP = `usage: deltacells validate DATASET [options]

Check everything: the manifest's counts, every tile fetched (size against tile_bytes) and decoded
with all of the codec's checks (magic, CRC, offsets, frame sizes, gene indices, exceptions), the
tile contents against the manifest, and the gene files. Exit code 0 only when all is valid, 1
otherwise (each problem is listed).

A sporadik store is described (every check of the format's reader), then each layout is read
whole, one at a time: indptr runs from 0 to the number of values and never decreases, every
index lies inside the array, stored maxima match the values, and the layouts hold as many values
with the same sum.

Every store a dataset's manifest names is checked with it. The sporadik companion: as a store
(above), its shape the dataset's. The statistics (stats/): each object's size and CRC-32 against
stats.json, which must describe this version of the dataset, and the numbers against the tiles
(each tile's cells' totals) and against each other. The rows in embedding order
(sporadik-rows/): as a store (above), the companion's matrix; order.npy a permutation of the
cells with the digest the manifest records, which the order computed again from the embedding
in obs has too; and each row the companion's row of the cell order.npy puts there (every row up
to ${formatCount(EMBEDDING_ROWS_SAMPLE)} cells, else ${formatCount(EMBEDDING_ROWS_SAMPLE)} rows spread over the dataset).

What killed writers leave (temporary *.dctmp-* files, .deltacells-staging-* folders, a
.deltacells-lock) is listed as warnings: readers never look at it, so it does not make the data
invalid.

options:
  --threads N    decoding threads (default: the number of cores)
  --quiet        no progress bar
${COMMON_HELP}`;

/** The options of `deltacells validate` besides the shared ones (args.ts). */
export const VALIDATE_OPTIONS = { threads: { type: "string" }, quiet: { type: "boolean" } } as const;

export async function validate(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, VALIDATE_OPTIONS, ["DATASET"]);
  if (values.help) return { text: VALIDATE_HELP };
  const threads = intOption(values, "threads", availableParallelism(), 1, 256)!;
  const pool = createTilePool({ threads });
  const bar = commandBar(values);
  try {
    const opened = await openCountedAny(locations, positionals[0]!, pool);
    const leftovers = await findLeftovers(positionals[0]!, opened.store);
    if (opened.kind === "sporadik") {
      return withWarnings(await validateSporadik(opened.store, opened.info), leftovers);
    }
    const { store, ds } = opened;
    bar.phase("tiles");
    const report = await validateDataset(ds, {
      concurrency: threads + 1,
      onTile: (done, total) => bar.update(done, total, "tiles"),
    });
    bar.finish();
    // The sporadik companion named in the manifest (convert --sporadik) is part of the dataset.
    const companion = await validateCompanion(locations, ds, positionals[0]!);
    // The rows in embedding order named beside it: against the manifest's record and the
    // companion (core), and as a sporadik store of their own, every chunk read.
    const rows = await validateEmbeddingRows(ds, positionals[0]!, {
      openStore: (location) => locations.openCounted(location),
    });
    if (rows.checked && rows.problems.length === 0) {
      const store = locations.openCounted(joinLocation(positionals[0]!, embeddingRowsOf(ds)!.path));
      const own = await validateSporadik(store, await describe(store));
      rows.problems.push(...(own.json as { problems: typeof rows.problems }).problems);
    }
    for (const part of [companion, rows]) report.problems.push(...part.problems);
    report.valid = report.problems.length === 0;
    const checked = [
      ...(companion.checked ? ["sporadik companion"] : []),
      ...(ds.manifest.metadata.stats !== undefined ? ["statistics"] : []),
      ...(rows.checked ? ["rows in embedding order"] : []),
    ];
    const text = report.valid
      ? `${ds.url}: valid (${count(report.tilesChecked, "tile")}, ${formatCount(ds.nCells)} cells, ${formatCount(report.nnz)} nonzeros, ${formatBytes(report.bytes)} of tiles${checked.map((c) => `; ${c} valid`).join("")})`
      : [
          `${ds.url}: INVALID, ${count(report.problems.length, "problem")}:`,
          ...report.problems.map((p) => `  ${p.object}: [${p.tag}] ${p.message}`),
        ].join("\n");
    return withWarnings(
      {
        text,
        json: {
          url: ds.url,
          valid: report.valid,
          tiles_checked: report.tilesChecked,
          nnz: report.nnz,
          bytes: report.bytes,
          problems: report.problems,
          ...(rows.checked ? { rows_compared: rows.compared } : {}),
        },
        store,
        exitCode: report.valid ? 0 : 1,
      },
      leftovers,
    );
  } finally {
    bar.finish();
    await pool.close();
  }
}

/** The result with the leftovers of killed writers as warnings (they never make the data invalid). */
function withWarnings(result: CommandResult, leftovers: Leftover[]): CommandResult {
  const warnings = leftovers.map((l) => `  warning: ${l.object}: ${l.message}`);
  return {
    ...result,
    text: [result.text, ...warnings].join("\n"),
    json: { ...(result.json as object), warnings: leftovers },
  };
}
