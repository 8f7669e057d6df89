/**
 * What a conversion did not keep of its input, said plainly: the obsm entries that did not become
 * obs columns, the matrices other than the one converted, and the AnnData groups a dataset has no
 * place for (uns, obsp, varm, varp). Each with why, and what would keep it when something can.
 * Browser-safe and pure.
 */

import type { InputInventory } from "@deltacells/storage";
import { AUTO_EMBEDDING_MAX_COLUMNS } from "../obs/plan.js";
import type { DatasetManifest } from "./manifest.js";

/** What keeps a part, in this library's terms; a command line names its own flags. */
export type KeepWith =
  /** The obsm option listing these keys (those stored, and this one). */
  | { kind: "obsm"; keys: string[] }
  /** Converting this matrix instead ("X", "layers/NAME", "raw/X"): a dataset holds one. */
  | { kind: "matrix"; path: string };

/** One part of the input the dataset does not hold. */
export interface LeftOutPart {
  /** Where it is in the input: "obsm/X_pca", "layers/counts", "raw/X", "uns". */
  part: string;
  /** Why it was not stored. */
  reason: string;
  /** What would keep it, when anything can. */
  keep?: KeepWith;
}

/** `n` things, the first few named. */
function some(keys: string[]): string {
  const shown = keys.slice(0, 3).join(", ");
  return keys.length > 3 ? `${shown}, ... (${keys.length})` : shown;
}

/**
 * The parts of the input described by `inventory` that the dataset of `manifest` (converted from
 * its matrix at `matrixPath`) does not hold, in the order: obsm entries, matrices, groups.
 */
export function leftOut(
  inventory: InputInventory,
  manifest: DatasetManifest,
  matrixPath: string,
): LeftOutPart[] {
  const out: LeftOutPart[] = [];
  const stored = Object.keys((manifest.metadata.obs_embeddings as Record<string, number> | undefined) ?? {});
  for (const { key, kind, shape } of inventory.obsm) {
    if (stored.includes(key)) continue;
    const part = `obsm/${key}`;
    if (kind !== "dense" || shape.length !== 2) {
      const what = kind === "other" ? "an entry of an encoding obs cannot hold" : `a ${kind} entry`;
      out.push({
        part,
        reason: `${what} of shape [${shape.join(", ")}]; only 2-D dense embeddings become obs columns`,
      });
    } else if (!manifest.has_obs) {
      out.push({ part, reason: "no cell table (obs) was stored, and embeddings are obs columns" });
    } else {
      const k = shape[1]!;
      const reason =
        k > AUTO_EMBEDDING_MAX_COLUMNS
          ? `${k} columns; embeddings of more than ${AUTO_EMBEDDING_MAX_COLUMNS} are stored only when named`
          : "not among the embeddings named";
      out.push({ part, reason, keep: { kind: "obsm", keys: [...stored, key] } });
    }
  }
  for (const path of inventory.matrices) {
    out.push({
      part: path,
      reason: `another matrix: a dataset holds one, converted from ${matrixPath}`,
      keep: { kind: "matrix", path },
    });
  }
  for (const { name, keys } of inventory.groups)
    out.push({ part: name, reason: `${some(keys)}: a dataset has no place for ${name}` });
  return out;
}
