/** Matrix Market output (cells x genes, integer, 1-based), streamed; `.gz` names are gzipped. */

import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import { createGzip } from "node:zlib";
import type { ExportPlan } from "./rows.js";

/** Writes `text`, waiting for room in `out` unless `failed` (the file's failure) settles first. */
async function write(out: Writable, text: string, failed: Promise<unknown>): Promise<void> {
  if (!out.write(text)) await Promise.race([once(out, "drain"), failed]);
}

/** Write `plan` to `path`, gzipped when `gzip` (the caller knows the final name; `path` may be a temporary one). */
export async function writeMatrixMarket(
  path: string,
  plan: ExportPlan,
  comment: string,
  gzip: boolean,
): Promise<void> {
  const file = createWriteStream(path);
  const zip = gzip ? createGzip({ level: 6 }) : undefined;
  if (zip) zip.pipe(file);
  const out: Writable = zip ?? file;
  // Rejects with the file's error (its open or a write failed). That can happen while the rows
  // are still being read, long before this is awaited: handled from the start, or the failure is
  // an unhandled rejection that ends the process instead of an error reported by the command.
  const closed = once(file, "close");
  closed.catch(() => undefined);
  try {
    await write(
      out,
      `%%MatrixMarket matrix coordinate integer general\n%${comment}\n${plan.nCells} ${plan.nGenes} ${plan.nnz}\n`,
      closed,
    );
    for await (const part of plan.parts()) {
      let buf = "";
      for (let r = 0; r < part.nCells; r++) {
        const row = part.rowOffset + r + 1;
        for (let k = part.indptr[r]!; k < part.indptr[r + 1]!; k++) {
          buf += `${row} ${part.indices[k]! + 1} ${part.data[k]!}\n`;
          if (buf.length > 1 << 20) {
            await write(out, buf, closed);
            buf = "";
          }
        }
      }
      if (buf) await write(out, buf, closed);
    }
    out.end();
    await closed;
  } catch (err) {
    // Close the file before the caller removes it; the error that stopped us is the one to report.
    zip?.destroy();
    file.destroy();
    await closed.catch(() => undefined);
    throw err;
  }
}
