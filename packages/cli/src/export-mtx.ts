/** Matrix Market output (cells x genes, integer, 1-based), streamed; `.gz` names are gzipped. */

import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import { createGzip } from "node:zlib";
import type { ExportPlan } from "./export-rows.js";

async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

export async function writeMatrixMarket(path: string, plan: ExportPlan, comment: string): Promise<void> {
  const file = createWriteStream(path);
  const gzip = path.endsWith(".gz") ? createGzip({ level: 6 }) : undefined;
  if (gzip) gzip.pipe(file);
  const out: Writable = gzip ?? file;
  const closed = once(file, "close");
  await write(
    out,
    `%%MatrixMarket matrix coordinate integer general\n%${comment}\n${plan.nCells} ${plan.nGenes} ${plan.nnz}\n`,
  );
  for await (const part of plan.parts()) {
    let buf = "";
    for (let r = 0; r < part.nCells; r++) {
      const row = part.rowOffset + r + 1;
      for (let k = part.indptr[r]!; k < part.indptr[r + 1]!; k++) {
        buf += `${row} ${part.indices[k]! + 1} ${part.data[k]!}\n`;
        if (buf.length > 1 << 20) {
          await write(out, buf);
          buf = "";
        }
      }
    }
    if (buf) await write(out, buf);
  }
  out.end();
  await closed;
}
