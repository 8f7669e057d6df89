/**
 * `convert --sporadik --sporadik-rows`: the companion's rows in embedding order, written by
 * `writeEmbeddingRows` of @deltacells/core/node (an external bucket sort in bounded memory, see
 * docs/viewer.md). This file is the command's part: its stores (counted), the temporary folder's
 * lines on stderr, Ctrl-C, and the report.
 */
import { writeEmbeddingRows } from "@deltacells/core/node";
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
 * Writes the rows of the dataset at `output` in embedding order at `output/sporadik-rows/` and
 * names them in the manifest; the temporary files go under `tmpDir` (default beside a local
 * output), announced by `say`, and are removed on Ctrl-C too.
 */
export async function writeRowsInEmbeddingOrder(
  locations: Locations,
  output: string,
  o: { checksums: boolean; threads: number; tmpDir: string | undefined; say: (line: string) => void },
): Promise<EmbeddingRowsReport> {
  const started = performance.now();
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
