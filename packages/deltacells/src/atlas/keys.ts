/**
 * What genes are matched on across inputs (the var index, or a var column such as `gene_ids`,
 * since atlases match on Ensembl IDs), and the names the source column gives each input.
 * Browser-safe and pure.
 */
import { parseLocation } from "@deltacells/storage";
import type { ColumnTable } from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";

/**
 * The gene keys of a gene table: its index, or the values of column `varKey` (a string or
 * categorical column; the index itself when `varKey` is the index's name). A missing column or a
 * missing value is refused, naming the input.
 */
export function geneKeys(table: ColumnTable, varKey: string | undefined, location: string): string[] {
  if (varKey === undefined || varKey === table.indexName) return table.index;
  const col = table.columns.find((c) => c.name === varKey);
  if (col === undefined) {
    const names = [table.indexName ?? "(the index)", ...table.columns.map((c) => c.name)];
    throw new DeltacellsError(
      `${location}: var has no column ${JSON.stringify(varKey)} to match genes on; its columns are ${names.map((n) => JSON.stringify(n)).join(", ")}. Name one of them with the var key option, or leave it out to match on the var index`,
      { tag: "InvalidInput", object: location, field: "var_key", expected: varKey, found: names },
    );
  }
  let keys: (string | null)[];
  if (col.kind === "string") keys = col.values;
  else if (col.kind === "category") keys = Array.from(col.codes, (c) => (c < 0 ? null : col.categories[c]!));
  else {
    throw new DeltacellsError(
      `${location}: var column ${JSON.stringify(varKey)} is ${col.kind}, not text: genes are matched on names or IDs`,
      {
        tag: "InvalidInput",
        object: location,
        field: "var_key",
        expected: "a string column",
        found: col.kind,
      },
    );
  }
  const missing = keys.indexOf(null);
  if (missing >= 0) {
    throw new DeltacellsError(
      `${location}: gene ${missing} (${JSON.stringify(table.index[missing])}) has no value in var column ${JSON.stringify(varKey)}, so it cannot be matched with the other inputs' genes`,
      { tag: "InvalidInput", object: location, field: "var_key", found: table.index[missing] },
    );
  }
  return keys as string[];
}

/** The first key that appears twice in `keys`, or undefined. */
export function repeatedKey(keys: string[]): string | undefined {
  const seen = new Set<string>();
  for (const k of keys) {
    if (seen.has(k)) return k;
    seen.add(k);
  }
  return undefined;
}

const INPUT_SUFFIX = /(\.mtx\.gz|\.h5ad|\.zarr|\.h5|\.mtx|\.loom)$/i;

function pathParts(location: string): string[] {
  const parsed = parseLocation(location);
  // A URL's path only: neither its scheme nor its host names the input.
  const path = parsed.kind === "url" ? parsed.url.replace(/^[^:]*:(\/\/[^/]*)?/, "") : parsed.path;
  const bare = path.replace(/[?#].*$/, "");
  return bare.split(/[/\\]+/).filter((p) => p.length > 0 && p !== ".");
}

/**
 * The source column's value for each input, from its path: the file or folder name without its
 * extension (`pbmc.h5ad` -> `pbmc`); names that would repeat take their parent folders too
 * (`s1/filtered_feature_bc_matrix`) until they differ. The same path twice keeps one name, which
 * the caller refuses.
 */
export function sourceNames(locations: string[]): string[] {
  const parts = locations.map(pathParts);
  const nameAt = (i: number, depth: number) => {
    const p = parts[i]!;
    if (p.length === 0) return locations[i]!;
    const tail = p.slice(Math.max(0, p.length - depth));
    tail[tail.length - 1] = tail[tail.length - 1]!.replace(INPUT_SUFFIX, "") || tail[tail.length - 1]!;
    return tail.join("/");
  };
  const depth = locations.map(() => 1);
  for (;;) {
    const names = locations.map((_, i) => nameAt(i, depth[i]!));
    const count = new Map<string, number[]>();
    names.forEach((n, i) => {
      count.set(n, [...(count.get(n) ?? []), i]);
    });
    let grew = false;
    for (const same of count.values()) {
      if (same.length < 2) continue;
      for (const i of same) {
        if (depth[i]! < parts[i]!.length) {
          depth[i]!++;
          grew = true;
        }
      }
    }
    if (!grew) return names;
  }
}
