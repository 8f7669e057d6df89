/**
 * The companion's rows in embedding order (`sporadik-rows/`), written by `writeEmbeddingRows` of
 * @deltacells/core/node (an external bucket sort in bounded memory, see docs/viewer.md) after the
 * companion, by every command that writes one: `convert --sporadik` (one input or an atlas) and
 * `append --sporadik`. By default they are written when obs has an embedding; `--sporadik-rows`
 * insists (a dataset without one is refused), `--no-sporadik-rows` leaves them out. This file is
 * the commands' part: the choice, its stores (counted), the temporary folder's lines on stderr,
 * Ctrl-C, and the report.
 */
import { embeddingRowsColumns } from "@deltacells/core";
import { openDataset, writeEmbeddingRows } from "@deltacells/core/node";
import { UsageError } from "../args.js";
import { formatBytes } from "../format.js";
import type { Locations } from "../locations.js";

/** What the command reports. */
export interface EmbeddingRowsReport {
  output: string;
  embedding: [string, string];
  bytes: number;
  seconds: number;
}

/**
 * Whether a command writes the rows in embedding order: `always` (`--sporadik-rows`), `auto` (the
 * default with `--sporadik`: when obs has an embedding) or `never` (`--no-sporadik-rows`, or no
 * companion).
 */
export type RowsChoice = "always" | "auto" | "never";

/** The options that choose the rows in embedding order, as every command that writes a companion parses them. */
export const ROWS_PARSE_OPTIONS = {
  "sporadik-rows": { type: "boolean" },
  "no-sporadik-rows": { type: "boolean" },
  "tmp-dir": { type: "string" },
} as const;

/** The choice of a command's flags; `--tmp-dir` is checked by each command (it has other uses in convert). */
export function rowsChoice(values: Record<string, unknown>): RowsChoice {
  const yes = values["sporadik-rows"] === true;
  const no = values["no-sporadik-rows"] === true;
  if (yes && no)
    throw new UsageError("--sporadik-rows and --no-sporadik-rows contradict each other: give one");
  for (const [flag, given] of [
    ["--sporadik-rows", yes],
    ["--no-sporadik-rows", no],
  ] as const) {
    if (given && values.sporadik !== true)
      throw new UsageError(`${flag} applies with --sporadik only (its rows come from the companion)`);
  }
  return values.sporadik !== true || no ? "never" : yes ? "always" : "auto";
}

/** Why the rows in embedding order were not written by default: obs has no embedding. */
const NO_EMBEDDING_LINE =
  "\n  no rows in embedding order: obs has no embedding (a KEY_0/KEY_1 pair such as X_umap_0/X_umap_1; --obsm X_umap stores it)";

/**
 * Writes the rows of the dataset at `output` in embedding order at `output/sporadik-rows/` and
 * names them in the manifest (after unnaming ones it named, see `writeEmbeddingRows`); with
 * `auto`, only when obs has an embedding (else undefined). The temporary files go under `tmpDir`
 * (default beside a local output), announced by `say`, and are removed on Ctrl-C too.
 */
export async function writeRowsInEmbeddingOrder(
  locations: Locations,
  output: string,
  o: {
    choice: Exclude<RowsChoice, "never">;
    checksums: boolean;
    threads: number;
    tmpDir: string | undefined;
    say: (line: string) => void;
  },
): Promise<EmbeddingRowsReport | undefined> {
  const started = performance.now();
  if (
    o.choice === "auto" &&
    (await embeddingRowsColumns(await openDataset(locations.openCounted(output)))) === undefined
  )
    return undefined;
  const { store, rows } = await writeEmbeddingRows(output, {
    openStore: (location) => locations.openCounted(location),
    checksums: o.checksums,
    threads: o.threads,
    ...(o.tmpDir !== undefined ? { tmpDir: o.tmpDir } : {}),
    removeOnSignal: true,
    onStaleSpill: (s) =>
      o.say(
        s.removed
          ? `removed ${s.path} (${formatBytes(s.bytes)}), left by an earlier conversion that was killed`
          : `kept ${s.path} (${formatBytes(s.bytes)}): another conversion (pid ${s.owner?.pid ?? "?"}) may still use it; remove it if not`,
      ),
    onTemporarySpace: (t) =>
      o.say(
        `rows in embedding order: temporary space of about ${formatBytes(t.bytes)} in ${t.folder}${t.available !== undefined ? ` (${formatBytes(t.available)} free)` : ""}, removed when done`,
      ),
  });
  return {
    output: store.url,
    embedding: rows.embedding,
    bytes: store.stats.bytesWritten,
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * The report's line in a command's text (starting with a newline), or why there are no rows when
 * they were left out by default; empty when none were asked for.
 */
export function rowsLine(rows: EmbeddingRowsReport | undefined, choice: RowsChoice): string {
  if (rows === undefined) return choice === "auto" ? NO_EMBEDDING_LINE : "";
  return `\n  rows in embedding order (${rows.embedding.join("/")}): ${formatBytes(rows.bytes)} at ${rows.output} in ${rows.seconds.toFixed(1)} s`;
}
